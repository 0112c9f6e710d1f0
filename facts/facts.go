// Package facts turns the text an error message carries (a regex's named
// groups) into typed values: sizes in bytes, integers, durations, versions
// and names. The type comes from the group's name where the name says it
// (requested, rank, timeout_ms, driver_version) and otherwise from the
// text's shape ("2.00 GiB" is a size wherever it appears).
package facts

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Type is the kind of value a fact holds.
type Type string

// Fact types.
const (
	Size     Type = "size"     // bytes
	Int      Type = "int"      // an index, rank, pid, code, count
	Duration Type = "duration" // milliseconds
	Version  Type = "version"  // a version string, compared by Compare
	Text     Type = "text"     // a name: op type, PCI bus id, process name
)

// Fact is one typed value read from a message. Num holds the number of a
// size (bytes), int or duration (milliseconds); Text is always the text as
// printed.
type Fact struct {
	Type Type
	Text string
	Num  float64
}

// MarshalJSON writes {"type": ..., "text": ..., "value": ...}: value is a
// number for sizes (bytes), ints and durations (milliseconds), and the
// text for versions and names.
func (f Fact) MarshalJSON() ([]byte, error) {
	var v any = f.Text
	if f.IsNumber() {
		v = f.Num
		if f.Num == math.Trunc(f.Num) && math.Abs(f.Num) < 1<<53 {
			v = int64(f.Num)
		}
	}
	return json.Marshal(struct {
		Type  Type   `json:"type"`
		Text  string `json:"text"`
		Value any    `json:"value"`
	}{f.Type, f.Text, v})
}

// IsNumber reports whether the fact has a numeric value.
func (f Fact) IsNumber() bool { return f.Type == Size || f.Type == Int || f.Type == Duration }

// String formats the fact for people: sizes in binary units, durations in
// the largest whole unit, the rest as printed.
func (f Fact) String() string {
	switch f.Type {
	case Size:
		return FormatBytes(f.Num)
	case Duration:
		return FormatMillis(f.Num)
	}
	return f.Text
}

// Names whose type is fixed by the name.
var (
	sizeNames = map[string]bool{"requested": true, "total_capacity": true, "free": true,
		"allocated": true, "reserved": true, "reserved_unallocated": true, "size": true,
		"in_use": true, "limit": true, "required": true, "bytes": true, "capacity": true,
		"this_process": true, "other_processes": true}
	intNames = map[string]bool{"gpu": true, "rank": true, "pid": true, "xid": true, "seq": true,
		"line": true, "local_rank": true, "global_rank": true, "exitcode": true, "errno": true,
		"port": true, "world_size": true, "device": true, "code": true, "status_code": true,
		"peer": true, "nranks": true, "count": true}
)

var (
	sizeRE = regexp.MustCompile(`^(?i)\s*([0-9]+(?:\.[0-9]+)?)\s*(bytes?|b|kib|mib|gib|tib|kb|mb|gb|tb|k|m|g)\s*$`)
	durRE  = regexp.MustCompile(`^(?i)\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|msec|milliseconds?|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?)\s*$`)
	intRE  = regexp.MustCompile(`^\s*[-+]?[0-9]+\s*$`)
	numRE  = regexp.MustCompile(`^\s*[0-9]+(?:\.[0-9]+)?\s*$`)
)

var sizeUnits = map[string]float64{
	"b": 1, "byte": 1, "bytes": 1,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	// Bare K/M/G as memory tools print them (nvidia-smi, free -h) are binary.
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30,
}

var durUnits = map[string]float64{
	"ms": 1, "msec": 1, "millisecond": 1, "milliseconds": 1,
	"s": 1e3, "sec": 1e3, "secs": 1e3, "second": 1e3, "seconds": 1e3,
	"m": 60e3, "min": 60e3, "mins": 60e3, "minute": 60e3, "minutes": 60e3,
	"h": 3600e3, "hour": 3600e3, "hours": 3600e3,
}

// FromNumber makes the fact a computed figure is, typed by its name as
// Parse types a printed one: a size in bytes ("requested"), an integer
// ("gpu"), a duration in milliseconds (a "_ms" name); its text is the
// figure formatted for people. Other names give an integer.
func FromNumber(name string, v float64) Fact {
	switch {
	case sizeNames[name] || strings.HasSuffix(name, "_bytes") || strings.HasSuffix(name, "_size"):
		return Fact{Size, FormatBytes(v), v}
	case strings.HasSuffix(name, "_ms"):
		return Fact{Duration, FormatMillis(v), v}
	}
	return Fact{Int, strconv.FormatFloat(v, 'f', -1, 64), v}
}

