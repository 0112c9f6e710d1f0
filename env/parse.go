package env

import (
	"bufio"
	"io"
	"strconv"
)

// Parse reads a whole captured output — collect_env, nvidia-smi (table,
// csv, -L, -q), nvcc --version, pip list or freeze, conda list, dmesg, a
// plain log, or several of these concatenated — and returns what it says.
// name is used in Sources ("env.txt:12"). Lines longer than the detector
// examines are cut, so any input is read in bounded memory. The error is
// only ever a read error.
func Parse(r io.Reader, name string) (Environment, error) {
	d := NewDetector()
	err := eachLine(r, func(n int, line []byte) {
		d.Line(line, name+":"+strconv.Itoa(n))
	})
	return d.Env(), err
}

// eachLine calls fn with each line of r (numbered from 1, without its end
// of line), giving only the first maxLineLen bytes of a longer one.
func eachLine(r io.Reader, fn func(int, []byte)) error {
	br := bufio.NewReaderSize(r, maxLineLen)
	n := 0
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 || err == nil {
			n++
			fn(n, line)
		}
		for isPrefix && err == nil {
			_, isPrefix, err = br.ReadLine()
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
