package facts

import (
	"encoding/json"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, text string
		want       Fact
	}{
		// Sizes as PyTorch, XLA, TensorFlow and Triton print them.
		{"requested", "2.00 GiB", Fact{Size, "2.00 GiB", 2 << 30}},
		{"free", "512.00 MiB", Fact{Size, "512.00 MiB", 512 << 20}},
		{"reserved_unallocated", "1.25 GiB", Fact{Size, "1.25 GiB", 1342177280}},
		{"total_capacity", "79.15 GiB", Fact{Size, "79.15 GiB", 84986665370}},
		{"requested", "1.5 GB", Fact{Size, "1.5 GB", 1.5e9}},
		{"capability", "12.0", Fact{Type: Version, Text: "12.0"}},
		{"min_capability", "3.7", Fact{Type: Version, Text: "3.7"}},
		{"requested", "8192 bytes", Fact{Size, "8192 bytes", 8192}},
		{"requested", "17179869184", Fact{Size, "17179869184", 17179869184}},
		{"required", "131072", Fact{Size, "131072", 131072}},
		{"in_use", "20.00 KiB", Fact{Size, "20.00 KiB", 20480}},
		// A size by shape under a name that does not say so.
		{"mem", "4.66 GiB", Fact{Size, "4.66 GiB", 5003636900}},
		// Integers.
		{"gpu", "2", Fact{Int, "2", 2}},
		{"rank", "13", Fact{Int, "13", 13}},
		{"pid", "139832", Fact{Int, "139832", 139832}},
		{"xid", "79", Fact{Int, "79", 79}},
		{"seq", "1234", Fact{Int, "1234", 1234}},
		{"exitcode", "-9", Fact{Int, "-9", -9}},
		// Durations, in milliseconds.
		{"timeout_ms", "600000", Fact{Duration, "600000", 600000}},
		{"elapsed_ms", "600023", Fact{Duration, "600023", 600023}},
		{"timeout", "1800 seconds", Fact{Duration, "1800 seconds", 1800000}},
		{"timeout_s", "901", Fact{Duration, "901", 901000}},
		{"wait", "600000 milliseconds", Fact{Duration, "600000 milliseconds", 600000}},
		// Versions stay text; names stay text.
		{"driver_version", "535.104.05", Fact{Type: Version, Text: "535.104.05"}},
		{"nccl_version", "2.21.5+cuda12.4", Fact{Type: Version, Text: "2.21.5+cuda12.4"}},
		{"version", "2.1.0+cu121", Fact{Type: Version, Text: "2.1.0+cu121"}},
		{"op_type", "ALLREDUCE", Fact{Type: Text, Text: "ALLREDUCE"}},
		{"pci_bus_id", "0000:3b:00", Fact{Type: Text, Text: "0000:3b:00"}},
		{"process_name", "python", Fact{Type: Text, Text: "python"}},
		// A name that promises a number but holds none stays text.
		{"gpu", "cuda:0", Fact{Type: Text, Text: "cuda:0"}},
		{"requested", "lots", Fact{Type: Text, Text: "lots"}},
		{"driver_version", "unknown", Fact{Type: Text, Text: "unknown"}},
	}
	for _, tt := range tests {
		if got := Parse(tt.name, tt.text); got != tt.want {
			t.Errorf("Parse(%q, %q) = %+v, want %+v", tt.name, tt.text, got, tt.want)
		}
	}
}

func TestFactJSONAndString(t *testing.T) {
	for _, tt := range []struct {
		f          Fact
		json, text string
	}{
		{Parse("requested", "2.00 GiB"), `{"type":"size","text":"2.00 GiB","value":2147483648}`, "2.00 GiB"},
		{Parse("requested", "8192 bytes"), `{"type":"size","text":"8192 bytes","value":8192}`, "8.00 KiB"},
		{Parse("timeout_ms", "600000"), `{"type":"duration","text":"600000","value":600000}`, "10 min"},
		{Parse("timeout", "1.5 s"), `{"type":"duration","text":"1.5 s","value":1500}`, "1.5 s"},
		{Parse("rank", "3"), `{"type":"int","text":"3","value":3}`, "3"},
		{Parse("version", "12.4.131"), `{"type":"version","text":"12.4.131","value":"12.4.131"}`, "12.4.131"},
	} {
		b, err := json.Marshal(tt.f)
		if err != nil || string(b) != tt.json {
			t.Errorf("json %s, %v; want %s", b, err, tt.json)
		}
		if s := tt.f.String(); s != tt.text {
			t.Errorf("String() = %q, want %q", s, tt.text)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[float64]string{0: "0 B", 1023: "1023 B", 1024: "1.00 KiB",
		1.3 * (1 << 30): "1.30 GiB", 20 << 30: "20.00 GiB", 3 << 40: "3.00 TiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%v) = %q, want %q", n, got, want)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"2.1.0+cu121", "2.1.0", 0},
		{"2.1.0+cu121", "2.1.0+cu118", 0},
		{"2.1", "2.1.0", 0},
		{"2.10.0", "2.9.1", 1},
		{"2.5.0a0+git1234", "2.5.0", -1},
		{"2.5.0rc1", "2.5.0", -1},
		{"2.5.0.dev20240901", "2.5.0a0", -1},
		{"2.5.0rc2", "2.5.0rc10", -1},
		{"12.4.131", "12.4", 1},
		{"535.104.05", "535.104.5", 0},
		{"535.104.05", "550.54.15", -1},
		{"2.21.5+cuda12.4", "2.18.1", 1},
		{"9.1.0.70", "9.1.0", 1},
		{"v0.4.35", "0.4.35", 0},
	}
	for _, tt := range tests {
		got, err := CompareStrings(tt.a, tt.b)
		if err != nil || got != tt.want {
			t.Errorf("Compare(%s, %s) = %d, %v; want %d", tt.a, tt.b, got, err, tt.want)
		}
		if back, _ := CompareStrings(tt.b, tt.a); back != -tt.want {
			t.Errorf("Compare(%s, %s) = %d, want %d", tt.b, tt.a, back, -tt.want)
		}
	}
	for _, bad := range []string{"", "abc", "1..2", "2.x"} {
		if _, err := ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q) accepted", bad)
		}
	}
}

// Computed figures are typed by name like printed ones.
func TestFromNumber(t *testing.T) {
	for _, tt := range []struct {
		name string
		v    float64
		want Fact
	}{
		{"other_processes", 21474836480, Fact{Size, "20.00 GiB", 21474836480}},
		{"requested", 4 << 30, Fact{Size, "4.00 GiB", 4 << 30}},
		{"gpu", 2, Fact{Int, "2", 2}},
		{"timeout_ms", 600000, Fact{Duration, "10 min", 600000}},
	} {
		if got := FromNumber(tt.name, tt.v); got != tt.want {
			t.Errorf("FromNumber(%q, %v) = %+v, want %+v", tt.name, tt.v, got, tt.want)
		}
	}
}
