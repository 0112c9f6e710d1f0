package env

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// The gate lets a scanner show a Detector only the lines that can matter
// to it, found by a fast search of the whole buffer for literals. The
// contract, which gate_test.go checks:
//
// For any line L (as a scanner cuts it: no '\n', ANSI codes removed) and
// any Detector d: if !d.Pending(), L contains none of GateLiterals() and
// !GateStart(L), then d.Line(L, w) and d.LineAt(L, file, n) leave d
// exactly as it was: env, hints, mode, everything.
//
// So a scanner may skip every other line, provided it asks Pending before
// each line it would skip: inside a multi-line block (an nvidia-smi GPU
// row and its memory line, collect_env's GPU and cuDNN lists, pip and
// conda lists, csv rows) the very next line must be shown whatever it
// holds, if only to end the block.
//
// The literals are the guards of detect.go, made as long as is exact: the
// lineRule toks, and for a guard that is a cheap pre-test (tokErsion,
// tokGPU "GPU ", tokTorch "torch") the longer strings every line its rule
// acts on must contain, worked out from the regular expressions behind it.
// Three stay short: tokFreeze "==", tokOS "OS:" and tokDrive `:\`. The
// exact sets of longer ones are still short and many ("==0" ... "==9";
// " OS:", ":OS:", "]OS:" ... 20 of 4 bytes; "A:\" ... "z:\"), and a
// scanner searches each short literal on its own (scan.Gate), so one costs
// less than ten or fifty a byte longer.
//
// A new rule needs its literal here: build it from the same token
// variable, as gateCandidates does for the rules it lists.
// TestGateCoversDetector fails on a []byte literal in detect.go that no
// gate literal covers and no list in the test excuses, and on a regular
// expression without an example line.

// GateLiterals returns case-sensitive strings, one of which is in every
// line that can change a Detector not inside a block, unless GateStart
// accepts the line (see the contract above). No string holds another and
// none holds '\n'. All are 6 bytes or more but "==", "OS:" and `:\`. The
// caller may change the slice.
func GateLiterals() []string {
	return append([]string(nil), gateLiterals...)
}

// GateStart reports whether line starts as a line read by a rule that is
// anchored at the start and has no literal to search for:
//
//   - an nvidia-smi table GPU row (smiRowRE): '|', white space, a digit;
//   - a headerless nvidia-smi --format=csv row (csvBareRE): 1 to 3 digits
//     then ", ";
//   - pip list's header (pipHeaderRE): "Package" at the very start.
//
// White space at the start is skipped as bytes.TrimSpace does, except
// before "Package". It looks at the first bytes only (past white space)
// and allocates nothing.
func GateStart(line []byte) bool {
	if len(line) > 0 && line[0] == 'P' {
		return bytes.HasPrefix(line, tokPackage)
	}
	t := trimLeftSpace(line)
	if len(t) == 0 {
		return false
	}
	switch c := t[0]; {
	case c == '|': // `^\|\s+\d`
		i := 1
		for i < len(t) && isRESpace(t[i]) {
			i++
		}
		return i > 1 && i < len(t) && isDigit(t[i])
	case isDigit(c): // `^\d{1,3}, `
		i := 1
		for i < 3 && i < len(t) && isDigit(t[i]) {
			i++
		}
		return i+1 < len(t) && t[i] == ',' && t[i+1] == ' '
	}
	return false
}

// Pending reports whether d is inside a multi-line block and so must see
// the very next line, whatever it holds.
func (d *Detector) Pending() bool { return d.mode != modeNone }

var gateLiterals = minimalLiterals(gateCandidates())

// torchAfter holds what may follow "torch" in torchBareRE and
// torchColonRE: ':' or white space (RE2's \s, less '\n').
const torchAfter = ": \t\f\r"

// gateCandidates lists the literals rule by rule, in Line's order, before
// minimalLiterals drops those that hold another.
func gateCandidates() []string {
	var lits []string
	add := func(toks ...[]byte) {
		for _, t := range toks {
			lits = append(lits, string(t))
		}
	}
	// versionLine runs under tokErsion; each of its tests has its own
	// token, and keyed runs under keyedToks.
	for _, r := range versionRules {
		add(r.tok)
	}
	add(tokDriverVer, tokCuDNNVer, tokMismatchVer)
	add(keyedToks...)
	for _, r := range lineRules {
		add(r.tok)
	}
	add(tokCompTools)
	// gpuLine: collect_env's line, or a bare "GPU 0: NAME" (gpuListRE) taken
	// only with a UUID or a maker's name right after ": ".
	add(tokGPUConfig, tokUUID)
	for _, m := range gpuMakers {
		lits = append(lits, ": "+m)
	}
	// freezeRE: "==" then a digit; "==0" ... "==9" would be exact, but ten
	// short literals cost ten searches, "==" one.
	add(tokFreeze)
	add(tokConda, tokCondaHeader)
	// csvLine: a header; a bare row is GateStart's.
	add(csvHeaderToks...)
	add(tokIndexName)
	// osLine: "OS:" starts the line once stripPrefix is done; twenty 4-byte
	// literals (" OS:", ":OS:", "]OS:", "0OS:", ... one per byte a prefix
	// can end with) would be exact, and GateStart for the line's start.
	add(tokOS, tokPyPlatform)
	// hints: drivePath is a letter, ":\", a letter or "\": exact would be
	// fifty-two "C:\".
	add(tokDrive)
	add(tokPyDir, tokLinuxGNU, tokNVRM, tokNVRMVersion, tokLinuxVersion)
	add(tokCapSM, tokComputeCap)
	for i := range len(torchAfter) {
		lits = append(lits, string(tokTorch)+torchAfter[i:i+1])
	}
	add(tokPython)
	return lits
}

// minimalLiterals drops duplicates and every literal that holds another:
// a line with the longer one has the shorter one too. Order is kept.
func minimalLiterals(lits []string) []string {
	var out []string
	for i, l := range lits {
		keep := true
		for j, o := range lits {
			if j != i && bytes.Contains([]byte(l), []byte(o)) && (len(o) < len(l) || j < i) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, l)
		}
	}
	return out
}

// trimLeftSpace is bytes.TrimLeftFunc(b, unicode.IsSpace), the left half
// of bytes.TrimSpace, quick for ASCII.
func trimLeftSpace(b []byte) []byte {
	for len(b) > 0 {
		c := b[0]
		if c < utf8.RuneSelf {
			if c != ' ' && (c < '\t' || c > '\r') {
				return b
			}
			b = b[1:]
			continue
		}
		r, n := utf8.DecodeRune(b)
		if !unicode.IsSpace(r) {
			return b
		}
		b = b[n:]
	}
	return b
}

// isRESpace is RE2's \s: [\t\n\f\r ].
func isRESpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
