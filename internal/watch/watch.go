package watch

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/gpudx/gpudx/scan"
)

// Config says what to watch and where events go.
type Config struct {
	Paths     []string  // files and directories; "-" is Stdin
	Stdin     io.Reader //
	Commands  []string  // shell commands whose output is followed
	Kernel    string    // "" none; "auto" /dev/kmsg or journalctl; else a kmsg-format file or FIFO
	FromStart bool      // read what files (and the kernel buffer) hold already
	Poll      time.Duration
	Window    time.Duration
	Scanner   *scan.Scanner
	Metrics   *Metrics // nil: none
	// Emit is called with each event, in order, on one goroutine.
	Emit func(Event) error
	// Notes gets what the user is told besides events (a file rotated, a
	// command exited).
	Notes io.Writer
}

// Run watches until ctx ends, or until every source that can end
// (standard input, commands) has ended when there is no other.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	if cfg.Window <= 0 {
		cfg.Window = 5 * time.Minute
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan Batch, 64)
	fl := &Follower{Out: ch, Poll: cfg.Poll}
	finite, endless := 0, 0
	errs := make(chan error, len(cfg.Paths)+len(cfg.Commands)+1)
	start := func(f func() error) {
		go func() {
			if err := f(); err != nil && ctx.Err() == nil {
				errs <- err
			}
		}()
	}
	for _, p := range cfg.Paths {
		p := p
		if p == "-" {
			finite++
			start(func() error { return fl.Reader(ctx, "-", cfg.Stdin, nil) })
			continue
		}
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			endless++
			start(func() error { return fl.Dir(ctx, p, cfg.FromStart) })
			continue
		} else if err != nil {
			fmt.Fprintf(cfg.Notes, "gpudx: %s does not exist yet; waiting for it\n", p)
		}
		endless++
		start(func() error { return fl.File(ctx, p, cfg.FromStart, nil, nil) })
	}
	for _, c := range cfg.Commands {
		c := c
		finite++
		start(func() error { return fl.Command(ctx, c, exec.CommandContext(ctx, "sh", "-c", c)) })
	}
	if cfg.Kernel != "" {
		endless++
		start(func() error { return fl.Kmsg(ctx, cfg.Kernel, cfg.FromStart) })
	}

	det := NewDetector(cfg.Scanner, cfg.Window)
	if cfg.Metrics != nil {
		det.OnHit = cfg.Metrics.Hit
	}
	emit := func(evs []Event) error {
		for _, e := range evs {
			if cfg.Metrics != nil {
				cfg.Metrics.Event(e)
			}
			if err := cfg.Emit(e); err != nil {
				return err
			}
		}
		return nil
	}
	tick := time.NewTicker(min(cfg.Window/4, time.Second))
	defer tick.Stop()
	var runErr error
	for runErr == nil {
		select {
		case b := <-ch:
			now := time.Now()
			if b.Reset {
				det.Reset(b.Source)
			}
			if b.Note != "" {
				fmt.Fprintf(cfg.Notes, "gpudx: %s: %s\n", b.Source, b.Note)
			}
			if len(b.Lines) > 0 {
				if cfg.Metrics != nil {
					cfg.Metrics.Bytes.Add(float64(len(b.Lines)))
					cfg.Metrics.Lines.Add(float64(countLines(b.Lines)))
				}
				runErr = emit(det.Feed(b.Source, b.Lines, now))
			}
			if b.End {
				if runErr == nil {
					runErr = emit(det.CloseSource(b.Source, now))
				}
				if finite--; finite == 0 && endless == 0 {
					cancel()
				}
			}
		case now := <-tick.C:
			runErr = emit(det.Tick(now))
		case err := <-errs:
			runErr = err
		case <-ctx.Done():
			// What was read already is diagnosed, then what was left
			// unsaid is said. Sources still blocked in a read (standard
			// input) are not waited for.
			for drained := false; !drained; {
				select {
				case b := <-ch:
					if len(b.Lines) > 0 && runErr == nil {
						runErr = emit(det.Feed(b.Source, b.Lines, time.Now()))
					}
				default:
					drained = true
				}
			}
			if runErr == nil {
				runErr = emit(det.Close(time.Now()))
			}
			return runErr
		}
	}
	return runErr
}

func countLines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}
