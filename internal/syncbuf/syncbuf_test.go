package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers on several goroutines and a reader: every write arrives whole
// (run with -race to see the locking matter).
func TestBuffer(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("ab\n"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := b.String(); len(got) != 8*100*3 || strings.Count(got, "ab\n") != 800 {
		t.Errorf("%d bytes, %d whole writes", len(got), strings.Count(got, "ab\n"))
	}
}
