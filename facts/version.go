package facts

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// V is a parsed version: numeric release parts, an optional pre-release
// (a0, b1, rc2, dev20240101: before the release it precedes) and a local
// label after '+' (cu121, cuda12.4, git1234) that comparisons ignore.
type V struct {
	Parts []int
	// PreKind is "dev", "a", "b" or "rc"; empty for a release.
	PreKind string
	PreNum  int
	Local   string
	Raw     string
}

var versionPartsRE = regexp.MustCompile(`^v?([0-9]+(?:\.[0-9]+)*)(?:[.-]?(dev|a|alpha|b|beta|rc|c|pre|preview)\.?([0-9]*))?(?:\+(.*))?$`)

// ParseVersion reads real version strings: 2.1.0+cu121, 12.4.131,
// 535.104.05, 2.21.5+cuda12.4, 2.5.0a0+git1234, 9.1.0.70, v0.4.35.
func ParseVersion(s string) (V, error) {
	t := strings.TrimSpace(s)
	m := versionPartsRE.FindStringSubmatch(t)
	if m == nil {
		return V{}, fmt.Errorf("not a version: %q", s)
	}
	v := V{Raw: t, Local: m[4]}
	for _, p := range strings.Split(m[1], ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			return V{}, fmt.Errorf("not a version: %q", s)
		}
		v.Parts = append(v.Parts, n)
	}
	if m[2] != "" {
		switch m[2] {
		case "alpha":
			v.PreKind = "a"
		case "beta":
			v.PreKind = "b"
		case "c", "pre", "preview":
			v.PreKind = "rc"
		default:
			v.PreKind = m[2]
		}
		v.PreNum, _ = strconv.Atoi(m[3])
	}
	return v, nil
}

var preRank = map[string]int{"dev": 0, "a": 1, "b": 2, "rc": 3, "": 4}

// Compare returns -1, 0 or +1 as a is older than, equal to or newer than
// b. Missing parts count as zero (2.1 == 2.1.0); a pre-release comes
// before its release; local labels are ignored (2.1.0+cu121 == 2.1.0).
func Compare(a, b V) int {
	n := max(len(a.Parts), len(b.Parts))
	for i := range n {
		x, y := 0, 0
		if i < len(a.Parts) {
			x = a.Parts[i]
		}
		if i < len(b.Parts) {
			y = b.Parts[i]
		}
		if x != y {
			return sign(x - y)
		}
	}
	if c := preRank[a.PreKind] - preRank[b.PreKind]; c != 0 {
		return sign(c)
	}
	return sign(a.PreNum - b.PreNum)
}

// CompareStrings parses and compares two version strings.
func CompareStrings(a, b string) (int, error) {
	va, err := ParseVersion(a)
	if err != nil {
		return 0, err
	}
	vb, err := ParseVersion(b)
	if err != nil {
		return 0, err
	}
	return Compare(va, vb), nil
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func (v V) String() string { return v.Raw }
