package memview

import (
	"bytes"
	"testing"

	"github.com/google/pprof/profile"
)

// TestPprofRoundTrip writes the profile, parses it back and checks its
// totals and stacks exactly.
func TestPprofRoundTrip(t *testing.T) {
	s := oomSnapshot()
	var b bytes.Buffer
	if err := Pprof(&b, s, "gpudx mem test"); err != nil {
		t.Fatal(err)
	}
	if raw := b.Bytes(); len(raw) < 2 || raw[0] != 0x1f || raw[1] != 0x8b {
		t.Fatal("the profile is not gzipped")
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 2 || p.SampleType[0].Type != "inuse_space" || p.SampleType[0].Unit != "bytes" ||
		p.SampleType[1].Type != "inuse_objects" || p.SampleType[1].Unit != "count" {
		t.Fatalf("sample types %v %v", p.SampleType[0], p.SampleType[1])
	}
	// Live blocks: 8 MiB (stack 1), 6 MiB (stack 2), 512 KiB allocated and
	// 512 KiB pending free (stack 3), 10 MiB without a stack.
	var bytesTotal, count int64
	bySite := map[string][2]int64{}
	for _, smp := range p.Sample {
		bytesTotal += smp.Value[0]
		count += smp.Value[1]
		inner := smp.Location[0].Line[0]
		bySite[inner.Function.Name] = [2]int64{smp.Value[0], smp.Value[1]}
	}
	if bytesTotal != 25*MiB || count != 5 {
		t.Errorf("totals %d bytes %d blocks, want %d and 5", bytesTotal, count, 25*MiB)
	}
	if len(p.Sample) != 4 {
		t.Errorf("%d samples, want one per distinct stack (4)", len(p.Sample))
	}
	for name, want := range map[string][2]int64{
		"c10::cuda::CUDACachingAllocator::malloc": {8 * MiB, 1},
		"__init__":            {6 * MiB, 1},
		"collate":             {1 * MiB, 2},
		"<no stack recorded>": {10 * MiB, 1},
	} {
		if got := bySite[name]; got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	// Innermost first, hidden interpreter frames dropped, lines kept.
	for _, smp := range p.Sample {
		if smp.Location[0].Line[0].Function.Name != "c10::cuda::CUDACachingAllocator::malloc" {
			continue
		}
		var got []string
		for _, l := range smp.Location {
			got = append(got, l.Line[0].Function.Name)
		}
		want := []string{"c10::cuda::CUDACachingAllocator::malloc", "linear", "forward", "train_step"}
		if len(got) != len(want) {
			t.Fatalf("stack %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("stack %v, want %v", got, want)
			}
		}
		if l := smp.Location[2].Line[0]; l.Line != 42 || l.Function.Filename != "/home/me/train/model.py" {
			t.Errorf("forward frame %+v", l)
		}
	}
	if len(p.Comments) != 1 || p.Comments[0] != "gpudx mem test" {
		t.Errorf("comments %v", p.Comments)
	}
}
