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
//   - "not_affected": the installed release is older than the one that
//     introduced the problem, so that cause is ruled out too;
//   - "upgrade": the installed release is older than the fix (and not
//     older than the release that introduced the problem);
//   - "affected": the installed release is the affected one and the
//     table names no fix;
//   - "unknown": the installed version is not known, or the row cannot
//     settle it: its fix or first affected release is not a version
//     ("main", "2.x"), or no fix is recorded and the installed release is
//     not the affected one. Text says which.
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
	NotAffected    = "not_affected"
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

// rowBound is a row's "introduced" or "removed" value: text is what the
// row says with any component name stripped ("PyTorch 2.3.1" -> "2.3.1",
// "R565" -> "565"); set when the row gives one; ok when it parses.
type rowBound struct {
	text string
	v    facts.V
	set  bool
	ok   bool
}

// parseBound reads a row's "introduced" or "removed". A qualifier after
// the version ("2.2 (nightly)") makes it unparseable, as do "main" and
// "2.x": such a row cannot rule anything in or out.
func parseBound(p *string) rowBound {
	if p == nil || strings.TrimSpace(*p) == "" {
		return rowBound{}
	}
	b := rowBound{text: bare(*p), set: true}
	t := strings.TrimSpace(*p)
	if m := reRow.FindStringSubmatchIndex(t); m != nil {
		t = t[m[4]:] // from the version on, with what follows it
	} else {
		t = strings.TrimPrefix(t, "R")
	}
	if v, err := facts.ParseVersion(t); err == nil {
		b.v, b.ok = v, true
	}
	return b
}

// versionNotes compares the rows marked "fixed" with the installed
// versions. fixedForYou is true when the entry's only current rows are
// ones the installed versions rule out (fixed there, or not yet
// introduced): then this diagnosis is unlikely to be the cause, and ranks
// lower.
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
		intro, fix := parseBound(row.Introduced), parseBound(row.Removed)
		n := VersionNote{Component: comp, Affected: affected, FixedIn: fix.text, Status: VersionUnknown}
		inst, known := environment.Version(comp)
		if known {
			n.Installed = inst.String()
		}
		switch {
		case !known:
			n.Text, n.Zh = unknownInstalled(comp, affected, fix)
		case fix.ok && facts.Compare(inst, fix.v) >= 0:
			n.Status = FixedInstalled
			n.Text = fmt.Sprintf("%s %s fixed the %s %s problem; %s is installed, so that cause is ruled out.", comp, fix.text, comp, affected, n.Installed)
			n.Zh = fmt.Sprintf("%s %s 已修复 %s %s 的问题；已安装 %s，可排除这一原因。", comp, fix.text, comp, affected, n.Installed)
		case intro.ok && facts.Compare(inst, intro.v) < 0:
			n.Status = NotAffected
			n.Text = fmt.Sprintf("Installed %s %s predates the %s %s problem (introduced in %s), so that cause is ruled out.", comp, n.Installed, comp, affected, intro.text)
			n.Zh = fmt.Sprintf("已安装的 %s %s 早于 %s %s 的问题（始于 %s），可排除这一原因。", comp, n.Installed, comp, affected, intro.text)
		case fix.set && !fix.ok:
			n.Text = fmt.Sprintf("%s %s was affected; the fix is recorded as %q, not a release, so whether installed %s carries it is not known.", comp, affected, fix.text, n.Installed)
			n.Zh = fmt.Sprintf("%s %s 受影响；修复记为 %q，不是发布版本，因此无法判断已安装的 %s 是否包含该修复。", comp, affected, fix.text, n.Installed)
		case fix.ok && (!intro.set || intro.ok || sameRelease(inst, affected)):
			n.Status = Upgrade
			n.Text = fmt.Sprintf("Installed %s %s is older than the fix: upgrade to %s %s or newer.", comp, n.Installed, comp, fix.text)
			n.Zh = fmt.Sprintf("已安装的 %s %s 早于修复版本：请升级到 %s %s 或更新版本。", comp, n.Installed, comp, fix.text)
		case !fix.set && sameRelease(inst, affected):
			n.Status = Affected
			n.Text = fmt.Sprintf("Installed %s %s is the affected release; a later release fixes it.", comp, n.Installed)
			n.Zh = fmt.Sprintf("已安装的 %s %s 正是受影响的版本；之后的版本已修复。", comp, n.Installed)
		case intro.set && !intro.ok:
			n.Text = fmt.Sprintf("%s %s was affected, but the release that introduced it is recorded as %q, not a version, so whether installed %s is affected is not known.", comp, affected, intro.text, n.Installed)
			n.Zh = fmt.Sprintf("%s %s 受影响，但引入该问题的版本记为 %q，不是版本号，因此无法判断已安装的 %s 是否受影响。", comp, affected, intro.text, n.Installed)
		default:
			n.Text = fmt.Sprintf("%s %s was affected; installed %s is a different release, and no fix release is recorded.", comp, affected, n.Installed)
			n.Zh = fmt.Sprintf("%s %s 受影响；已安装的 %s 是另一个版本，且没有记录修复版本。", comp, affected, n.Installed)
		}
		if n.Status == FixedInstalled || n.Status == NotAffected {
			fixedHere++
		}
		notes = append(notes, n)
	}
	return notes, fixedHere > 0 && fixedHere == current
}

// unknownInstalled is the note for a component whose installed version is
// not known. It names the affected release and the fix, and does not
// claim that older releases are affected.
func unknownInstalled(comp, affected string, fix rowBound) (text, zh string) {
	switch {
	case fix.ok:
		return fmt.Sprintf("%s %s is affected and %s fixes it; the installed version is not known.", comp, affected, fix.text),
			fmt.Sprintf("%s %s 受影响，%s 已修复；未知已安装的版本。", comp, affected, fix.text)
	case fix.set:
		return fmt.Sprintf("%s %s is affected; the fix is recorded as %q, and the installed version is not known.", comp, affected, fix.text),
			fmt.Sprintf("%s %s 受影响；修复记为 %q；未知已安装的版本。", comp, affected, fix.text)
	}
	return fmt.Sprintf("%s %s is affected; the installed version is not known.", comp, affected),
		fmt.Sprintf("%s %s 受影响；未知已安装的版本。", comp, affected)
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

// VersionNotes compares an entry's version rows marked "fixed" with the
// installed versions, as a diagnosis does (see VersionNote); fixedForYou
// is true when the installed versions rule out every current row.
func VersionNotes(e *kb.Entry, environment env.Environment) (notes []VersionNote, fixedForYou bool) {
	return versionNotes(e, environment)
}
