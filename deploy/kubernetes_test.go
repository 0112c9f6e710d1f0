package deploy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// strictK8s decodes as the API server's strict field validation does
// (sigs.k8s.io/json): unknown fields, duplicate fields and a field
// spelled in another case are errors. encoding/json matches names
// case-insensitively, so it would accept readOnlyRootFileSystem.
func strictK8s(b []byte, v any) error {
	strict, err := kjson.UnmarshalStrict(b, v, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// serviceMonitor is the part of the Prometheus Operator's ServiceMonitor
// (monitoring.coreos.com/v1) the manifest uses; a CRD has no type in
// k8s.io/api, so strict decoding into this catches a misspelled field.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port        string `json:"port"`
			Path        string `json:"path"`
			Interval    string `json:"interval"`
			Relabelings []struct {
				SourceLabels []string `json:"sourceLabels"`
				TargetLabel  string   `json:"targetLabel"`
				Action       string   `json:"action"`
			} `json:"relabelings"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// TestKubernetesManifests decodes every manifest strictly into its API
// type and checks that the pieces fit together.
func TestKubernetesManifests(t *testing.T) {
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var (
		ds  *appsv1.DaemonSet
		svc *corev1.Service
		sm  *serviceMonitor
		ns  *corev1.Namespace
	)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			js, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("%s #%d: %v", f, i, err)
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s #%d: %v", f, i, err)
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 DaemonSet":
				ds = &appsv1.DaemonSet{}
				obj = ds
			case "v1 Service":
				svc = &corev1.Service{}
				obj = svc
			case "v1 Namespace":
				ns = &corev1.Namespace{}
				obj = ns
			case "monitoring.coreos.com/v1 ServiceMonitor":
				sm = &serviceMonitor{}
				obj = sm
			default:
				t.Fatalf("%s #%d: no test decodes %s %s", f, i, tm.APIVersion, tm.Kind)
			}
			if err := strictK8s(js, obj); err != nil {
				t.Errorf("%s #%d (%s): %v", f, i, tm.Kind, err)
			}
		}
	}
	if ds == nil || svc == nil || sm == nil || ns == nil {
		t.Fatalf("want a DaemonSet, a Service, a ServiceMonitor and a Namespace; got %v %v %v %v", ds != nil, svc != nil, sm != nil, ns != nil)
	}
	for _, m := range []metav1.ObjectMeta{ds.ObjectMeta, svc.ObjectMeta, sm.ObjectMeta} {
		if m.Namespace != ns.Name {
			t.Errorf("%s is in namespace %q, want %q", m.Name, m.Namespace, ns.Name)
		}
	}

	pod := ds.Spec.Template
	for k, v := range ds.Spec.Selector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("DaemonSet selector %s=%s does not select its pods %v", k, v, pod.Labels)
		}
	}
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("Service selector %s=%s does not select the pods", k, v)
		}
	}
	for k, v := range sm.Spec.Selector.MatchLabels {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selector %s=%s does not select the Service", k, v)
		}
	}
	if pod.Spec.NodeSelector["nvidia.com/gpu.present"] != "true" || len(pod.Spec.Tolerations) == 0 || pod.Spec.Tolerations[0].Key != "nvidia.com/gpu" {
		t.Errorf("not pinned to GPU nodes: %v %v", pod.Spec.NodeSelector, pod.Spec.Tolerations)
	}

	// Least privilege.
	psc := pod.Spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod must run as non-root: %+v", psc)
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Error("the pod needs no API token: set automountServiceAccountToken: false")
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil ||
		!*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		(sc.Privileged != nil && *sc.Privileged) {
		t.Errorf("container security context %+v", sc)
	}
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("mount %s is writable", m.MountPath)
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("no %s limit", r)
		}
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
	}

	// The command is gpudx watch with metrics on the port the Service
	// and the ServiceMonitor name, over the mounted logs.
	args := strings.Join(c.Args, " ")
	if len(c.Args) == 0 || c.Args[0] != "watch" || len(c.Ports) != 1 {
		t.Fatalf("args %q ports %v", c.Args, c.Ports)
	}
	port := c.Ports[0]
	if !strings.Contains(args, "--metrics 0.0.0.0:9402") || port.ContainerPort != 9402 || port.Name != "metrics" {
		t.Errorf("args %q, port %+v", args, port)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.StrVal != port.Name || len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name {
		t.Errorf("service ports %+v, monitor endpoints %+v", svc.Spec.Ports, sm.Spec.Endpoints)
	}
	for _, src := range c.Args[3:] {
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || strings.HasPrefix(src, m.MountPath+"/")
		}
		if !mounted {
			t.Errorf("source %s is not under a mounted volume", src)
		}
	}
}

// TestStrictDecodeCatchesTypos makes sure the decoding above would fail on
// a misspelled field: a test that cannot fail proves nothing.
func TestStrictDecodeCatchesTypos(t *testing.T) {
	b, err := os.ReadFile("kubernetes/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(b, []byte("readOnlyRootFilesystem"), []byte("readOnlyRootFileSystem"), 1)
	js, err := yaml.YAMLToJSON(bad)
	if err != nil {
		t.Fatal(err)
	}
	err = strictK8s(js, &appsv1.DaemonSet{})
	if err == nil || !strings.Contains(err.Error(), `unknown field "spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem"`) {
		t.Errorf("misspelled field: %v", err)
	}
}
