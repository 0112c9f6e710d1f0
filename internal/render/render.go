// Package render writes diagnosis reports for people (terminal text,
// markdown to paste into an issue) and for machines (JSON), in English or
// Chinese. It computes nothing: every figure comes from the report.
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/kb"
)

// Options shape the human-readable outputs.
type Options struct {
	Lang    string // "en" (default) or "zh"
	Color   bool   // ANSI colours for a terminal
	Explain bool   // say why each diagnosis is ranked where it is
}

// JSON writes the report as one indented JSON object (docs/json-output.md).
func JSON(w io.Writer, r *diagnose.Report) error { return WriteJSON(w, r) }

// WriteJSON writes v as indented JSON, with <, > and & left as they are
// (messages quote them).
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// labels holds the fixed words of the outputs per language.
var labels = map[string]map[string]string{
	"en": {
		"none":              "No known GPU error found",
		"unrecognized":      "Not in the knowledge base, looks like the failure:",
		"groups":            "%d unrelated jobs (their errors are not linked)",
		"nearest":           "nearest entry",
		"sure_close":        "close: it names the same error",
		"sure_related":      "related: most words match",
		"sure_weak":         "weak: a few words match",
		"sure_none":         "none",
		"found":             "%d known error(s) found",
		"read":              "read %s lines, %s bytes; %d entries checked",
		"root":              "ROOT CAUSE",
		"followup":          "FOLLOWS FROM %s",
		"also":              "ALSO FOUND",
		"what":              "What went wrong",
		"evidence":          "Evidence",
		"facts":             "Facts",
		"operator":          "Operator",
		"sev.critical":      "critical: GPU or node unusable until acted on",
		"sev.error":         "error: the job died, the GPU may be fine",
		"sev.warning":       "warning: degraded or a precursor",
		"sev.info":          "info: recorded, no action",
		"fault.hardware":    "hardware fault",
		"fault.application": "the application's fault",
		"fault.driver":      "driver or firmware fault",
		"fault.either":      "application or hardware (see above)",
		"drain.yes":         "drain the node",
		"drain.no":          "no need to drain",
		"drain.if_repeats":  "drain if it repeats on this GPU",
		"nvidia":            "NVIDIA action",
		"dead":              "Don't waste time on",
		"do":                "Do now",
		"fails":             "fails %d%%",
		"works":             "works %d%%",
		"why":               "why",
		"how":               "how",
		"when":              "when",
		"src":               "source",
		"leads":             "Tends to lead to",
		"tier":              "verified: %s · confidence %.2f",
		"times":             "×%d",
		"lines":             "line %s",
		"subsumes":          "also matched (less specific)",
		"more":              "run `gpudx kb show %s` for the full entry",
		"doc":               "docs",
		"env":               "Environment",
		"builtcuda":         "built for CUDA",
		"v_fragmentation":   "fragmentation",
		"v_live_tensors":    "card full of live tensors",
		"v_other_process":   "another process holds the memory",
		"v_exceeds_card":    "the request alone exceeds the card",
		"v_unknown":         "not enough figures",
		"m_requested":       "requested",
		"m_capacity":        "capacity",
		"m_free":            "free",
		"m_allocated":       "allocated",
		"m_reserved":        "reserved",
		"m_unalloc":         "reserved-unallocated",
		"m_others":          "other processes",
		"drvcuda":           "driver supports CUDA",
		"ranks":             "Ranks",
		"rankfirst":         "rank %d failed first (%s)",
		"memory":            "Memory",
		"advice":            "Memory advice",
		"versions":          "Versions",
		"holds":             "holds",
		"fails_cond":        "does not hold here",
		"unknown":           "not known",
		"notapply":          "does not apply here",
		"whyhere":           "Why ranked here",
		"seenin":            "seen in",
		"onranks":           "ranks %s",
	},
	"zh": {
		"none":              "未发现已知的 GPU 错误",
		"unrecognized":      "知识库中没有，看起来是失败原因：",
		"groups":            "%d 个互不相关的作业（它们的错误互不关联）",
		"nearest":           "最接近的条目",
		"sure_close":        "接近：指同一个错误",
		"sure_related":      "相关：大部分词语一致",
		"sure_weak":         "较弱：只有少数词语一致",
		"sure_none":         "无",
		"found":             "发现 %d 个已知错误",
		"read":              "读取 %s 行，%s 字节；比对 %d 个条目",
		"root":              "根本原因",
		"followup":          "由 %s 引起",
		"also":              "另外发现",
		"what":              "出了什么问题",
		"evidence":          "证据",
		"facts":             "事实",
		"operator":          "运维",
		"sev.critical":      "严重：处理前 GPU 或节点不可用",
		"sev.error":         "错误：作业已失败，GPU 可能正常",
		"sev.warning":       "警告：性能下降或故障前兆",
		"sev.info":          "信息：仅记录，无需处理",
		"fault.hardware":    "硬件故障",
		"fault.application": "应用程序的问题",
		"fault.driver":      "驱动或固件问题",
		"fault.either":      "应用或硬件（见上文）",
		"drain.yes":         "下线该节点",
		"drain.no":          "无需下线",
		"drain.if_repeats":  "同一 GPU 反复出现时下线",
		"nvidia":            "NVIDIA 建议操作",
		"dead":              "不要浪费时间",
		"do":                "现在就做",
		"fails":             "失败率 %d%%",
		"works":             "成功率 %d%%",
		"why":               "原因",
		"how":               "做法",
		"when":              "条件",
		"src":               "来源",
		"leads":             "通常会引发",
		"tier":              "验证：%s · 置信度 %.2f",
		"times":             "×%d",
		"lines":             "第 %s 行",
		"subsumes":          "同时匹配（较笼统）",
		"more":              "运行 `gpudx kb show %s` 查看完整条目",
		"doc":               "文档",
		"env":               "环境",
		"builtcuda":         "构建所用 CUDA",
		"v_fragmentation":   "碎片化",
		"v_live_tensors":    "显存被存活张量占满",
		"v_other_process":   "其他进程占用了显存",
		"v_exceeds_card":    "单次请求就超过整卡容量",
		"v_unknown":         "数据不足以判断",
		"m_requested":       "请求",
		"m_capacity":        "容量",
		"m_free":            "空闲",
		"m_allocated":       "已分配",
		"m_reserved":        "已保留",
		"m_unalloc":         "保留未分配",
		"m_others":          "其他进程",
		"drvcuda":           "驱动支持的 CUDA",
		"ranks":             "rank",
		"rankfirst":         "rank %d 最先失败（%s）",
		"memory":            "显存",
		"advice":            "显存建议",
		"versions":          "版本",
		"holds":             "成立",
		"fails_cond":        "此处不成立",
		"unknown":           "未知",
		"notapply":          "此处不适用",
		"whyhere":           "排序理由",
		"seenin":            "出现于",
		"onranks":           "rank %s",
	},
}

