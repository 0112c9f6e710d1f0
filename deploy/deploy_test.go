package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpudx/gpudx/internal/cli"
)

// TestMain lets the test binary stand in for gpudx: the shipped scripts
// and configs run it as a real process, under the name gpudx.
func TestMain(m *testing.M) {
	if os.Getenv("GPUDX_TEST_AS_CLI") == "1" {
		os.Exit(cli.Run(os.Args[1:], cli.StdIO()))
	}
	os.Exit(m.Run())
}

// gpudxDir returns a directory holding "gpudx" (this test binary) and
// the environment that makes it act as gpudx.
func gpudxDir(t *testing.T) (dir string, env []string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if err := os.Symlink(self, filepath.Join(dir, "gpudx")); err != nil {
		t.Fatal(err)
	}
	return dir, append(os.Environ(), "GPUDX_TEST_AS_CLI=1", "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// logs are the recorded kernel logs (written in the driver's real
// formats) that every integration is run against.
const logs = "../health/testdata/"

// exitCode runs cmd and returns its exit status.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// npdConfig mirrors node-problem-detector's custom plugin monitor config
// (pkg/custompluginmonitor/types.CustomPluginConfig and CustomRule, and
// pkg/types.Condition), so a misspelled key fails to decode.
type npdConfig struct {
	Plugin       string `json:"plugin"`
	PluginConfig struct {
		InvokeInterval                          string `json:"invoke_interval"`
		Timeout                                 string `json:"timeout"`
		MaxOutputLength                         *int   `json:"max_output_length"`
		Concurrency                             int    `json:"concurrency"`
		EnableMessageChangeBasedConditionUpdate bool   `json:"enable_message_change_based_condition_update"`
		SkipInitialStatus                       bool   `json:"skip_initial_status"`
	} `json:"pluginConfig"`
	Source           string `json:"source"`
	MetricsReporting *bool  `json:"metricsReporting"`
	Conditions       []struct {
		Type    string `json:"type"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"conditions"`
	Rules []struct {
		Type           string   `json:"type"`
		Condition      string   `json:"condition"`
		Reason         string   `json:"reason"`
		Path           string   `json:"path"`
		Args           []string `json:"args"`
		Timeout        string   `json:"timeout"`
		InvokeInterval string   `json:"invoke_interval"`
	} `json:"rules"`
}

func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON value")
	}
	return nil
}

// TestNodeProblemDetector checks the plugin config as NPD validates it
// and runs its rule the way NPD's plugin runner does: stdout trimmed and
// cut to max_output_length bytes, exit 0 OK, 1 NonOK, anything else
// Unknown.
func TestNodeProblemDetector(t *testing.T) {
	b, err := os.ReadFile("node-problem-detector/gpudx-monitor.json")
	if err != nil {
		t.Fatal(err)
	}
	var c npdConfig
	if err := strictJSON(b, &c); err != nil {
		t.Fatalf("gpudx-monitor.json: %v", err)
	}
	global, err := time.ParseDuration(c.PluginConfig.Timeout)
	if err != nil || c.Plugin != "custom" || c.PluginConfig.MaxOutputLength == nil || len(c.Rules) != 1 || len(c.Conditions) != 1 {
		t.Fatalf("config %+v (%v)", c, err)
	}
	if _, err := time.ParseDuration(c.PluginConfig.InvokeInterval); err != nil {
		t.Errorf("invoke_interval: %v", err)
	}
	rule := c.Rules[0]
	if d, err := time.ParseDuration(rule.Timeout); err != nil || d > global {
		t.Errorf("rule timeout %q must parse and not exceed the global %v (NPD refuses it)", rule.Timeout, global)
	}
	if rule.Type != "permanent" || rule.Condition != c.Conditions[0].Type || rule.Path != "/usr/local/bin/gpudx" {
		t.Errorf("rule %+v: a permanent rule needs a default condition of its type; path is the image's", rule)
	}
	max := *c.PluginConfig.MaxOutputLength
	if !strings.Contains(strings.Join(rule.Args, " "), fmt.Sprintf("--max-output-length %d", max)) {
		t.Errorf("args %q do not pass max_output_length %d", rule.Args, max)
	}

	dir, env := gpudxDir(t)
	for _, tt := range []struct {
		log, status, message string
	}{
		{"healthy.dmesg", "OK", c.Conditions[0].Message},
		{"xid79.dmesg", "NonOK", "gpudx: drain: Xid 79 on GPU 0000:3b:00, RESTART_BM"},
		{"xid13-once.dmesg", "OK", "gpudx: no drain: Xid 13 on GPU 0000:cb:00, RESTART_APP"},
		{"xid13-twice.dmesg", "NonOK", "gpudx: drain: Xid 13 on GPU 0000:cb:00, RESTART_APP"},
		{"xid48-journal.log", "NonOK", "gpudx: drain: Xid 48 on GPU 0000:07:00, WORKFLOW_XID_48"},
		{"absent.log", "Unknown", "gpudx: cannot check: --kernel-log ../health/testdata/absent.log: no such file or"},
	} {
		var out bytes.Buffer
		cmd := exec.Command(filepath.Join(dir, "gpudx"), append(rule.Args, "--kernel-log", logs+tt.log)...)
		cmd.Env, cmd.Stdout = env, &out
		code := exitCode(t, cmd)
		status := map[int]string{0: "OK", 1: "NonOK"}[code]
		if status == "" {
			status = "Unknown"
		}
		msg := strings.TrimSpace(out.String())
		if len(msg) > max {
			t.Errorf("%s: %d bytes of output; NPD would cut it to %d", tt.log, len(msg), max)
			msg = msg[:max]
		}
		if status != tt.status || msg != tt.message {
			t.Errorf("%s: exit %d (%s) %q, want %s %q", tt.log, code, status, msg, tt.status, tt.message)
		}
	}
}

// TestNHC sources the NHC check into bash with a die() that records its
// arguments, as NHC's own die() receives them.
func TestNHC(t *testing.T) {
	conf, err := os.ReadFile("slurm/nhc.conf")
	if err != nil {
		t.Fatal(err)
	}
	var checks []string
	for _, l := range strings.Split(string(conf), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			mask, check, ok := strings.Cut(l, "||")
			if !ok || strings.TrimSpace(mask) == "" {
				t.Errorf("nhc.conf line %q: want 'MASK || CHECK'", l)
			}
			checks = append(checks, strings.TrimSpace(check))
		}
	}
	if len(checks) != 1 || checks[0] != "check_gpudx" {
		t.Fatalf("nhc.conf checks %q", checks)
	}
	_, env := gpudxDir(t)
	for _, tt := range []struct{ log, want string }{
		{"healthy.dmesg", "RC 0\n"},
		{"xid13-once.dmesg", "RC 0\n"},
		{"xid79.dmesg", "DIE 1 [check_gpudx:  gpudx: drain: Xid 79 on GPU 0000:3b:00 (1x, RESTART_BM)]\nRC 1\n"},
		{"xid13-twice.dmesg", "DIE 1 [check_gpudx:  gpudx: drain: Xid 13 on GPU 0000:cb:00 (2x, RESTART_APP)]\nRC 1\n"},
		{"absent.log", "DIE 1 [check_gpudx:  gpudx check failed (2): gpudx: cannot check: --kernel-log ../health/testdata/absent.log: no such file or directory]\nRC 1\n"},
	} {
		script := `die() { echo "DIE $1 [$2]"; }
source slurm/gpudx.nhc
` + checks[0] + ` --kernel-log "$1"
echo "RC $?"`
		cmd := exec.Command("bash", "-c", script, "nhc", logs+tt.log)
		var out, errb bytes.Buffer
		cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &errb
		if code := exitCode(t, cmd); code != 0 || out.String() != tt.want {
			t.Errorf("%s: bash exit %d, stdout %q, stderr %q\nwant %q", tt.log, code, out.String(), errb.String(), tt.want)
		}
	}
}

