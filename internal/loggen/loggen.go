// Package loggen writes synthetic training logs for scanner tests and
// benchmarks: tqdm progress bars, NCCL INFO chatter, Python warnings,
// traceback lines and checkpoint messages, with given error lines planted
// among them.
package loggen

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"strings"
)

// Write writes lines to w until at least n bytes are out. Every every-th
// line is one of planted (chosen at random); with every == 0, each line is
// a planted one with probability 1/20. The output depends only on the
// arguments.
func Write(w io.Writer, n int64, planted []string, every int64, seed int64) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	rng := rand.New(rand.NewSource(seed))
	var line bytes.Buffer
	var written int64
	for step := int64(0); written < n; step++ {
		line.Reset()
		r := rng.Intn(100)
		plant := len(planted) > 0 && ((every > 0 && step%every == every-1) || (every == 0 && r >= 95))
		switch {
		case plant:
			line.WriteString(planted[rng.Intn(len(planted))])
			line.WriteByte('\n')
		case r < 55:
			fmt.Fprintf(&line, "Epoch %d:  %2d%%|%s| %d/%d [00:%02d<01:%02d, %.2fit/s, loss=%.4f, lr=%.2e]\n",
				step/1000, step%100, strings.Repeat("█", int(step%10)), step%1000, 1000, step%60, (step*7)%60, 3.1+rng.Float64(), rng.Float64(), 3e-4)
		case r < 75:
			fmt.Fprintf(&line, "node-%d:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via P2P/CUMEM/read\n",
				rng.Intn(8), 1000+rng.Intn(9000), 1000+rng.Intn(9000), rng.Intn(8), rng.Intn(32), rng.Intn(8), rng.Intn(8), rng.Intn(8), rng.Intn(8))
		case r < 85:
			fmt.Fprintf(&line, "/usr/lib/python3/site-packages/torch/nn/modules/module.py:%d: UserWarning: The given NumPy array is not writable (step %d)\n", 1000+rng.Intn(900), step)
		case r < 95:
			fmt.Fprintf(&line, "  File \"/home/user/train.py\", line %d, in forward\n    x = self.layer%d(x)\n", rng.Intn(500), rng.Intn(24))
		default:
			fmt.Fprintf(&line, "[2026-11-21 10:%02d:%02d,%03d] INFO trainer: saving checkpoint step %d to /ckpt/step_%d\n", rng.Intn(60), rng.Intn(60), rng.Intn(1000), step, step)
		}
		k, err := bw.Write(line.Bytes())
		if err != nil {
			return err
		}
		written += int64(k)
	}
	return bw.Flush()
}

// Bytes returns what Write writes.
func Bytes(n int64, planted []string, every int64, seed int64) []byte {
	var b bytes.Buffer
	_ = Write(&b, n, planted, every, seed) // a bytes.Buffer does not fail
	return b.Bytes()
}