func lang(o Options) map[string]string {
	if l, ok := labels[o.Lang]; ok {
		return l
	}
	return labels["en"]
}

// Localized text of a diagnosis: the Chinese where the entry has it.
func signature(d *diagnose.Diagnosis, o Options) string {
	if o.Lang == "zh" && d.SignatureZh != "" {
		return d.SignatureZh
	}
	return d.Signature
}

func rootCause(d *diagnose.Diagnosis, o Options) string {
	if o.Lang == "zh" && d.RootCauseZh != "" {
		return d.RootCauseZh
	}
	return d.RootCause
}

func lineSpan(d *diagnose.Diagnosis) string {
	if d.LastFile != "" { // first and last in different inputs
		return fmt.Sprintf("%d … %s:%d", d.FirstLine, d.LastFile, d.LastLine)
	}
	if d.LastLine != d.FirstLine {
		return fmt.Sprintf("%d–%d", d.FirstLine, d.LastLine)
	}
	return fmt.Sprint(d.FirstLine)
}

// factList writes facts as printed in the message, sorted by name.
func factList(f map[string]facts.Fact) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + f[k].Text
	}
	return strings.Join(parts, "  ")
}

func pct(r float64) int { return int(r*100 + 0.5) }

func group(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// OperatorLine says in one line, in lang ("en" or "zh"), what a node
// operator does about an event (severity, whose fault, drain, NVIDIA's
// resolution bucket), and next the step to take; both empty for nil.
func OperatorLine(op *kb.Operator, lang string) (line, next string) {
	if op == nil {
		return "", ""
	}
	L, ok := labels[lang]
	if !ok {
		L = labels["en"]
	}
	parts := []string{}
	for _, k := range []string{"sev." + op.Severity, "fault." + op.Fault, "drain." + op.Drain} {
		if v, ok := L[k]; ok {
			parts = append(parts, v)
		}
	}
	if op.Action != "" {
		parts = append(parts, L["nvidia"]+" "+op.Action)
	}
	next = op.Next
	if lang == "zh" && op.NextZh != "" {
		next = op.NextZh
	}
	return strings.Join(parts, " · "), next
}
