// Package condition evaluates the conditions written on knowledge-base
// dead ends and workarounds: expressions over the facts read from the error
// message and the environment the log came from, such as
//
//	facts.reserved_unallocated >= facts.requested
//	env.torch >= '2.9' && env.torch < '2.10'
//	env.os == 'windows'
//
// Expressions use the expr-lang/expr language. Two variables exist: facts
// and env, both maps. Comparisons are typed by their values at run time:
// numbers compare as numbers, a version compares with a version or with a
// version written as a string literal (so '2.10' is newer than '2.9'), and
// other strings compare as text. A condition that names a fact or an
// environment value that is not known evaluates to Unknown, never to false:
// gpudx must not rule advice out for lack of information.
package condition

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/gpudx/gpudx/facts"
)

// Status is the outcome of evaluating a condition.
type Status string

// Outcomes.
const (
	None    Status = ""        // no condition: the item always applies
	Holds   Status = "holds"   // the condition is true
	Fails   Status = "fails"   // the condition is false
	Unknown Status = "unknown" // a value it needs is not known
)

// Program is a compiled condition. It is safe for concurrent use.
type Program struct {
	src  string
	prog *vm.Program
	refs []Ref
}

// Ref is one value a condition reads: Var is "facts" or "env".
type Ref struct{ Var, Name string }

func (r Ref) String() string { return r.Var + "." + r.Name }

// Compile parses and type-checks a condition. An empty source compiles to
// a program that always holds.
func Compile(src string) (*Program, error) {
	p := &Program{src: strings.TrimSpace(src)}
	if p.src == "" {
		return p, nil
	}
	v := &visitor{}
	prog, err := expr.Compile(p.src,
		expr.Env(map[string]any{"facts": map[string]any{}, "env": map[string]any{}}),
		expr.Function(cmpFunc, compareOp),
		expr.Patch(v),
		expr.AsBool(),
	)
	if err != nil {
		if fe := (*file.Error)(nil); errors.As(err, &fe) {
			return nil, fmt.Errorf("condition %q: %s at column %d", p.src, fe.Message, fe.Column+1)
		}
		return nil, fmt.Errorf("condition %q: %w", p.src, err)
	}
	if v.err != nil {
		return nil, fmt.Errorf("condition %q: %w", p.src, v.err)
	}
	p.prog, p.refs = prog, v.refs
	return p, nil
}

// Source returns the condition as written.
func (p *Program) Source() string { return p.src }

// Refs returns the facts and environment values the condition reads, in
// the order they first appear.
func (p *Program) Refs() []Ref { return slices.Clone(p.refs) }

