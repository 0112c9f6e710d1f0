// Package watch follows logs as they grow (files across rotation and
// truncation, directories, standard input, the kernel log, a command's
// output) and reports each known error once as it appears, counting its
// repeats instead of printing them again. Memory stays bounded however
// long it runs: each source keeps the state of one incident, bounded by
// the knowledge base's size, and a bounded window of context lines.
package watch

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/scan"
)

// Event is one report: a diagnosis seen for the first time in an incident
// ("new"), or one that kept occurring ("repeated", once per window at
// most, with how often since the last event). The diagnosis's fields are
// those of gpudx diagnose --format json, beside the event's own.
type Event struct {
	Time   time.Time `json:"time"`
	Source string    `json:"source"`
	Event  string    `json:"event"`
	// Occurrences is how many lines this event stands for: the new
	// diagnosis's lines in what was just read, or the repeats since the
	// previous event.
	Occurrences int      `json:"occurrences"`
	GPUs        []string `json:"gpus,omitempty"`
	*diagnose.Diagnosis
}

// Hit is one counted occurrence, for metrics.
type Hit struct {
	Entry *kb.Entry
	GPU   string // "0000:3b:00" (PCI bus id), "2" (index) or "" (the line does not say)
}

// Detector turns lines into events. It is not safe for concurrent use.
type Detector struct {
	sc      *scan.Scanner
	plan    *scan.Plan
	window  time.Duration
	sources map[string]*sourceState
	// OnHit, when set, is called for each counted occurrence.
	OnHit func(Hit)
}

// Context bounds: the lines kept from earlier reads of an incident, so
// that a later error is ranked against the one that caused it.
const (
	maxContextLines = 256
	maxContextBytes = 64 << 10
	maxGPUsPerEvent = 16
)

type ctxLine struct {
	n    int
	text []byte
}

type sourceState struct {
	line     int // lines read so far (since the last reset)
	context  []ctxLine
	ctxBytes int
	lastHit  time.Time
	seen     map[string]*seen // this incident's diagnoses
}

type seen struct {
	last      *diagnose.Diagnosis
	lastEvent time.Time
	pending   int // occurrences since the last event
	gpus      map[string]bool
}

// NewDetector matches with sc; repeats within window are counted, and a
// source quiet for window closes its incident.
func NewDetector(sc *scan.Scanner, window time.Duration) *Detector {
	return &Detector{sc: sc, plan: diagnose.Plan(sc), window: window, sources: map[string]*sourceState{}}
}

func (d *Detector) state(source string) *sourceState {
	s := d.sources[source]
	if s == nil {
		s = &sourceState{seen: map[string]*seen{}}
		d.sources[source] = s
	}
	return s
}

// Reset says source starts over (a file rotated or truncated): line
// numbers restart and the context of the old file is dropped.
func (d *Detector) Reset(source string) {
	s := d.state(source)
	s.line, s.context, s.ctxBytes = 0, nil, 0
}

// feeder shows a collector the context lines, then the new ones, with
// their own line numbers.
type feeder struct {
	c     *diagnose.Collector
	nums  []int // line numbers, by position in what is scanned
	shown []ctxLine
}

func (f *feeder) Line(n int, text []byte) bool {
	ln := f.nums[n-1]
	f.shown = append(f.shown, ctxLine{ln, text})
	return f.c.Line(ln, text)
}

func (f *feeder) Hit(h scan.Hit) {
	h.Line = f.nums[h.Line-1]
	f.c.Hit(h)
}

