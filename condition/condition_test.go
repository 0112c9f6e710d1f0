package condition

import (
	"strings"
	"testing"

	"github.com/gpudx/gpudx/facts"
)

func ver(s string) facts.V {
	v, err := facts.ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

func TestEval(t *testing.T) {
	oomFacts := map[string]any{
		"requested":            facts.Parse("requested", "2.00 GiB"),
		"reserved_unallocated": facts.Parse("reserved_unallocated", "1.30 GiB"),
		"total_capacity":       facts.Parse("total_capacity", "79.15 GiB"),
		"code":                 facts.Parse("code", "803"),
		"capability":           facts.Fact{Type: facts.Version, Text: "3.5"},
		"argument":             "Weight",
	}
	env := map[string]any{
		"torch": ver("2.10.0+cu126"), "os": "linux", "driver": ver("535.104.05"),
		"gpu_memory": int64(85899345920), "gpus": 8,
	}
	cases := []struct {
		cond   string
		want   Status
		reason string
	}{
		{"", None, ""},
		{"facts.reserved_unallocated >= facts.requested", Fails, "facts.reserved_unallocated = 1.30 GiB, facts.requested = 2.00 GiB"},
		{"facts.reserved_unallocated < facts.requested", Holds, "facts.reserved_unallocated = 1.30 GiB, facts.requested = 2.00 GiB"},
		{"facts.requested > facts.total_capacity", Fails, "facts.requested = 2.00 GiB, facts.total_capacity = 79.15 GiB"},
		{"facts.requested > 1073741824", Holds, "facts.requested = 2.00 GiB"},
		// 2.10 is newer than 2.9: versions never compare as decimals.
		{"env.torch >= '2.9' && env.torch < '2.10'", Fails, "env.torch = 2.10.0+cu126"},
		{"env.torch >= '2.10'", Holds, "env.torch = 2.10.0+cu126"},
		{"env.driver < '545.23.06'", Holds, "env.driver = 535.104.05"},
		{"env.os == 'windows'", Fails, `env.os = "linux"`},
		{"env.os == 'Linux'", Holds, `env.os = "linux"`},
		{"facts.code in [802, 803, 804, 805]", Holds, "facts.code = 803"},
		{"facts.capability < '5.0'", Holds, "facts.capability = 3.5"},
		{"facts.free > 0", Unknown, "not known: facts.free"},
		{"env.cudnn >= '9' || env.torch >= '2'", Unknown, "not known: env.cudnn"},
		{"facts.code in [1, 2]", Fails, "facts.code = 803"},
		{"facts.code not in [802]", Holds, "facts.code = 803"},
		{"facts.code in 800..810", Holds, "facts.code = 803"},
		{"facts.code in 5", Unknown, "cannot evaluate: in needs a list, as in x in ['a', 'b'], not 5"},
		// Unlike kinds other than a version and a number are unequal.
		{"facts.code == 'x'", Fails, "facts.code = 803"},
		{"facts.code in ['x']", Fails, "facts.code = 803"},
		{"facts.argument in ['weight', 'bias']", Holds, `facts.argument = "Weight"`},
		{"facts.argument in ['input']", Fails, `facts.argument = "Weight"`},
		// in over versions compares as versions: 2.10.0+cu126 is '2.10'.
		{"env.torch in ['2.9', '2.10']", Holds, "env.torch = 2.10.0+cu126"},
		{"env.torch in ['2.1.0', '2.1.2']", Fails, "env.torch = 2.10.0+cu126"},
		{"env.torch not in ['2.10.0']", Fails, "env.torch = 2.10.0+cu126"},
		{"env.torch == '2.10'", Holds, "env.torch = 2.10.0+cu126"},
		{"env.torch != '2.10.0'", Fails, "env.torch = 2.10.0+cu126"},
		{"env.torch == 'nightly'", Fails, "env.torch = 2.10.0+cu126"},
		{"facts.capability in ['3.5', '5.0']", Holds, "facts.capability = 3.5"},
		{"env.cudnn in ['9.1']", Unknown, "not known: env.cudnn"},
		// The numeric env values compare with numbers.
		{"env.gpu_memory > 40e9", Holds, "env.gpu_memory = 85899345920"},
		{"env.gpus in [1, 2, 4]", Fails, "env.gpus = 8"},
		{"env.gpus >= 2", Holds, "env.gpus = 8"},
		// A version against a number is refused, not guessed, even for ==
		// and in (a number literal against env.NAME does not compile).
		{"facts.capability >= 5", Unknown, "cannot evaluate: compare versions with a quoted version such as '2.10', not 5"},
		{"facts.capability == 3.5", Unknown, "cannot evaluate: compare versions with a quoted version such as '2.10', not 3.5"},
		{"facts.capability != 3.5", Unknown, "cannot evaluate: compare versions with a quoted version such as '2.10', not 3.5"},
		{"facts.capability in ['3.5', 5]", Unknown, "cannot evaluate: compare versions with a quoted version such as '2.10', not 5"},
		{"env.torch == facts.code", Unknown, "cannot evaluate: compare versions with a quoted version such as '2.10', not 803"},
		{"env.torch in [facts.code]", Unknown, "cannot evaluate: compare versions with a quoted version such as '2.10', not 803"},
	}
	for _, c := range cases {
		p, err := Compile(c.cond)
		if err != nil {
			t.Errorf("%q: %v", c.cond, err)
			continue
		}
		r := p.Eval(oomFacts, env)
		if r.Status != c.want || r.Reason != c.reason {
			t.Errorf("%q = %s (%q), want %s (%q)", c.cond, r.Status, r.Reason, c.want, c.reason)
		}
		if r.Applies() != (c.want != Fails) {
			t.Errorf("%q: Applies() = %v", c.cond, r.Applies())
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, src := range []string{
		"module parameters shown on cpu", // prose
		"facts.requested >",              // syntax
		"gpu.name == 'x'",                // unknown variable
		"facts[1] > 2",                   // facts indexed by a number
	} {
		if _, err := Compile(src); err == nil {
			t.Errorf("%q compiled", src)
		}
	}
}

// An env value other than NumericEnv compared with a number literal, and
// facts or env read other than by name, are refused with these errors.
func TestCompileRefuses(t *testing.T) {
	const quote = ": env.torch is a version or text, not a number: quote the version, as in '2.10', not "
	for _, c := range []struct{ src, err string }{
		{"env.torch == 2.1", `condition "env.torch == 2.1"` + quote + "2.1"},
		{"env.torch >= 2.9", `condition "env.torch >= 2.9"` + quote + "2.9"},
		{"2.1 != env.torch", `condition "2.1 != env.torch"` + quote + "2.1"},
		{"env.torch < -2", `condition "env.torch < -2"` + quote + "-2"},
		{"env.torch in [2.1, 2.2]", `condition "env.torch in [2.1, 2.2]"` + quote + "[2.1, 2.2]"},
		{"env.torch in ['2.1', 2.2]", `condition "env.torch in ['2.1', 2.2]"` + quote + `["2.1", 2.2]`},
		{"env.torch not in [2]", `condition "env.torch not in [2]"` + quote + "[2]"},
		{"env.torch in 1..3", `condition "env.torch in 1..3"` + quote + "1..3"},
		{"env?.torch <= 2", `condition "env?.torch <= 2"` + quote + "2"},
		{"env.driver > 545", `condition "env.driver > 545": env.driver is a version or text, not a number: quote the version, as in '2.10', not 545`},
		{"len(facts) > 1", `condition "len(facts) > 1": read facts by name, as in facts.name: the condition sees only the values it names`},
		{"'requested' in facts", `condition "'requested' in facts": read facts by name, as in facts.name: the condition sees only the values it names`},
		{"env != nil", `condition "env != nil": read env by name, as in env.name: the condition sees only the values it names`},
	} {
		_, err := Compile(c.src)
		if err == nil || err.Error() != c.err {
			t.Errorf("%q: %v, want %s", c.src, err, c.err)
		}
	}
	for _, src := range []string{
		"env.gpus > 1",
		"env.gpu_memory in [1, 2]",
		"facts.code in [802, 803]",
		"env.torch in ['2.1.0', '2.1.2']",
		"env.torch >= '2.10' && facts.code == 2",
	} {
		if _, err := Compile(src); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
}

// Hostile conditions are refused before expr parses them: 600,000 nested
// parentheses would overflow the stack in its parser, a fatal error.
func TestCompileLimits(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("(", n) + "true" + strings.Repeat(")", n) }
	_, err := Compile(nest(600000))
	if err == nil || err.Error() != "condition is 1200004 bytes, longer than 1024" {
		t.Errorf("600,000 deep: %v", err)
	}
	if d := depth(nest(600000)); d != 600000 {
		t.Errorf("depth = %d", d)
	}
	long := "facts.x == '" + strings.Repeat("a", MaxLength) + "'"
	if _, err := Compile(long); err == nil || err.Error() != "condition is 1037 bytes, longer than 1024" {
		t.Errorf("long: %v", err)
	}
	if _, err := Compile("  " + strings.Repeat("x", MaxLength-6) + " > 1  "); err == nil || strings.Contains(err.Error(), "longer") {
		t.Errorf("1024 bytes, trimmed: %v", err) // an unknown variable, not too long
	}
	if _, err := Compile(nest(MaxDepth + 1)); err == nil ||
		err.Error() != `condition "`+nest(MaxDepth+1)+`" nests brackets 33 deep, deeper than 32` {
		t.Errorf("33 deep: %v", err)
	}
	if _, err := Compile("[" + strings.Repeat("{'a': ", 31) + "[(1)]" + strings.Repeat("}", 31) + "] != nil"); err == nil || !strings.Contains(err.Error(), "nests brackets 34 deep") {
		t.Errorf("mixed brackets: %v", err)
	}
	for _, src := range []string{
		nest(MaxDepth),
		"facts.x == '" + strings.Repeat("(", 100) + "'",       // brackets in a string do not count
		`facts.x == "\"(((((((((((((((((((((((((((((((((((("`, // an escaped quote does not end the string
	} {
		if _, err := Compile(src); err != nil {
			t.Errorf("%.40q: %v", src, err)
		}
	}
}

func TestRefs(t *testing.T) {
	p, err := Compile("facts.requested > facts.total_capacity && env.torch >= '2.1' || facts.requested > 0")
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, r := range p.Refs() {
		got += r.String() + " "
	}
	if got != "facts.requested facts.total_capacity env.torch " {
		t.Errorf("refs %q", got)
	}
}

// A compute capability is a version: 12.0 is newer than 5.0, though "12.0"
// sorts before "5.0" as text.
func TestCapabilityComparesAsVersion(t *testing.T) {
	p, err := Compile("facts.capability < '5.0'")
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]Status{"12.0": Fails, "3.5": Holds, "5.0": Fails} {
		if r := p.Eval(map[string]any{"capability": facts.Parse("capability", text)}, nil); r.Status != want {
			t.Errorf("capability %s: %s", text, r.Status)
		}
	}
}
