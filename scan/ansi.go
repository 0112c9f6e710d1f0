package scan

// stripANSI appends b without its terminal escape sequences to dst: CSI
// (ESC '[' ... final byte, colours and cursor moves), OSC (ESC ']' ... BEL
// or ESC '\'), and two-byte escapes.
func stripANSI(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		if b[i] != 0x1b {
			dst = append(dst, b[i])
			i++
			continue
		}
		i = skipEscape(b, i)
	}
	return dst
}

// skipEscape returns the index just past the escape sequence at b[i].
func skipEscape(b []byte, i int) int {
	if i+1 >= len(b) {
		return len(b)
	}
	switch b[i+1] {
	case '[':
		j := i + 2
		for j < len(b) && b[j] >= 0x20 && b[j] <= 0x3f {
			j++
		}
		if j < len(b) && b[j] >= 0x40 && b[j] <= 0x7e {
			return j + 1
		}
		return j
	case ']':
		for j := i + 2; j < len(b); j++ {
			if b[j] == 0x07 {
				return j + 1
			}
			if b[j] == 0x1b && j+1 < len(b) && b[j+1] == '\\' {
				return j + 2
			}
		}
		return len(b)
	default:
		// nF escapes (ESC, intermediate bytes 0x20-0x2f, a final byte),
		// such as ESC ( B, and two-byte escapes such as ESC c.
		j := i + 1
		for j < len(b) && b[j] >= 0x20 && b[j] <= 0x2f {
			j++
		}
		return min(j+1, len(b))
	}
}

// rawOffset maps an offset in the stripped text back to the raw line.
func rawOffset(raw []byte, at int) int {
	kept := 0
	for i := 0; i < len(raw); {
		if raw[i] == 0x1b {
			i = skipEscape(raw, i)
			continue
		}
		if kept == at {
			return i
		}
		kept++
		i++
	}
	return len(raw)
}
