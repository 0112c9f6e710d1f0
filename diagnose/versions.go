package diagnose

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gpudx/gpudx/env"
	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/kb"
)

// VersionNote is what one row of an entry's version table means for the
// installed versions. Status is:
//   - "fixed_installed": the row's problem is fixed in a release at or
//     below the installed one, so that cause is ruled out;
//   - "upgrade": the installed release is older than the fix;
//   - "affected": the installed release is the affected one and the
//     table names no fix;
//   - "unknown": the component's installed version is not known.
type VersionNote struct {
	Component string `json:"component"`
	Affected  string `json:"affected"`
	FixedIn   string `json:"fixed_in,omitempty"`
	Installed string `json:"installed,omitempty"`
	Status    string `json:"status"`
	Text      string `json:"text"`
	Zh        string `json:"zh"`
}

// Version note statuses.
const (
	FixedInstalled = "fixed_installed"
	Upgrade        = "upgrade"
	Affected       = "affected"
	VersionUnknown = "unknown"
)

// reRow splits a version row's "Component X.Y" (also "NVIDIA driver R565",
// "PyTorch 1.x", "flash-attn 2.x (Linux)").
var reRow = regexp.MustCompile(`^(.*?)\s+[Rv]?([0-9]+(?:\.[0-9A-Za-z]+)*)`)

// splitRow returns a row's component and version.
func splitRow(s string) (component, version string, ok bool) {
	m := reRow.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// bare strips a component name from a version ("PyTorch 1.8.1" -> "1.8.1").
func bare(s string) string {
	if _, v, ok := splitRow(s); ok {
		return v
	}
	return strings.TrimPrefix(strings.TrimSpace(s), "R")
}

// versionNotes compares the rows marked "fixed" with the installed
// versions. fixedForYou is true when the entry's only current rows are
// fixes the installed versions already carry: then this diagnosis is
// unlikely to be the cause, and ranks lower.
func versionNotes(e *kb.Entry, environment env.Environment) (notes []VersionNote, fixedForYou bool) {
	current, fixedHere := 0, 0
	for _, row := range e.Versions {
		if row.Status == "active" || row.Status == "fixed" {
			current++
		}
		if row.Status != "fixed" {
			continue
		}
		comp, affected, ok := splitRow(row.Version)
		if !ok {
			continue
		}
		n := VersionNote{Component: comp, Affected: affected, Status: VersionUnknown}
		if row.Removed != nil && *row.Removed != "" {
			n.FixedIn = bare(*row.Removed)
		}
		inst, known := environment.Version(comp)
		if known {
			n.Installed = inst.String()
		}
		switch {
		case known && n.FixedIn != "" && cmpVersion(inst, n.FixedIn) >= 0:
			n.Status = FixedInstalled
			fixedHere++
			n.Text = fmt.Sprintf("%s %s fixed the %s %s problem; %s is installed, so that cause is ruled out.", comp, n.FixedIn, comp, affected, n.Installed)
			n.Zh = fmt.Sprintf("%s %s 已修复 %s %s 的问题；已安装 %s，可排除这一原因。", comp, n.FixedIn, comp, affected, n.Installed)
		case known && n.FixedIn != "":
			n.Status = Upgrade
			n.Text = fmt.Sprintf("Installed %s %s is older than the fix: upgrade to %s %s or newer.", comp, n.Installed, comp, n.FixedIn)
			n.Zh = fmt.Sprintf("已安装的 %s %s 早于修复版本：请升级到 %s %s 或更新版本。", comp, n.Installed, comp, n.FixedIn)
		case known && sameRelease(inst, affected):
			n.Status = Affected
			n.Text = fmt.Sprintf("Installed %s %s is the affected release; a later release fixes it.", comp, n.Installed)
			n.Zh = fmt.Sprintf("已安装的 %s %s 正是受影响的版本；之后的版本已修复。", comp, n.Installed)
		case n.FixedIn != "":
			n.Text = fmt.Sprintf("If you run %s %s or older than %s, upgrade to %s %s.", comp, affected, n.FixedIn, comp, n.FixedIn)
			n.Zh = fmt.Sprintf("如果你使用的是 %s %s（早于 %s），请升级到 %s %s。", comp, affected, n.FixedIn, comp, n.FixedIn)
		default:
			n.Text = fmt.Sprintf("%s %s is affected; the installed version is not known.", comp, affected)
			n.Zh = fmt.Sprintf("%s %s 受影响；未知已安装的版本。", comp, affected)
		}
		notes = append(notes, n)
	}
	return notes, fixedHere > 0 && fixedHere == current
}

func cmpVersion(v facts.V, s string) int {
	w, err := facts.ParseVersion(s)
	if err != nil {
		return 0
	}
	return facts.Compare(v, w)
}

// sameRelease: "1.8.0+cu111" is release "1.8.0" and also "1.8"; "1.x"
// matches any 1.
func sameRelease(v facts.V, affected string) bool {
	parts := strings.Split(affected, ".")
	got := strings.Split(strings.SplitN(v.String(), "+", 2)[0], ".")
	for i, p := range parts {
		if p == "x" || p == "X" {
			return true
		}
		if i >= len(got) || strings.TrimLeft(got[i], "0") != strings.TrimLeft(p, "0") {
			return false
		}
	}
	return true
}
