package condition

import (
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
	}
	env := map[string]any{"torch": ver("2.10.0+cu126"), "os": "linux", "driver": ver("535.104.05")}
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
		// A version against a number literal is refused, not guessed.
		{"env.torch >= 2.9", Unknown, "cannot evaluate: compare versions with a quoted version such as '2.10', not 2.9"},
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
