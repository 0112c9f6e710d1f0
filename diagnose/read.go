package diagnose

import (
	"errors"
	"io"

	"github.com/gpudx/gpudx/env"
	"github.com/gpudx/gpudx/scan"
)

// Options is what a caller of ReadAll knows besides the logs.
type Options struct {
	// Env is the environment the caller knows (from collect_env output
	// or a live collection). What the logs say wins: they were printed
	// by the run that failed.
	Env env.Environment
	// Done, when set, is called after each input, in input order, with
	// what was read of it and the error that stopped it: an
	// *scan.OpenError when it could not be opened, nil when it was read
	// whole.
	Done func(i int, st scan.Stats, err error)
	// Together treats all inputs as one job, whatever they say about
	// their jobs (see Collector.SetTogether).
	Together bool
}

// ReadAll scans inputs with s, in order, and returns their diagnosis. One
// input is read as a single log; several as the files of one job, so that
// evidence names its file and a file's name can give its rank. Every
// input is read whatever happens to the others: err holds the errors that
// stopped some (each also given to Options.Done), and the report what the
// rest said.
func ReadAll(s *scan.Scanner, inputs []scan.Input, o Options) (*Report, error) {
	c := NewCollector(s.Entries())
	c.SetEnvironment(o.Env)
	c.SetTogether(o.Together)
	v := &readAll{Collector: c, inputs: inputs, done: o.Done}
	Plan(s).VisitAll(inputs, v)
	rep := c.Report()
	if len(v.errs) == 1 {
		return rep, v.errs[0] // as it came: errors.Join would hide its type
	}
	return rep, errors.Join(v.errs...)
}

// readAll feeds a multi-input scan to a Collector.
type readAll struct {
	*Collector
	inputs []scan.Input
	done   func(int, scan.Stats, error)
	errs   []error
}

func (v *readAll) Begin(i int) {
	if len(v.inputs) > 1 {
		v.File(v.inputs[i].Name)
	}
}

func (v *readAll) End(i int, st scan.Stats, err error) {
	v.AddStats(st)
	if err != nil {
		v.errs = append(v.errs, err)
	}
	if v.done != nil {
		v.done(i, st, err)
	}
}

// Read scans r with s and returns the diagnosis of that one input.
func Read(s *scan.Scanner, r io.Reader) (*Report, error) {
	rep, err := ReadAll(s, []scan.Input{{Open: func() (io.ReadCloser, error) { return io.NopCloser(r), nil }}}, Options{})
	if err != nil {
		return nil, err
	}
	return rep, nil
}
