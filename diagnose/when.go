package diagnose

import (
	"regexp"
	"strconv"
	"time"
)

// Timestamps order errors across files (one per rank or node), where line
// numbers mean nothing. Only forms that carry a date or a time of day are
// read; a line without one is ordered by its position.
var (
	// 2024-11-21 10:43:12,503 / 2024-11-21T10:43:12.503Z
	reISO = regexp.MustCompile(`(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?`)
	// glog, as PyTorch's C++ side prints it: "E1121 10:43:12.503117902".
	reGlog = regexp.MustCompile(`\b[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{1,9})\b`)
)

const whenHead = 120 // timestamps are near the start of a line

// stamp is a time read from a line, as nanoseconds since the start of the
// year when the year is unknown (glog), so only stamps of the same kind
// compare.
type stamp struct {
	ns   int64
	kind byte // 0 none, 'i' ISO date, 'g' glog
}

func (a stamp) comparable(b stamp) bool { return a.kind != 0 && a.kind == b.kind }

func parseStamp(line []byte) stamp {
	head := line[:min(len(line), whenHead)]
	if m := reISO.FindSubmatch(head); m != nil {
		n := atoiAll(m[1:7])
		t := time.Date(n[0], time.Month(n[1]), n[2], n[3], n[4], n[5], frac(m[7]), time.UTC)
		return stamp{t.UnixNano(), 'i'}
	}
	if m := reGlog.FindSubmatch(head); m != nil {
		n := atoiAll(m[1:6])
		t := time.Date(2000, time.Month(n[0]), n[1], n[2], n[3], n[4], frac(m[6]), time.UTC)
		return stamp{t.UnixNano(), 'g'}
	}
	return stamp{}
}

func atoiAll(bs [][]byte) []int {
	out := make([]int, len(bs))
	for i, b := range bs {
		out[i], _ = strconv.Atoi(string(b))
	}
	return out
}

// frac turns fractional-second digits into nanoseconds.
func frac(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(string(b))
	for i := len(b); i < 9; i++ {
		n *= 10
	}
	return n
}
