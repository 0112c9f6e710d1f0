package termwidth

import "testing"

func TestString(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"line 21", 7},
		{"第 21 行", 8},                // two wide characters, four narrow
		{"ｘ\u2329a\u232a", 7},        // a full-width form and U+2329/U+232A: two columns each
		{"\x1b[1;31mROOT\x1b[0m", 4}, // colour codes take no room
		{"e\u0301", 1},               // a combining accent takes none
		{"…", 1},
		{"\U00020000", 2},
	} {
		if got := String(c.s); got != c.want {
			t.Errorf("String(%q) = %d, want %d", c.s, got, c.want)
		}
	}
	if Rune('\u2329') != 2 || Rune('a') != 1 || Rune('\u0301') != 0 {
		t.Error("Rune")
	}
}
