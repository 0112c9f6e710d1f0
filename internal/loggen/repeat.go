package loggen

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"strings"
)

// Interleave writes Write's training log (planted, every and seed as
// there) with the lines extra returns inserted after every gap of its
// lines: extra(0), extra(1), and so on. It stops after the line that
// brings the output to n bytes, or when extra returns "" (then nothing
// more is written). An extra string may hold several lines; each ends
// with a newline.
func Interleave(w io.Writer, n int64, planted []string, every, seed int64, gap int, extra func(i int) string) error {
	iw := &interleaver{w: w, n: n, gap: max(gap, 1), extra: extra}
	err := Write(iw, math.MaxInt64, planted, every, seed)
	if errors.Is(err, errEnough) {
		return nil
	}
	return err
}

var errEnough = errors.New("loggen: enough")

type interleaver struct {
	w       io.Writer
	n       int64
	gap     int
	extra   func(int) string
	written int64
	lines   int
	next    int // index of the next extra line
}

func (iw *interleaver) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		i := indexNL(p[done:])
		if i < 0 {
			k, err := iw.w.Write(p[done:])
			iw.written += int64(k)
			return done + k, err
		}
		k, err := iw.w.Write(p[done : done+i+1])
		iw.written += int64(k)
		done += k
		if err != nil {
			return done, err
		}
		iw.lines++
		if iw.lines%iw.gap == 0 {
			s := iw.extra(iw.next)
			if s == "" {
				return done, errEnough
			}
			iw.next++
			k, err := io.WriteString(iw.w, s)
			iw.written += int64(k)
			if err != nil {
				return done, err
			}
		}
		if iw.written >= iw.n {
			return done, errEnough
		}
	}
	return done, nil
}

func indexNL(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

// mix is a reproducible pseudo-random figure for the i-th repeat.
func mix(i, salt int) uint64 {
	x := uint64(i)*0x9E3779B97F4A7C15 + uint64(salt)*0xBF58476D1CE4E5B9
	x ^= x >> 31
	x *= 0x94D049BB133111EB
	x ^= x >> 29
	return x
}

// glog is a glog timestamp ("W1121 10:43:12.503117902") for repeat i.
func glog(level byte, i int) string {
	s := i / 3 // a few lines a second
	return fmt.Sprintf("%c1121 %02d:%02d:%02d.%09d", level, 10+s/3600%14, s/60%60, s%60, mix(i, 1)%1e9)
}

// BarrierWarning is the i-th of the warning torch.distributed prints on
// every barrier of a job that did not bind ranks to devices, from 8 ranks
// (GPU = local rank).
func BarrierWarning(i int) string {
	r := i % 8
	return fmt.Sprintf("[rank%d]:[%s ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank %d]  using GPU %d to perform barrier as devices used by this process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect. Specify device_ids in barrier() to force use of a particular device, or call init_process_group() with a device_id.\n",
		r, glog('W', i), r, r)
}

// OOMRepeat is the i-th of PyTorch's out-of-memory message from a job of
// 8 ranks that retries forever: the rank, its GPU, the size requested
// (four sizes) and the memory figures change from one to the next.
func OOMRepeat(i int) string {
	r := i % 8
	req := []string{"2.00 GiB", "512.00 MiB", "20.00 MiB", "1.50 GiB"}[mix(i, 2)%4]
	free := float64(mix(i, 3)%300) / 100 // 0.00 to 2.99 GiB
	alloc := 70 + float64(mix(i, 4)%800)/100
	unalloc := 79.14 - free - alloc - 0.5
	return fmt.Sprintf("[rank%d]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of 79.14 GiB of which %.2f GiB is free. Including non-PyTorch memory, this process has %.2f GiB memory in use. Of the allocated memory %.2f GiB is allocated by PyTorch, and %.2f GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n",
		r, req, r, free, 79.14-free, alloc, unalloc)
}

// NCCLTimeout is the i-th block of what each of ranks ranks prints when a
// collective times out: the watchdog's timeout, its exception and the
// abort, in turn from rank 0, 1, ... ranks-1 and around again.
func NCCLTimeout(i, ranks int) string {
	r := i % max(ranks, 1)
	seq := 20000 + i/max(ranks, 1)
	return fmt.Sprintf("[rank%d]:[%s ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=%d, NumelOut=%d, Timeout(ms)=600000) ran for %d milliseconds before timing out.\n"+
		"[rank%d]:[%s ProcessGroupNCCL.cpp:1664] [PG ID 0 PG GUID 0(default_pg) Rank %d] Exception (either an error or timeout) detected by watchdog at work: %d, last enqueued NCCL work: %d, last completed NCCL work: %d.\n"+
		"[rank%d]: terminate called after throwing an instance of 'c10::DistBackendError'\n",
		r, glog('E', i), r, seq, 1<<20, 1<<20, 600000+mix(i, 5)%100,
		r, glog('E', i+1), r, seq, seq, seq-1,
		r)
}

// Vary returns line with its figures changed as a log that repeats it
// changes them: each run of digits kept, replaced by as many other digits
// (the same shape), or made one digit longer.
func Vary(rng *rand.Rand, line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] < '0' || line[i] > '9' {
			b.WriteByte(line[i])
			i++
			continue
		}
		j := i
		for j < len(line) && line[j] >= '0' && line[j] <= '9' {
			j++
		}
		switch k := rng.Intn(4); k {
		case 0:
			b.WriteString(line[i:j])
		default:
			n := j - i
			if k == 3 {
				n++
			}
			for range n {
				b.WriteByte(byte('0' + rng.Intn(10)))
			}
		}
		i = j
	}
	return b.String()
}
