package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpudx/gpudx/facts"
)

// progressMin is the input size from which a progress bar is worth drawing.
const progressMin = 100 << 20

// progress draws one line on a terminal's standard error while diagnose
// reads large inputs: a bar, the bytes read, the rate and the time left. It
// counts raw bytes read from the files (compressed bytes for gzip input), so
// the total is known from the file sizes.
type progress struct {
	w     io.Writer
	total int64
	read  atomic.Int64
	start time.Time
	now   func() time.Time
	stop  chan struct{}
	done  sync.WaitGroup
	width int
}

// newProgress returns nil (no bar) unless stderr is a terminal and the
// inputs are files of at least progressMin bytes in all.
func newProgress(env *IO, inputs []input) *progress {
	if env.Terminal == nil || !env.Terminal(env.Err) {
		return nil
	}
	var total int64
	for _, in := range inputs {
		if in.path == "" {
			return nil // standard input: no size to measure against
		}
		if st, err := os.Stat(in.path); err == nil {
			total += st.Size()
		}
	}
	if total < progressMin {
		return nil
	}
	return &progress{w: env.Err, total: total, start: time.Now(), now: time.Now, width: 30}
}

// reader counts what passes through r.
func (p *progress) reader(r io.Reader) io.Reader {
	if p == nil {
		return r
	}
	return &countingReader{r, &p.read}
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// run redraws the line every interval until finish is called.
func (p *progress) run(interval time.Duration) {
	if p == nil {
		return
	}
	p.stop = make(chan struct{})
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw()
			}
		}
	}()
}

// draw writes the line over the previous one.
func (p *progress) draw() { fmt.Fprint(p.w, "\r"+p.line()) }

// finish stops the redraws and clears the line.
func (p *progress) finish() {
	if p == nil || p.stop == nil {
		return
	}
	close(p.stop)
	p.done.Wait()
	fmt.Fprint(p.w, "\r"+strings.Repeat(" ", len([]rune(p.line())))+"\r")
}

// line is the progress line: "[#####-----] 1.20 GiB / 4.00 GiB  310.5 MiB/s  ETA 9s".
func (p *progress) line() string {
	read := min(p.read.Load(), p.total)
	frac := float64(read) / float64(p.total)
	fill := int(frac * float64(p.width))
	bar := strings.Repeat("#", fill) + strings.Repeat("-", p.width-fill)
	secs := p.now().Sub(p.start).Seconds()
	rate, eta := 0.0, "?"
	if secs > 0 && read > 0 {
		rate = float64(read) / secs
		eta = time.Duration(float64(p.total-read) / rate * float64(time.Second)).Round(time.Second).String()
	}
	return fmt.Sprintf("[%s] %s / %s  %s/s  ETA %s", bar, facts.FormatBytes(float64(read)), facts.FormatBytes(float64(p.total)),
		facts.FormatBytes(rate), eta)
}
