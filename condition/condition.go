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
// other strings compare as text, ignoring case. x in [a, b] holds when x
// equals one of the elements by the same rules, so env.torch in ['2.1.0']
// holds for 2.1.0+cu121. A version never compares with a number, not even
// for ==: a condition that tries is Unknown, and one that compares an env
// version with a number literal (env.torch == 2.1) does not compile. A
// condition that names a fact or an environment value that is not known
// evaluates to Unknown, never to false: gpudx must not rule advice out for
// lack of information.
//
// facts and env can only be read by name (facts.requested): the maps a
// condition sees hold only the values it names, so "x" in facts or
// len(env) would not mean what they say, and are refused.
package condition

import (
	"errors"
	"fmt"
	"math"
	"reflect"
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

// Limits on a condition's source, checked before it is parsed: expr's
// parser recurses once per nesting level, and a deep enough nest (a --kb
// entry with 600,000 parentheses) overflows the stack, a fatal error that
// recover cannot catch.
const (
	MaxLength = 1024 // bytes
	MaxDepth  = 32   // nested ( [ { brackets
)

// NumericEnv are the env names whose values are numbers, so a condition
// may compare them with a number literal; every other env value is a
// version or text.
var NumericEnv = []string{"gpu_memory", "gpus"}

// Compile parses and type-checks a condition. An empty source compiles to
// a program that always holds.
func Compile(src string) (*Program, error) {
	p := &Program{src: strings.TrimSpace(src)}
	if p.src == "" {
		return p, nil
	}
	if len(p.src) > MaxLength { // too long to quote in the error
		return nil, fmt.Errorf("condition is %d bytes, longer than %d", len(p.src), MaxLength)
	}
	if d := depth(p.src); d > MaxDepth {
		return nil, fmt.Errorf("condition %q nests brackets %d deep, deeper than %d", p.src, d, MaxDepth)
	}
	v := &visitor{based: map[*ast.IdentifierNode]bool{}}
	prog, err := expr.Compile(p.src,
		expr.Env(map[string]any{"facts": map[string]any{}, "env": map[string]any{}}),
		expr.Function(cmpFunc, compareOp),
		expr.Function(inFunc, inOp),
		expr.Patch(v),
		expr.AsBool(),
	)
	if err != nil {
		if fe := (*file.Error)(nil); errors.As(err, &fe) {
			return nil, fmt.Errorf("condition %q: %s at column %d", p.src, fe.Message, fe.Column+1)
		}
		return nil, fmt.Errorf("condition %q: %w", p.src, err)
	}
	if v.err == nil {
		for _, id := range v.idents {
			if !v.based[id] {
				v.err = fmt.Errorf("read %s by name, as in %s.name: the condition sees only the values it names", id.Value, id.Value)
				break
			}
		}
	}
	if v.err != nil {
		return nil, fmt.Errorf("condition %q: %w", p.src, v.err)
	}
	p.prog, p.refs = prog, v.refs
	return p, nil
}

// depth returns how deep ( [ { brackets nest in src, outside string
// literals.
func depth(src string) int {
	d, most := 0, 0
	var quote byte
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case quote != 0:
			if c == '\\' && quote != '`' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '(' || c == '[' || c == '{':
			d++
			most = max(most, d)
		case c == ')' || c == ']' || c == '}':
			d--
		}
	}
	return most
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

const (
	cmpFunc = "__cmp"
	inFunc  = "__in"
)

// visitor collects facts.X and env.X references, routes every comparison
// through compareOp and every in through inOp, which know versions, and
// refuses an env version compared with a number literal.
type visitor struct {
	refs   []Ref
	err    error
	idents []*ast.IdentifierNode        // every facts and env
	based  map[*ast.IdentifierNode]bool // those read by name
}

func (v *visitor) fail(err error) {
	if v.err == nil {
		v.err = err
	}
}

var cmpOps = map[string]bool{"<": true, "<=": true, ">": true, ">=": true, "==": true, "!=": true}