// ParseSize reads "2.00 GiB", "512.00 MiB", "1.5 GB", "8192 bytes" or a
// bare byte count. KiB/MiB/GiB are binary, KB/MB/GB decimal.
func ParseSize(s string) (float64, bool) {
	if n, ok := bareNumber(s); ok {
		return n, true
	}
	n, ok := quantity(sizeRE, sizeUnits, s)
	return math.Round(n), ok
}

// ParseDuration reads "600000 milliseconds", "1800 seconds", "30s" or a bare
// number, which is taken in defaultUnit ("ms" or "s"). The result is in
// milliseconds.
func ParseDuration(s, defaultUnit string) (float64, bool) {
	if n, ok := bareNumber(s); ok {
		return n * durUnits[defaultUnit], true
	}
	return quantity(durRE, durUnits, s)
}

// bareNumber reads a non-negative decimal number without a unit.
func bareNumber(s string) (float64, bool) {
	if !numRE.MatchString(s) {
		return 0, false
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return n, err == nil
}

// quantity reads a number followed by one of units (re captures both) and
// returns it in the units' base.
func quantity(re *regexp.Regexp, units map[string]float64, s string) (float64, bool) {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	return n * units[strings.ToLower(m[2])], true
}

// Parse types the text of the group called name.
func Parse(name, text string) Fact {
	t := strings.TrimSpace(text)
	f := Fact{Type: Text, Text: t}
	switch {
	case sizeNames[name] || strings.HasSuffix(name, "_bytes") || strings.HasSuffix(name, "_size"):
		if n, ok := ParseSize(t); ok {
			return Fact{Size, t, n}
		}
	case strings.HasSuffix(name, "_ms"):
		if n, ok := ParseDuration(t, "ms"); ok {
			return Fact{Duration, t, n}
		}
	case strings.HasSuffix(name, "_s") || strings.HasSuffix(name, "_seconds") || name == "timeout" || name == "elapsed":
		if n, ok := ParseDuration(t, "s"); ok {
			return Fact{Duration, t, n}
		}
	case name == "version" || strings.HasSuffix(name, "_version") || name == "capability" || strings.HasSuffix(name, "_capability"):
		// A compute capability compares like a version: 12.0 is newer than 5.0.
		if _, err := ParseVersion(t); err == nil {
			return Fact{Type: Version, Text: t}
		}
		return f
	case intNames[name]:
		if intRE.MatchString(t) {
			n, _ := strconv.ParseFloat(strings.TrimPrefix(t, "+"), 64)
			return Fact{Int, t, n}
		}
	}
	// By shape: a number with a size or time unit.
	if n, ok := quantity(sizeRE, sizeUnits, t); ok {
		return Fact{Size, t, math.Round(n)}
	}
	if n, ok := quantity(durRE, durUnits, t); ok {
		return Fact{Duration, t, n}
	}
	return f
}

// FormatBytes writes n bytes in the largest binary unit that keeps the
// number at least 1, with two decimals: "2.00 GiB", "512.00 MiB", "100 B".
func FormatBytes(n float64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if math.Abs(n) < 1024 {
		return fmt.Sprintf("%.0f B", n)
	}
	v, u := n/1024, units[0]
	for _, next := range units[1:] {
		if math.Abs(v) < 1024 {
			break
		}
		v, u = v/1024, next
	}
	return fmt.Sprintf("%.2f %s", v, u)
}

// FormatMillis writes a duration: "600000 ms (10m0s)" style is avoided in
// favour of the largest whole unit: "10 min", "1.5 s", "250 ms".
func FormatMillis(ms float64) string {
	switch {
	case ms >= 3600e3 && math.Mod(ms, 3600e3) == 0:
		return fmt.Sprintf("%.0f h", ms/3600e3)
	case ms >= 60e3 && math.Mod(ms, 60e3) == 0:
		return fmt.Sprintf("%.0f min", ms/60e3)
	case ms >= 1e3:
		return strconv.FormatFloat(ms/1e3, 'f', -1, 64) + " s"
	}
	return strconv.FormatFloat(ms, 'f', -1, 64) + " ms"
}
