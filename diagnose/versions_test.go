package diagnose

import (
	"testing"

	"github.com/gpudx/gpudx/env"
	"github.com/gpudx/gpudx/kb"
)

func TestSplitRow(t *testing.T) {
	for in, want := range map[string][2]string{
		"PyTorch 1.8.0":                {"PyTorch", "1.8.0"},
		"NVIDIA driver R565":           {"NVIDIA driver", "565"},
		"NVIDIA driver 418.43 (Linux)": {"NVIDIA driver", "418.43"},
		"flash-attn 2.x":               {"flash-attn", "2.x"},
		"CUDA 12.4":                    {"CUDA", "12.4"},
	} {
		c, v, ok := splitRow(in)
		if !ok || c != want[0] || v != want[1] {
			t.Errorf("splitRow(%q) = %q %q %v", in, c, v, ok)
		}
	}
}

// fixedRow is a "fixed" row; an empty introduced or removed is left out.
func fixedRow(version, introduced, removed string) kb.Version {
	r := kb.Version{Version: version, Status: "fixed"}
	if introduced != "" {
		r.Introduced = ptr(introduced)
	}
	if removed != "" {
		r.Removed = ptr(removed)
	}
	return r
}

// TestVersionNotes: one fixed row against the installed versions, with
// the exact status and text (and zh where it is the point).
func TestVersionNotes(t *testing.T) {
	tests := []struct {
		name    string
		row     kb.Version
		env     env.Environment
		status  string
		fixedIn string
		text    string
		zh      string
	}{
		{"fixed, installed newer", fixedRow("PyTorch 1.8.0", "", "1.8.1"), env.Environment{Torch: "2.1.0+cu121"},
			FixedInstalled, "1.8.1", "PyTorch 1.8.1 fixed the PyTorch 1.8.0 problem; 2.1.0+cu121 is installed, so that cause is ruled out.",
			"PyTorch 1.8.1 已修复 PyTorch 1.8.0 的问题；已安装 2.1.0+cu121，可排除这一原因。"},
		{"fixed, installed is the fix", fixedRow("PyTorch 1.8.0", "", "1.8.1"), env.Environment{Torch: "1.8.1"},
			FixedInstalled, "1.8.1", "PyTorch 1.8.1 fixed the PyTorch 1.8.0 problem; 1.8.1 is installed, so that cause is ruled out.", ""},
		{"fixed with component name", fixedRow("PyTorch 2.3.0", "PyTorch 2.3.0", "PyTorch 2.3.1"), env.Environment{Torch: "2.4.0"},
			FixedInstalled, "2.3.1", "PyTorch 2.3.1 fixed the PyTorch 2.3.0 problem; 2.4.0 is installed, so that cause is ruled out.", ""},
		{"fixed, installed older: upgrade", fixedRow("PyTorch 1.8.0", "", "1.8.1"), env.Environment{Torch: "1.8.0"},
			Upgrade, "1.8.1", "Installed PyTorch 1.8.0 is older than the fix: upgrade to PyTorch 1.8.1 or newer.",
			"已安装的 PyTorch 1.8.0 早于修复版本：请升级到 PyTorch 1.8.1 或更新版本。"},
		{"introduced, installed affected: upgrade", fixedRow("PyTorch 2.3.0", "2.3.0", "2.3.1"), env.Environment{Torch: "2.3.0+cu121"},
			Upgrade, "2.3.1", "Installed PyTorch 2.3.0+cu121 is older than the fix: upgrade to PyTorch 2.3.1 or newer.", ""},
		{"installed older than introduced", fixedRow("PyTorch 2.3.0", "2.3.0", "2.3.1"), env.Environment{Torch: "2.1.0"},
			NotAffected, "2.3.1", "Installed PyTorch 2.1.0 predates the PyTorch 2.3.0 problem (introduced in 2.3.0), so that cause is ruled out.",
			"已安装的 PyTorch 2.1.0 早于 PyTorch 2.3.0 的问题（始于 2.3.0），可排除这一原因。"},
		{"driver older than introduced", fixedRow("NVIDIA driver R565", "R565", "570"), env.Environment{Driver: "550.54.15"},
			NotAffected, "570", "Installed NVIDIA driver 550.54.15 predates the NVIDIA driver 565 problem (introduced in 565), so that cause is ruled out.", ""},
		{"driver affected: upgrade", fixedRow("NVIDIA driver R565", "R565", "570"), env.Environment{Driver: "565.57.01"},
			Upgrade, "570", "Installed NVIDIA driver 565.57.01 is older than the fix: upgrade to NVIDIA driver 570 or newer.", ""},
		{"driver fixed", fixedRow("NVIDIA driver R565", "R565", "570"), env.Environment{Driver: "570.86.10"},
			FixedInstalled, "570", "NVIDIA driver 570 fixed the NVIDIA driver 565 problem; 570.86.10 is installed, so that cause is ruled out.", ""},
		{"removed main", fixedRow("PyTorch 2.2.0", "", "main"), env.Environment{Torch: "2.5.1"},
			VersionUnknown, "main", `PyTorch 2.2.0 was affected; the fix is recorded as "main", not a release, so whether installed 2.5.1 carries it is not known.`,
			`PyTorch 2.2.0 受影响；修复记为 "main"，不是发布版本，因此无法判断已安装的 2.5.1 是否包含该修复。`},
		{"removed 2.x", fixedRow("PyTorch 1.0", "", "2.x"), env.Environment{Torch: "2.5.1"},
			VersionUnknown, "2.x", `PyTorch 1.0 was affected; the fix is recorded as "2.x", not a release, so whether installed 2.5.1 carries it is not known.`, ""},
		{"removed nightly", fixedRow("PyTorch 2.1.0", "", "PyTorch 2.2 (nightly)"), env.Environment{Torch: "2.5.1"},
			VersionUnknown, "2.2", `PyTorch 2.1.0 was affected; the fix is recorded as "2.2", not a release, so whether installed 2.5.1 carries it is not known.`, ""},
		{"removed main, installed older than introduced", fixedRow("PyTorch 2.3.0", "2.3.0", "main"), env.Environment{Torch: "2.1.0"},
			NotAffected, "main", "Installed PyTorch 2.1.0 predates the PyTorch 2.3.0 problem (introduced in 2.3.0), so that cause is ruled out.", ""},
		{"introduced unparseable", fixedRow("PyTorch 2.3.0", "2.x", "2.3.1"), env.Environment{Torch: "2.1.0"},
			VersionUnknown, "2.3.1", `PyTorch 2.3.0 was affected, but the release that introduced it is recorded as "2.x", not a version, so whether installed 2.1.0 is affected is not known.`, ""},
		{"known, unaffected, no fix release", fixedRow("PyTorch 1.8.1", "", ""), env.Environment{Torch: "2.5.1"},
			VersionUnknown, "", "PyTorch 1.8.1 was affected; installed 2.5.1 is a different release, and no fix release is recorded.",
			"PyTorch 1.8.1 受影响；已安装的 2.5.1 是另一个版本，且没有记录修复版本。"},
		{"known, affected, no fix release", fixedRow("PyTorch 1.8.1", "", ""), env.Environment{Torch: "1.8.1+cu111"},
			Affected, "", "Installed PyTorch 1.8.1+cu111 is the affected release; a later release fixes it.", ""},
		{"unknown installed, fix recorded", fixedRow("PyTorch 1.8.0", "", "1.8.1"), env.Environment{CUDA: "12.4"},
			VersionUnknown, "1.8.1", "PyTorch 1.8.0 is affected and 1.8.1 fixes it; the installed version is not known.",
			"PyTorch 1.8.0 受影响，1.8.1 已修复；未知已安装的版本。"},
		{"unknown installed, no fix", fixedRow("PyTorch 1.8.1", "", ""), env.Environment{},
			VersionUnknown, "", "PyTorch 1.8.1 is affected; the installed version is not known.",
			"PyTorch 1.8.1 受影响；未知已安装的版本。"},
		{"unknown installed, fix main", fixedRow("PyTorch 2.2.0", "", "main"), env.Environment{},
			VersionUnknown, "main", `PyTorch 2.2.0 is affected; the fix is recorded as "main", and the installed version is not known.`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			notes, _ := versionNotes(&kb.Entry{Versions: []kb.Version{tt.row}}, tt.env)
			if len(notes) != 1 {
				t.Fatalf("notes %+v", notes)
			}
			n := notes[0]
			if n.Status != tt.status || n.FixedIn != tt.fixedIn || n.Text != tt.text {
				t.Errorf("got %q fixed_in %q %q\nwant %q fixed_in %q %q", n.Status, n.FixedIn, n.Text, tt.status, tt.fixedIn, tt.text)
			}
			if tt.zh != "" && n.Zh != tt.zh {
				t.Errorf("zh %q, want %q", n.Zh, tt.zh)
			}
			if n.Zh == "" {
				t.Error("zh empty")
			}
		})
	}
}