// Result is an evaluated condition with the reason, in words and figures.
type Result struct {
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// Applies reports whether the item should be advised: only a condition
// that is known to be false rules it out.
func (r Result) Applies() bool { return r.Status != Fails }

// Eval evaluates the condition. Values in fs and env are float64 or other
// Go numbers, strings, facts.V or facts.Fact (a fact counts as its number,
// its version or its text, by type). The reason lists the values read,
// e.g. "requested = 2.00 GiB, reserved_unallocated = 1.30 GiB".
func (p *Program) Eval(fs, env map[string]any) Result {
	if p.prog == nil {
		return Result{Status: None}
	}
	var missing, shown []string
	fv, ev := map[string]any{}, map[string]any{}
	for _, r := range p.refs {
		src, dst := fs, fv
		if r.Var == "env" {
			src, dst = env, ev
		}
		val, ok := src[r.Name]
		if !ok || val == nil {
			missing = append(missing, r.String())
			continue
		}
		text, v := normalize(val)
		dst[r.Name] = v
		shown = append(shown, r.String()+" = "+text)
	}
	if len(missing) > 0 {
		return Result{Status: Unknown, Reason: "not known: " + strings.Join(missing, ", ")}
	}
	out, err := expr.Run(p.prog, map[string]any{"facts": fv, "env": ev})
	if err != nil {
		msg := err.Error()
		if fe := (*file.Error)(nil); errors.As(err, &fe) {
			msg = fe.Message
		}
		return Result{Status: Unknown, Reason: "cannot evaluate: " + msg}
	}
	reason := strings.Join(shown, ", ")
	if b, _ := out.(bool); b {
		return Result{Status: Holds, Reason: reason}
	}
	return Result{Status: Fails, Reason: reason}
}

// normalize turns a value into what comparisons use, and into its text
// for reasons.
func normalize(v any) (string, any) {
	switch x := v.(type) {
	case facts.Fact:
		switch {
		case x.IsNumber():
			return x.String(), x.Num
		case x.Type == facts.Version:
			if pv, err := facts.ParseVersion(x.Text); err == nil {
				return x.Text, pv
			}
		}
		return x.Text, x.Text
	case facts.V:
		return x.String(), x
	case string:
		return strconv.Quote(x), x
	}
	if f, ok := number(v); ok {
		return strconv.FormatFloat(f, 'f', -1, 64), f
	}
	return fmt.Sprint(v), v
}

const cmpFunc = "__cmp"

// visitor collects facts.X and env.X references and routes every
// comparison through compareOp, which knows versions.
type visitor struct {
	refs []Ref
	err  error
}

var cmpOps = map[string]bool{"<": true, "<=": true, ">": true, ">=": true, "==": true, "!=": true}

func (v *visitor) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.MemberNode:
		id, ok := x.Node.(*ast.IdentifierNode)
		if !ok || (id.Value != "facts" && id.Value != "env") {
			return
		}
		prop, ok := x.Property.(*ast.StringNode)
		if !ok {
			v.err = errors.New(id.Value + " must be indexed by a name, as in " + id.Value + ".name")
			return
		}
		r := Ref{id.Value, prop.Value}
		if !slices.Contains(v.refs, r) {
			v.refs = append(v.refs, r)
		}
	case *ast.BinaryNode:
		if cmpOps[x.Operator] {
			ast.Patch(n, &ast.CallNode{
				Callee:    &ast.IdentifierNode{Value: cmpFunc},
				Arguments: []ast.Node{&ast.StringNode{Value: x.Operator}, x.Left, x.Right},
			})
		}
	}
}

// compareOp(op, a, b) compares by the values' kinds: numbers, versions
// (a facts.V against a facts.V or a version string), then strings.
func compareOp(args ...any) (any, error) {
	op, _ := args[0].(string)
	a, b := args[1], args[2]
	c, err := compare(a, b)
	if err != nil {
		if op == "==" || op == "!=" { // unlike kinds are simply unequal
			return op == "!=", nil
		}
		return nil, err
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	case ">=":
		return c >= 0, nil
	case "==":
		return c == 0, nil
	case "!=":
		return c != 0, nil
	}
	return nil, fmt.Errorf("unknown operator %q", op)
}

func compare(a, b any) (int, error) {
	if x, ok := number(a); ok {
		if y, ok := number(b); ok {
			switch {
			case x < y:
				return -1, nil
			case x > y:
				return 1, nil
			}
			return 0, nil
		}
	}
	va, aok := a.(facts.V)
	vb, bok := b.(facts.V)
	if aok || bok {
		var err error
		if !aok {
			if va, err = versionOf(a); err != nil {
				return 0, err
			}
		}
		if !bok {
			if vb, err = versionOf(b); err != nil {
				return 0, err
			}
		}
		return facts.Compare(va, vb), nil
	}
	sa, aok := a.(string)
	sb, bok := b.(string)
	if aok && bok {
		return strings.Compare(strings.ToLower(sa), strings.ToLower(sb)), nil
	}
	return 0, fmt.Errorf("cannot compare %T with %T", a, b)
}

// versionOf accepts only a string for the other side of a version
// comparison: a number literal such as 2.10 would silently mean 2.1.
func versionOf(x any) (facts.V, error) {
	s, ok := x.(string)
	if !ok {
		return facts.V{}, fmt.Errorf("compare versions with a quoted version such as '2.10', not %v", x)
	}
	return facts.ParseVersion(s)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x)
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	}
	return 0, false
}
