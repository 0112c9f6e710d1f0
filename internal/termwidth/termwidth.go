// Package termwidth counts the columns text takes in a terminal: CJK and
// other East Asian wide characters take two, combining marks none, and
// ANSI colour sequences nothing. The text reports wrap and align by it.
package termwidth

import (
	"unicode"
	"unicode/utf8"
)

// Rune is the columns r takes.
func Rune(r rune) int {
	switch {
	case r == 0 || unicode.Is(unicode.Mn, r):
		return 0
	case r < 0x1100:
		return 1
	case r <= 0x115F, // Hangul Jamo
		r == 0x2329 || r == 0x232A,                // angle brackets
		r >= 0x2E80 && r <= 0xA4CF && r != 0x303F, // CJK radicals … Yi
		r >= 0xAC00 && r <= 0xD7A3,                // Hangul syllables
		r >= 0xF900 && r <= 0xFAFF,                // CJK compatibility ideographs
		r >= 0xFE30 && r <= 0xFE4F,                // CJK compatibility forms
		r >= 0xFF00 && r <= 0xFF60,                // full-width forms
		r >= 0xFFE0 && r <= 0xFFE6,
		r >= 0x20000 && r <= 0x3FFFD:
		return 2
	}
	return 1
}

// String is the columns s takes, ANSI escape sequences not counted.
func String(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b { // skip an escape sequence up to its final letter
			j := i + 1
			for j < len(s) && !(s[j] >= '@' && s[j] <= '~' && s[j] != '[') {
				j++
			}
			i = j + 1
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n += Rune(r)
		i += size
	}
	return n
}
