package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpudx/gpudx/internal/syncbuf"
)

// prometheusBinary finds Prometheus (Debian's package prometheus), or
// skips; under GPUDX_REQUIRE_SERVICES=1 (CI) its absence fails the test.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("GPUDX_REQUIRE_SERVICES") == "1" {
			t.Fatalf("Prometheus is required (GPUDX_REQUIRE_SERVICES=1): %v", err)
		}
		t.Skipf("no prometheus binary (apt-get install prometheus): %v", err)
	}
	return p
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestPrometheusScrapesWatch: a real Prometheus scrapes gpudx watch
// --metrics while a kernel log grows; its HTTP API then has the counters
// and the drain gauge, and the shipped alerting rules load, evaluate and
// fire. promtool checks the rules file when it is installed.
func TestPrometheusScrapesWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Prometheus and waits for its scrapes")
	}
	bin := prometheusBinary(t)
	rules, err := filepath.Abs("../../deploy/prometheus/gpudx-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS: 4 rules found") {
			t.Fatalf("promtool check rules: %v\n%s", err, out)
		}
	}

	dir := t.TempDir()
	kmsg := filepath.Join(dir, "kmsg")
	os.WriteFile(kmsg, nil, 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// gpudx watch, in this process, on a port it picks.
	var werr syncbuf.Buffer
	env := &IO{In: strings.NewReader(""), Out: io.Discard, Err: &werr, Getenv: func(string) string { return "" },
		Terminal: func(any) bool { return false }}
	watchDone := make(chan int, 1)
	go func() {
		watchDone <- RunContext(ctx, []string{"watch", "--metrics", "127.0.0.1:0", "--poll", "20ms", "--kernel-log=" + kmsg}, env)
	}()
	var target string
	for deadline := time.Now().Add(20 * time.Second); target == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := regexp.MustCompile(`metrics at http://(\S+)/metrics`).FindStringSubmatch(werr.String()); m != nil {
			target = m[1]
		}
	}
	if target == "" {
		t.Fatalf("gpudx watch did not say where its metrics are: %s", werr.String())
	}

	promAddr := freePort(t)
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: gpudx
    static_configs:
      - targets: [%q]
`, rules, target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfgPath, []byte(cfg), 0o644)
	prom := exec.CommandContext(ctx, bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr)
	var plog syncbuf.Buffer
	prom.Stdout, prom.Stderr = &plog, &plog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		prom.Process.Signal(os.Interrupt)
		prom.Wait()
	}()
	api := "http://" + promAddr
	get := func(path string, v any) error {
		resp, err := http.Get(api + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s: %s", path, resp.Status)
		}
		return json.NewDecoder(resp.Body).Decode(v)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(api + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus not ready: %v\n%s", err, plog.String())
		}
	}

	// The log grows while Prometheus scrapes.
	xid79 := "4,1234,7123456,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
	xid13 := "4,1236,7124001,-;NVRM: Xid (PCI:0000:86:00): 13, pid=2211, name=python, Graphics Exception: ESR 0x505648=0x102000e 0x505650=0x0 0x505644=0xd3eff2 0x50564c=0x7f\n"
	for _, l := range []string{xid13, xid79, xid79, xid79} {
		f, _ := os.OpenFile(kmsg, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(l)
		f.Close()
		time.Sleep(700 * time.Millisecond)
	}

	// query returns "labels -> value" for an instant query, polling until
	// want holds or time runs out.
	query := func(q string, want map[string]string) {
		t.Helper()
		var got map[string]string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			var r struct {
				Status string
				Data   struct {
					Result []struct {
						Metric map[string]string
						Value  [2]any
					}
				}
			}
			if err := get("/api/v1/query?query="+url.QueryEscape(q), &r); err != nil {
				t.Fatal(err)
			}
			got = map[string]string{}
			for _, s := range r.Data.Result {
				got[s.Metric["gpu"]+" "+s.Metric["entry"]] = fmt.Sprint(s.Value[1])
			}
			if fmt.Sprint(got) == fmt.Sprint(want) {
				return
			}
		}
		t.Errorf("%s = %v, want %v", q, got, want)
	}
	query(`gpudx_diagnoses_total{job="gpudx"}`, map[string]string{
		"0000:3b:00 driver/xid-79-fallen-off-bus":            "3",
		"0000:86:00 driver/xid-13-graphics-engine-exception": "1",
	})
	query(`gpudx_diagnoses_total{severity="critical",domain="driver"}`, map[string]string{
		"0000:3b:00 driver/xid-79-fallen-off-bus": "3",
	})
	query(`gpudx_gpu_drain_recommended`, map[string]string{"0000:3b:00 ": "1"})
	query(`gpudx_watch_lines_total`, map[string]string{" ": "4"})

	// The shipped rules: all healthy, the drain and critical alerts fire.
	var alerts struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string
				State  string
			}
		}
	}
	var firing []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if err := get("/api/v1/alerts", &alerts); err != nil {
			t.Fatal(err)
		}
		firing = firing[:0]
		for _, a := range alerts.Data.Alerts {
			if a.State == "firing" {
				firing = append(firing, a.Labels["alertname"]+" "+a.Labels["gpu"])
			}
		}
		if strings.Contains(strings.Join(firing, ","), "GPUDrainRecommended 0000:3b:00") &&
			strings.Contains(strings.Join(firing, ","), "GPUCriticalError 0000:3b:00") {
			break
		}
	}
	if s := strings.Join(firing, ","); !strings.Contains(s, "GPUDrainRecommended 0000:3b:00") || !strings.Contains(s, "GPUCriticalError 0000:3b:00") {
		t.Errorf("firing alerts %q, want GPUDrainRecommended and GPUCriticalError on 0000:3b:00", firing)
	}
	var rulesResp struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name, Health, LastError string
				}
			}
		}
	}
	if err := get("/api/v1/rules", &rulesResp); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range rulesResp.Data.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" {
				t.Errorf("rule %s: health %q %s", r.Name, r.Health, r.LastError)
			}
		}
	}
	if n != 4 {
		t.Errorf("Prometheus loaded %d rules, want 4", n)
	}
	cancel()
	if code := <-watchDone; code != 0 {
		t.Errorf("gpudx watch exited %d: %s", code, werr.String())
	}
}
