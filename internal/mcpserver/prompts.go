package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompts for the common tasks: each returns one user message that names
// the tools to call, in order, with the user's material attached.

func (h *handlers) addPrompts(s *mcp.Server) {
	s.AddPrompt(&mcp.Prompt{
		Name:        "diagnose_job",
		Title:       "Diagnose a failed GPU job",
		Description: "Find the root cause of a failed GPU job from its output, say what not to try and what to do.",
		Arguments: []*mcp.PromptArgument{
			{Name: "log", Description: "the job's output (or its tail), pasted", Required: false},
			{Name: "path", Description: "path of the job's log file, where the server can read files (stdio)", Required: false},
		},
	}, h.promptDiagnose)
	s.AddPrompt(&mcp.Prompt{
		Name:        "explain_oom",
		Title:       "Explain a CUDA out-of-memory error",
		Description: "Explain why a CUDA out-of-memory error happened from its message (and a memory snapshot when there is one) and what frees memory.",
		Arguments: []*mcp.PromptArgument{
			{Name: "message", Description: "the out-of-memory message, e.g. 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...'", Required: true},
			{Name: "snapshot_path", Description: "path of a torch.cuda.memory._dump_snapshot pickle, if any", Required: false},
		},
	}, h.promptOOM)
	s.AddPrompt(&mcp.Prompt{
		Name:        "node_health",
		Title:       "Is this GPU node healthy?",
		Description: "Judge from a node's kernel log (dmesg or journalctl -k) whether it should be drained, per the Xid events' operator rules.",
		Arguments: []*mcp.PromptArgument{
			{Name: "kernel_log", Description: "the node's kernel log (dmesg -T or journalctl -k -b), pasted", Required: true},
		},
	}, h.promptNode)
}

func userPrompt(desc, text string) *mcp.GetPromptResult {
	return &mcp.GetPromptResult{Description: desc, Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}
}

func (h *handlers) promptDiagnose(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	log, path := strings.TrimSpace(req.Params.Arguments["log"]), strings.TrimSpace(req.Params.Arguments["path"])
	var src string
	switch {
	case log != "" && path != "":
		return nil, fmt.Errorf("give log or path, not both")
	case log != "":
		src = "Call diagnose_log with this output as \"log\":\n\n```\n" + log + "\n```"
	case path != "":
		src = fmt.Sprintf("Call diagnose_log with \"path\": %q.", path)
	default:
		return nil, fmt.Errorf("give the job's output in log, or its file in path")
	}
	return userPrompt("Diagnose a failed GPU job", `My GPU job failed. `+src+`

Then:
1. Name the root cause (the first diagnosis marked root) in one sentence, with the log line that shows it.
2. List the dead ends before anything else, so I do not waste time on them.
3. Give the workarounds whose condition holds, best success rate first, with the exact command or setting.
4. If several known errors appear, call error_chain on the root one to separate causes from symptoms; if versions matter, call check_versions with the versions the report found.
After I try something, report it with report_outcome.`), nil
}

func (h *handlers) promptOOM(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	msg := strings.TrimSpace(req.Params.Arguments["message"])
	if msg == "" {
		return nil, fmt.Errorf("message is required: the out-of-memory error text")
	}
	text := "My job ran out of GPU memory:\n\n```\n" + msg + "\n```\n\nCall diagnose_log with this message as \"log\": its memory section gives the arithmetic (requested, free, held by PyTorch, reserved but unallocated, held by other processes) and a verdict."
	if p := strings.TrimSpace(req.Params.Arguments["snapshot_path"]); p != "" {
		text += fmt.Sprintf(" Then call analyze_memory_snapshot with \"path\": %q to see which code holds the memory and why the request could not fit.", p)
	}
	text += "\n\nExplain in plain words whether this is fragmentation, another process, or a real shortage, and give the fix that matches (with the exact setting, e.g. PYTORCH_CUDA_ALLOC_CONF), dead ends first."
	return userPrompt("Explain a CUDA out-of-memory error", text), nil
}

func (h *handlers) promptNode(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	kl := strings.TrimSpace(req.Params.Arguments["kernel_log"])
	if kl == "" {
		return nil, fmt.Errorf("kernel_log is required: the node's dmesg or journalctl -k output")
	}
	return userPrompt("Is this GPU node healthy?", "Is this GPU node healthy? Its kernel log:\n\n```\n"+kl+"\n```\n\n"+
		`Call diagnose_log with this log as "log". For each Xid or driver event found, read its operator block (get_entry): severity, whose fault, drain (yes: drain now; if_repeats: only when it recurs on the same GPU, by PCI bus id; no) and NVIDIA's resolution bucket.
Answer first: drain or keep the node, and why, per GPU. Then the operator's next step for each event. On the node itself, 'gpudx check' gives the same verdict, and deploy/ has its node-problem-detector and Slurm/NHC integrations.`), nil
}
