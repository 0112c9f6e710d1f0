package kbmigrate

import (
	"slices"
	"testing"
)

// Two layouts the knowledge files use: json.MarshalIndent's, and items
// written one per line by hand.
const indented = `{
  "id": "cuda/x",
  "regex": "x",
  "dead_ends": [
    {
      "action": "Retry",
      "why_fails": "sticky",
      "fail_rate": 0.9,
      "condition": "",
      "sources": []
    }
  ],
  "workarounds": [
    {
      "action": "Run compute-sanitizer",
      "success_rate": 0.7,
      "how": "compute-sanitizer python t.py",
      "condition": "",
      "sources": []
    },
    {
      "action": "Fix the index",
      "success_rate": 0.6,
      "how": "clamp",
      "condition": "",
      "sources": []
    }
  ],
  "fix_success_rate": 0.6,
  "resolvable": "true"
}`

const indentedWant = `{
  "id": "cuda/x",
  "regex": "x",
  "dead_ends": [
    {
      "action": "Retry",
      "why_fails": "sticky",
      "fail_rate": 0.9,
      "rate_basis": "estimate",
      "condition": "",
      "sources": []
    }
  ],
  "workarounds": [
    {
      "action": "Run compute-sanitizer",
      "kind": "check",
      "how": "compute-sanitizer python t.py",
      "condition": "",
      "sources": []
    },
    {
      "action": "Fix the index",
      "success_rate": 0.6,
      "rate_basis": "estimate",
      "how": "clamp",
      "condition": "",
      "sources": []
    }
  ],
  "fix_success_rate": 0.6,
  "fix_success_rate_basis": "estimate",
  "resolvable": "true"
}`

const compact = `{"id": "nccl/y", "regex": "y",
  "dead_ends": [
    {"action": "A", "why_fails": "B", "fail_rate": 0.8, "condition": "", "sources": ["https://a"]}
  ],
  "workarounds": [{"action": "Read the WARN \"line\"", "success_rate": 0.5, "rate_basis": "estimate", "how": "h", "sources": []},
    {"action": "C", "kind": "check", "how": "h"}],
  "fix_success_rate": 0.5, "fix_success_rate_basis": "reproduced"}
`

const compactWant = `{"id": "nccl/y", "regex": "y",
  "dead_ends": [
    {"action": "A", "why_fails": "B", "fail_rate": 0.8, "rate_basis": "estimate", "condition": "", "sources": ["https://a"]}
  ],
  "workarounds": [{"action": "Read the WARN \"line\"", "kind": "check", "how": "h", "sources": []},
    {"action": "C", "kind": "check", "how": "h"}],
  "fix_success_rate": 0.5, "fix_success_rate_basis": "reproduced"}
`

func TestMigrate(t *testing.T) {
	checks := Checks{"cuda/x": {"Run compute-sanitizer"}, "nccl/y": {`Read the WARN "line"`, "C"}}
	for _, tt := range []struct {
		name, in, want string
		bases          int
		marked         []int
		checkActions   []string
	}{
		{"indented", indented, indentedWant, 3, []int{0}, []string{"Run compute-sanitizer"}},
		{"compact", compact, compactWant, 1, []int{0}, []string{`Read the WARN "line"`, "C"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, res, err := Migrate([]byte(tt.in), checks)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			if res.Bases != tt.bases || !slices.Equal(res.Checks, tt.marked) || !slices.Equal(res.CheckActions, tt.checkActions) {
				t.Errorf("result %+v", res)
			}
			// A second run changes nothing and still sees the checks.
			again, res2, err := Migrate(got, checks)
			if err != nil || string(again) != string(got) || res2.Changed() || !slices.Equal(res2.CheckActions, tt.checkActions) {
				t.Errorf("second run: changed %v (%+v), err %v", string(again) != string(got), res2, err)
			}
		})
	}
}

func TestMigrateLeavesOthersAlone(t *testing.T) {
	canon := `{"id": "cuda/z/linux", "error": {"signature": "s", "regex": "s"}, "verdict": {}, "workarounds": [{"action": "a", "success_rate": 0.5}]}`
	got, res, err := Migrate([]byte(canon), nil)
	if err != nil || string(got) != canon || res.Changed() {
		t.Errorf("canon changed: %s %+v %v", got, res, err)
	}
	for _, bad := range []string{``, `[1]`, `{"id": `} {
		if _, _, err := Migrate([]byte(bad), nil); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