// TestSlurmHealthCheckProgram runs healthcheck.sh with a stand-in
// scontrol that records its arguments, one per line.
func TestSlurmHealthCheckProgram(t *testing.T) {
	dir, env := gpudxDir(t)
	record := filepath.Join(dir, "scontrol.args")
	fake := filepath.Join(dir, "scontrol")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+record+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		log      string
		code     int
		scontrol string
		stderr   string
	}{
		{"healthy.dmesg", 0, "", ""},
		{"xid79.dmesg", 0, "update\nNodeName=gpu-node-07\nState=DRAIN\nReason=gpudx: drain: Xid 79 on GPU 0000:3b:00 (1x, RESTART_BM)\n", ""},
		{"xid48-journal.log", 0, "update\nNodeName=gpu-node-07\nState=DRAIN\nReason=gpudx: drain: Xid 48 on GPU 0000:07:00 (1x, WORKFLOW_XID_48)\n", ""},
		{"absent.log", 2, "", "gpudx-healthcheck: gpudx check exited 2: gpudx: cannot check: --kernel-log ../health/testdata/absent.log: no such file or directory\n"},
	} {
		os.Remove(record)
		cmd := exec.Command("./slurm/healthcheck.sh", "--kernel-log", logs+tt.log)
		var errb bytes.Buffer
		cmd.Env, cmd.Stderr = append(env, "NODE=gpu-node-07", "SCONTROL="+fake), &errb
		code := exitCode(t, cmd)
		got, _ := os.ReadFile(record)
		if code != tt.code || string(got) != tt.scontrol || errb.String() != tt.stderr {
			t.Errorf("%s: exit %d, scontrol %q, stderr %q\nwant exit %d, scontrol %q, stderr %q", tt.log, code, got, errb.String(), tt.code, tt.scontrol, tt.stderr)
		}
	}
}