// TestFixedForYou: true only when every current row is ruled out by the
// installed versions (fixed there, or not yet introduced).
func TestFixedForYou(t *testing.T) {
	active := kb.Version{Version: "CUDA 12.4", Status: "active"}
	deprecated := kb.Version{Version: "PyTorch 1.0", Status: "deprecated"}
	torch := env.Environment{Torch: "2.1.0", Driver: "550.54.15"}
	tests := []struct {
		name string
		rows []kb.Version
		want bool
	}{
		{"fixed installed", []kb.Version{fixedRow("PyTorch 1.8.0", "", "1.8.1")}, true},
		{"not affected", []kb.Version{fixedRow("PyTorch 2.3.0", "2.3.0", "2.3.1")}, true},
		{"fixed and not affected", []kb.Version{fixedRow("PyTorch 1.8.0", "", "1.8.1"), fixedRow("NVIDIA driver R565", "R565", "570")}, true},
		{"fixed beside deprecated", []kb.Version{deprecated, fixedRow("PyTorch 1.8.0", "", "1.8.1")}, true},
		{"fixed beside active", []kb.Version{fixedRow("PyTorch 1.8.0", "", "1.8.1"), active}, false},
		{"upgrade", []kb.Version{fixedRow("PyTorch 2.0.0", "", "2.1.1")}, false},
		{"fixed and upgrade", []kb.Version{fixedRow("PyTorch 1.8.0", "", "1.8.1"), fixedRow("NVIDIA driver 535", "", "555")}, false},
		{"removed main", []kb.Version{fixedRow("PyTorch 1.8.0", "", "main")}, false},
		{"no fix release", []kb.Version{fixedRow("PyTorch 1.8.1", "", "")}, false},
		{"installed unknown", []kb.Version{fixedRow("cuDNN 8.0", "", "8.1")}, false},
		{"no rows", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			notes, got := versionNotes(&kb.Entry{Versions: tt.rows}, torch)
			if got != tt.want {
				t.Errorf("fixedForYou = %v, want %v (notes %+v)", got, tt.want, notes)
			}
		})
	}
}
