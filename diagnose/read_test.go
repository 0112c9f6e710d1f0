package diagnose

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/scan"
)

// An input that cannot be opened or read costs its own part only: the
// others are diagnosed, Done hears of every input in order, and err holds
// both failures.
func TestReadAllGoesOnPastErrors(t *testing.T) {
	s, err := scan.New([]*kb.Entry{{ID: "cuda/illegal-address", Regex: `an illegal memory access was encountered`, RootCauseType: "specific"}})
	if err != nil {
		t.Fatal(err)
	}
	hit := "RuntimeError: CUDA error: an illegal memory access was encountered\n"
	gone := errors.New("no such file")
	torn := errors.New("disk on fire")
	inputs := []scan.Input{
		{Name: "rank0.log", Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("ok\n" + hit)), nil }},
		{Name: "rank1.log", Open: func() (io.ReadCloser, error) { return nil, gone }},
		{Name: "rank2.log", Open: func() (io.ReadCloser, error) {
			return io.NopCloser(io.MultiReader(strings.NewReader(hit), errReader{torn})), nil
		}},
		{Name: "rank3.log", Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(hit)), nil }},
	}
	var done []string
	rep, err := ReadAll(s, inputs, Options{Done: func(i int, st scan.Stats, err error) {
		done = append(done, fmt.Sprintf("%d %d %v", i, st.Lines, err))
	}})
	if !errors.Is(err, gone) || !errors.Is(err, torn) {
		t.Errorf("err = %v", err)
	}
	if want := []string{"0 2 <nil>", "1 0 no such file", "2 1 disk on fire", "3 1 <nil>"}; fmt.Sprint(done) != fmt.Sprint(want) {
		t.Errorf("Done saw %q, want %q", done, want)
	}
	if len(rep.Diagnoses) != 1 || rep.Diagnoses[0].Count != 3 || rep.Stats.Lines != 4 || rep.Stats.Files != 3 {
		t.Errorf("%d diagnoses, %+v", len(rep.Diagnoses), rep.Stats)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