// Feed reads whole lines (each ending in '\n') of source, read at now,
// and returns the events they make.
func (d *Detector) Feed(source string, lines []byte, now time.Time) []Event {
	s := d.state(source)
	lastCtx := s.line
	nums := make([]int, 0, bytes.Count(lines, []byte("\n"))+1)
	for i, rest := 0, lines; len(rest) > 0; i++ {
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			j = len(rest) - 1
		}
		nums = append(nums, s.line+i+1)
		rest = rest[j+1:]
	}
	s.line += len(nums)
	nums = append(nums, 0) // a line past the end, if lines lacks its '\n'

	// The new lines alone: what they count, per entry and GPU.
	counted := map[string]int{}
	gpus := map[string]map[string]bool{}
	rep, shown := d.diagnose(source, lines, nums, func(h scan.Hit) {
		e := d.sc.Entries()[h.Entry]
		counted[e.ID]++
		g := gpuOf(h)
		if g != "" {
			if gpus[e.ID] == nil {
				gpus[e.ID] = map[string]bool{}
			}
			gpus[e.ID][g] = true
		}
		if d.OnHit != nil {
			d.OnHit(Hit{Entry: e, GPU: g})
		}
	})
	// A diagnosis new to the incident is ranked again with the context
	// before it (the error that caused it may have come in an earlier
	// read). Repeats, the common case in a flood, skip this.
	byID := map[string]*diagnose.Diagnosis{}
	for _, dg := range rep.Diagnoses {
		byID[dg.ID] = dg
	}
	for _, dg := range rep.Diagnoses {
		if counted[dg.ID] > 0 && s.seen[dg.ID] == nil && len(s.context) > 0 {
			var buf bytes.Buffer
			cn := make([]int, 0, len(s.context)+len(nums))
			for _, l := range s.context {
				buf.Write(l.text)
				buf.WriteByte('\n')
				cn = append(cn, l.n)
			}
			buf.Write(lines)
			full, _ := d.diagnose(source, buf.Bytes(), append(cn, nums...), nil)
			for _, x := range full.Diagnoses {
				if byID[x.ID] != nil {
					byID[x.ID] = x
				}
			}
			break
		}
	}
	// Keep what the collector was shown of the new lines as context (the
	// text is only valid during Line: copy it).
	for _, l := range shown {
		if l.n > lastCtx {
			s.addContext(ctxLine{l.n, append([]byte(nil), l.text...)})
		}
	}

	var events []Event
	for _, x := range rep.Diagnoses {
		n := counted[x.ID]
		if n == 0 {
			continue
		}
		dg := byID[x.ID]
		s.lastHit = now
		sn := s.seen[dg.ID]
		if sn == nil {
			sn = &seen{last: dg, lastEvent: now}
			s.seen[dg.ID] = sn
			events = append(events, Event{Time: now, Source: source, Event: "new", Occurrences: n, GPUs: sorted(gpus[dg.ID]), Diagnosis: dg})
			continue
		}
		sn.last, sn.pending = dg, sn.pending+n
		for g := range gpus[dg.ID] {
			if sn.gpus == nil {
				sn.gpus = map[string]bool{}
			}
			if len(sn.gpus) < maxGPUsPerEvent {
				sn.gpus[g] = true
			}
		}
		if now.Sub(sn.lastEvent) >= d.window {
			events = append(events, sn.repeated(now, source))
		}
	}
	return events
}

// diagnose reads text (whole lines, numbered by nums) with a fresh
// collector and returns its report and the lines it was shown (their text
// valid only until the next scan).
func (d *Detector) diagnose(source string, text []byte, nums []int, onCount func(scan.Hit)) (*diagnose.Report, []ctxLine) {
	col := diagnose.NewCollector(d.sc.Entries())
	col.File(source)
	if onCount != nil {
		col.OnCount(onCount)
	}
	f := &feeder{c: col, nums: nums}
	st, _ := d.plan.Visit(bytes.NewReader(text), f)
	col.AddStats(st)
	return col.Report(), f.shown
}

func (sn *seen) repeated(now time.Time, source string) Event {
	ev := Event{Time: now, Source: source, Event: "repeated", Occurrences: sn.pending, GPUs: sorted(sn.gpus), Diagnosis: sn.last}
	sn.pending, sn.lastEvent, sn.gpus = 0, now, nil
	return ev
}

