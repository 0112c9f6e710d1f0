package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/env"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// VersionsIn is check_versions' input.
type VersionsIn struct {
	Environment *env.Environment `json:"environment,omitempty" jsonschema:"installed versions as gpudx env --format json prints them (torch, cuda, driver, cudnn, nccl, python, packages, ...)"`
	Text        string           `json:"text,omitempty" jsonschema:"captured output that prints versions: gpudx env, nvidia-smi, python -m torch.utils.collect_env, pip list, or a job log (at most 64 MiB)"`
	Domain      string           `json:"domain,omitempty" jsonschema:"only entries of this domain (e.g. pytorch, cuda, driver)"`
}

// VersionsOut is check_versions' structured output.
type VersionsOut struct {
	Environment env.Environment `json:"environment" jsonschema:"the versions read from environment and text, merged (environment wins)"`
	Affected    []VersionHit    `json:"affected" jsonschema:"known problems the installed versions have: status upgrade (a newer release fixes it) or affected"`
	RuledOut    []VersionHit    `json:"ruled_out" jsonschema:"known problems the installed versions do not have: fixed_installed or not_affected"`
	Unknown     int             `json:"unknown" jsonschema:"version rows that could not be settled (the component's version is missing, or the row names no release)"`
}

// VersionHit is one entry's version row judged against the installed
// versions.
type VersionHit struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	diagnose.VersionNote
}

func (h *handlers) addVersions(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:  "check_versions",
		Title: "Which known problems the installed versions have",
		Description: `Given installed versions (the JSON of gpudx env --format json, or captured text that prints them: nvidia-smi, collect_env, pip list, a job log), say which known problems in the knowledge base affect them and which are fixed in them, from each entry's version table.
affected lists problems the installed release has (with the release that fixes them, when recorded); ruled_out lists problems fixed at or below the installed release, or introduced after it. Rows that cannot be settled (the version is not given) are counted in unknown.`,
		Annotations: readOnly(),
	}, h.versions)
}

func (h *handlers) versions(_ context.Context, in VersionsIn) (*VersionsOut, string, error) {
	var e env.Environment
	if in.Environment != nil {
		e = *in.Environment
	}
	if strings.TrimSpace(in.Text) != "" {
		if len(in.Text) > MaxLogBytes {
			return nil, "", fmt.Errorf("text is %d bytes; at most %d", len(in.Text), MaxLogBytes)
		}
		parsed, err := env.Parse(strings.NewReader(in.Text), "text")
		if err != nil {
			return nil, "", fmt.Errorf("text: %v", err)
		}
		e.Merge(parsed)
	}
	if e.IsZero() {
		return nil, "", errors.New("no versions: give environment (gpudx env --format json) or text that prints versions (nvidia-smi, collect_env, pip list, a log)")
	}
	out := &VersionsOut{Environment: e, Affected: []VersionHit{}, RuledOut: []VersionHit{}}
	for _, entry := range h.svc.Base().Entries() {
		if in.Domain != "" && entry.Domain != in.Domain {
			continue
		}
		notes, _ := diagnose.VersionNotes(entry, e)
		for _, n := range notes {
			hit := VersionHit{ID: entry.ID, Title: entry.Title, VersionNote: n}
			switch n.Status {
			case diagnose.Upgrade, diagnose.Affected:
				out.Affected = append(out.Affected, hit)
			case diagnose.FixedInstalled, diagnose.NotAffected:
				out.RuledOut = append(out.RuledOut, hit)
			default:
				out.Unknown++
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Affected: %d known problems.\n", len(out.Affected))
	for _, x := range out.Affected {
		fmt.Fprintf(&b, "- %s: %s\n", x.ID, x.Text)
	}
	fmt.Fprintf(&b, "Ruled out: %d.\n", len(out.RuledOut))
	for _, x := range out.RuledOut {
		fmt.Fprintf(&b, "- %s: %s\n", x.ID, x.Text)
	}
	if out.Unknown > 0 {
		fmt.Fprintf(&b, "%d version rows not settled (versions not given).\n", out.Unknown)
	}
	return out, b.String(), nil
}
