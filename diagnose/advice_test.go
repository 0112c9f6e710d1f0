package diagnose

import (
	"strings"
	"testing"

	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
	"github.com/gpudx/gpudx/scan"
)

// The cases, with the knowledge base itself: advice tied to a
// version or GPU the log does not name no longer comes first.
func TestAdviceOrderUsesTheLog(t *testing.T) {
	es, err := kb.LoadFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := scan.New(es)
	tests := []struct {
		log, id   string
		firstWork string // a prefix of the first workaround's action (fix or check, as its kind says)
		notFirst  string
		firstDead string
	}{
		{log: "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory\n",
			id: "build/libcudnn-missing", firstWork: "Read the file named after 'Error:'", notFirst: "libnvrtc"},
		{log: "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`\n",
			id: "cuda/cublas-execution-failed", firstWork: "If the build matches the GPU, look for an earlier kernel fault",
			firstDead: "Lower the batch size"},
	}
	for _, tt := range tests {
		r := readLogs(t, s, nil, tt.log)
		var d *Diagnosis
		for _, x := range r.Diagnoses {
			if x.ID == tt.id {
				d = x
			}
		}
		if d == nil {
			t.Errorf("%s not found in %v", tt.id, ids(r))
			continue
		}
		// Fixes and checks are shown apart ("do now", "to find out"):
		// each list's first item is the one that fits this log.
		var firsts []Workaround
		seen := map[string]bool{}
		for _, w := range d.Workarounds {
			if !seen[w.Kind] {
				seen[w.Kind] = true
				firsts = append(firsts, w)
			}
		}
		found := false
		for _, w := range firsts {
			found = found || strings.HasPrefix(w.Action, tt.firstWork)
			if tt.notFirst != "" && strings.Contains(w.Action, tt.notFirst) {
				t.Errorf("%s: first %s %q (%s)", tt.id, w.Kind, w.Action, w.ConditionStatus)
			}
		}
		if !found {
			t.Errorf("%s: no list starts with %q: %+v", tt.id, tt.firstWork, firsts)
		}
		if tt.firstDead != "" && d.DeadEnds[0].Action != tt.firstDead {
			t.Errorf("%s: first dead end %q", tt.id, d.DeadEnds[0].Action)
		}
		// Ranks never go down a list.
		for i := 1; i < len(d.Workarounds); i++ {
			if d.Workarounds[i].Kind == d.Workarounds[i-1].Kind && d.Workarounds[i].Rank() < d.Workarounds[i-1].Rank() {
				t.Errorf("%s: workaround %d (%s) after a worse one", tt.id, i, d.Workarounds[i].ConditionStatus)
			}
		}
	}
}