func (s *sourceState) addContext(l ctxLine) {
	s.context = append(s.context, l)
	s.ctxBytes += len(l.text) + 1
	for len(s.context) > maxContextLines || s.ctxBytes > maxContextBytes {
		s.ctxBytes -= len(s.context[0].text) + 1
		s.context = s.context[1:]
	}
}

// Tick closes the incidents of sources quiet for the window: the repeats
// not yet said are reported, and the next hit starts a new incident.
func (d *Detector) Tick(now time.Time) []Event {
	var events []Event
	for name, s := range d.sources {
		if len(s.seen) > 0 && now.Sub(s.lastHit) >= d.window {
			events = append(events, d.close(name, s, now)...)
		}
	}
	return events
}

// Close reports every repeat not yet said, at the end of a watch or of
// a source.
func (d *Detector) Close(now time.Time) []Event {
	var events []Event
	for name, s := range d.sources {
		events = append(events, d.close(name, s, now)...)
	}
	return events
}

// CloseSource ends one source (a command that exited, standard input at
// its end).
func (d *Detector) CloseSource(name string, now time.Time) []Event {
	s := d.sources[name]
	if s == nil {
		return nil
	}
	ev := d.close(name, s, now)
	delete(d.sources, name)
	return ev
}

func (d *Detector) close(name string, s *sourceState, now time.Time) []Event {
	var events []Event
	for _, sn := range s.seen {
		if sn.pending > 0 {
			events = append(events, sn.repeated(now, name))
		}
	}
	sortEvents(events)
	s.seen = map[string]*seen{}
	s.context, s.ctxBytes = nil, 0
	return events
}

func sortEvents(ev []Event) {
	for i := 1; i < len(ev); i++ {
		for j := i; j > 0 && ev[j].ID < ev[j-1].ID; j-- {
			ev[j], ev[j-1] = ev[j-1], ev[j]
		}
	}
}

func sorted(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for g := range m {
		out = append(out, g)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

var (
	rePCI = regexp.MustCompile(`(?i)\b(?:PCI:)?([0-9a-f]{4,8}):([0-9a-f]{2}):([0-9a-f]{2})(?:\.[0-7])?\b`)
	// In free text a bus id is only taken when written as one: after
	// "PCI:", or with its function number (not a time of day).
	rePCIText = regexp.MustCompile(`(?i)(?:\bPCI:([0-9a-f]{4,8}):([0-9a-f]{2}):([0-9a-f]{2})|\b([0-9a-f]{4}|[0-9a-f]{8}):([0-9a-f]{2}):([0-9a-f]{2})\.[0-7]\b)`)
	reGPUNo   = regexp.MustCompile(`\bGPU ([0-9]{1,4})\b`)
)

// gpuOf says which GPU a hit's line names: its PCI bus id (domain:bus:
// device, lower case, the domain in 4 digits), else its index; "" when it
// names none. Values are bounded: hardware addresses or small numbers,
// never free text.
func gpuOf(h scan.Hit) string {
	if v := h.Captures["pci_bus_id"]; v != "" {
		if g := pciID(v); g != "" {
			return g
		}
	}
	if v := h.Captures["gpu"]; v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < 1024 {
			return strconv.Itoa(n)
		}
	}
	if m := rePCIText.FindStringSubmatch(h.Text); m != nil {
		if m[1] == "" {
			m = m[3:]
		}
		return pciID(m[1] + ":" + m[2] + ":" + m[3])
	}
	if m := reGPUNo.FindStringSubmatch(h.Text); m != nil {
		if n, _ := strconv.Atoi(m[1]); n < 1024 {
			return strconv.Itoa(n)
		}
	}
	return ""
}

func pciID(s string) string {
	m := rePCI.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	dom := strings.ToLower(m[1])
	dom = dom[len(dom)-4:]
	return dom + ":" + strings.ToLower(m[2]) + ":" + strings.ToLower(m[3])
}