func (v *visitor) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.IdentifierNode:
		if x.Value == "facts" || x.Value == "env" {
			v.idents = append(v.idents, x)
		}
	case *ast.MemberNode:
		id, ok := x.Node.(*ast.IdentifierNode)
		if !ok || (id.Value != "facts" && id.Value != "env") {
			return
		}
		prop, ok := x.Property.(*ast.StringNode)
		if !ok {
			v.fail(errors.New(id.Value + " must be indexed by a name, as in " + id.Value + ".name"))
			return
		}
		v.based[id] = true
		r := Ref{id.Value, prop.Value}
		if !slices.Contains(v.refs, r) {
			v.refs = append(v.refs, r)
		}
	case *ast.BinaryNode:
		switch {
		case cmpOps[x.Operator]:
			v.checkEnvNumber(x.Left, x.Right)
			v.checkEnvNumber(x.Right, x.Left)
			ast.Patch(n, &ast.CallNode{
				Callee:    &ast.IdentifierNode{Value: cmpFunc},
				Arguments: []ast.Node{&ast.StringNode{Value: x.Operator}, x.Left, x.Right},
			})
		case x.Operator == "in":
			v.checkEnvNumber(x.Left, x.Right)
			ast.Patch(n, &ast.CallNode{
				Callee:    &ast.IdentifierNode{Value: inFunc},
				Arguments: []ast.Node{x.Left, x.Right},
			})
		}
	}
}

// checkEnvNumber refuses env.NAME compared with a number literal, or with
// a list holding one, unless NAME is in NumericEnv: env.torch == 2.1 would
// mean 2.1 the number, never the version 2.10.
func (v *visitor) checkEnvNumber(side, other ast.Node) {
	if c, ok := side.(*ast.ChainNode); ok {
		side = c.Node
	}
	m, ok := side.(*ast.MemberNode)
	if !ok {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	prop, pok := m.Property.(*ast.StringNode)
	if !ok || !pok || id.Value != "env" || slices.Contains(NumericEnv, prop.Value) || !holdsNumber(other) {
		return
	}
	v.fail(fmt.Errorf("env.%s is a version or text, not a number: quote the version, as in '2.10', not %s", prop.Value, other))
}

// holdsNumber reports whether n is a number literal, a range of numbers,
// or a list literal holding a number literal.
func holdsNumber(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		return true
	case *ast.ConstantNode:
		_, ok := number(x.Value)
		return ok
	case *ast.UnaryNode:
		return (x.Operator == "-" || x.Operator == "+") && holdsNumber(x.Node)
	case *ast.BinaryNode:
		return x.Operator == ".."
	case *ast.ArrayNode:
		return slices.ContainsFunc(x.Nodes, holdsNumber)
	}
	return false
}

// compareOp(op, a, b) compares by the values' kinds: numbers, versions
// (a facts.V against a facts.V or a version string), then strings.
func compareOp(args ...any) (any, error) {
	op, _ := args[0].(string)
	a, b := args[1], args[2]
	c, err := compare(a, b)
	if err != nil {
		// Unlike kinds are simply unequal, except a version and a number:
		// env.torch == 2.1 is a mistake, not a fact about the environment.
		if (op == "==" || op == "!=") && !errors.As(err, new(versionNumberError)) {
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

// inOp(x, list) holds when x equals an element of list, as compareOp's ==
// has it: a version equals a version string by version (2.1.0+cu121 is
// '2.1.0'), and a version against a number is an error, whichever element
// it is.
func inOp(args ...any) (any, error) {
	x, list := args[0], reflect.ValueOf(args[1])
	if list.Kind() != reflect.Slice && list.Kind() != reflect.Array {
		return nil, fmt.Errorf("in needs a list, as in x in ['a', 'b'], not %v", args[1])
	}
	found := false
	for i := range list.Len() {
		c, err := compare(x, list.Index(i).Interface())
		if errors.As(err, new(versionNumberError)) {
			return nil, err
		}
		found = found || (err == nil && c == 0)
	}
	return found, nil
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
		if _, isNum := number(x); isNum {
			return facts.V{}, versionNumberError{x}
		}
		return facts.V{}, fmt.Errorf("compare versions with a quoted version such as '2.10', not %v", x)
	}
	return facts.ParseVersion(s)
}

// versionNumberError is a version compared with a number: an error even
// for == and !=.
type versionNumberError struct{ n any }

func (e versionNumberError) Error() string {
	return fmt.Sprintf("compare versions with a quoted version such as '2.10', not %v", e.n)
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
