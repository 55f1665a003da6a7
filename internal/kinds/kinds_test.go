package kinds

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"skiff.dev/internal/kinds/decl"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// The generated files are what the generator writes from the
// declarations: a kind declared without make proto fails here.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	out, err := exec.Command("go", "run", "./gen", "-check", "-root", "../..").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// Every declared kind loads: its binding is its own type, its field
// selectors name fields of it.
func TestEveryKindLoads(t *testing.T) {
	if len(All()) != len(decl.All) {
		t.Fatalf("%d kinds loaded of %d declared", len(All()), len(decl.All))
	}
	for _, k := range All() {
		if got := string(k.New().ProtoReflect().Descriptor().Name()); got != k.Kind.Kind {
			t.Errorf("%s: New makes a %s", k.GVK(), got)
		}
		if got := string(k.NewList().ProtoReflect().Descriptor().Name()); got != k.Kind.Kind+"List" {
			t.Errorf("%s: NewList makes a %s", k.GVK(), got)
		}
		if k.Stored == nil || !k.Stored.IsStorageVersion() {
			t.Errorf("%s: no storage version", k.GVK())
		}
	}
	if k := Get("apps", "v1beta1", "Deployment"); k == nil || k.Stored != Get("apps", "v1", "Deployment") || k.IsStorageVersion() {
		t.Errorf("apps/v1beta1 Deployment is not served from apps/v1's storage: %+v", k)
	}
}

func TestFieldsOfDeclaredSelectors(t *testing.T) {
	pod := &corev1.Pod{Spec: &corev1.PodSpec{NodeName: "n1"}, Status: &corev1.PodStatus{Phase: "Running", PodIp: "10.0.0.7"}}
	got := MustGet("", "v1", "Pod").Fields(pod)
	want := map[string]string{"spec.nodeName": "n1", "spec.schedulerName": "", "spec.restartPolicy": "", "status.phase": "Running", "status.podIP": "10.0.0.7"}
	if !mapsEqual(got, want) {
		t.Errorf("pod fields %v, want %v", got, want)
	}
	ev := &corev1.Event{Source: &corev1.EventSource{Component: "kubelet"}, InvolvedObject: &corev1.ObjectReference{Kind: "Pod"}}
	if f := MustGet("", "v1", "Event").Fields(ev); f["source"] != "kubelet" || f["involvedObject.kind"] != "Pod" || f["reason"] != "" {
		t.Errorf("event fields %v", f)
	}
	if f := MustGet("", "v1", "Node").Fields(&corev1.Node{Spec: &corev1.NodeSpec{Unschedulable: true}}); f["spec.unschedulable"] != "true" {
		t.Errorf("node fields %v", f)
	}
	if f := MustGet("", "v1", "ConfigMap").Fields(&corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "x"}}); f != nil {
		t.Errorf("a kind without declared selectors has fields %v", f)
	}
	if got := MustGet("", "v1", "Pod").FieldSelectors(); !slices.Equal(got[:2], []string{"metadata.name", "metadata.namespace"}) {
		t.Errorf("pod selectors %v", got)
	}
	if got := MustGet("", "v1", "Node").FieldSelectors(); !slices.Equal(got, []string{"metadata.name", "spec.unschedulable"}) {
		t.Errorf("node selectors %v", got)
	}
}

func TestSelectorThatNamesNoFieldIsRefused(t *testing.T) {
	k := &Kind{Kind: decl.Kind{Kind: "Pod", FieldSelectors: []string{"spec.nodeNmae"}}, binding: binding{newObj: MustGet("", "v1", "Pod").newObj}}
	if _, err := selectables(k); err == nil || !strings.Contains(err.Error(), `no single field "nodeNmae"`) {
		t.Errorf("a typo in a selector: %v", err)
	}
}

// The user-facing roles grant what Kubernetes' do for the kinds Skiff
// has (the lists bootstrap.go had before they were derived).
func TestRoleResources(t *testing.T) {
	for _, tc := range []struct {
		role decl.Roles
		want map[string]string
	}{
		{decl.View, map[string]string{
			"": "namespaces namespaces/status pods pods/status pods/log events configmaps serviceaccounts limitranges resourcequotas resourcequotas/status services services/status" +
				" persistentvolumeclaims persistentvolumeclaims/status",
			"apps": "deployments deployments/status deployments/scale replicasets replicasets/status replicasets/scale" +
				" daemonsets daemonsets/status statefulsets statefulsets/status statefulsets/scale controllerrevisions",
			"batch":            "jobs jobs/status cronjobs cronjobs/status",
			"policy":           "poddisruptionbudgets poddisruptionbudgets/status",
			"discovery.k8s.io": "endpointslices"}},
		{decl.Edit, map[string]string{
			"":       "pods pods/exec pods/attach pods/portforward pods/eviction events configmaps secrets serviceaccounts serviceaccounts/token services persistentvolumeclaims",
			"apps":   "deployments deployments/scale replicasets replicasets/scale daemonsets statefulsets statefulsets/scale",
			"batch":  "jobs cronjobs",
			"policy": "poddisruptionbudgets"}},
		{decl.Admin, map[string]string{"rbac.authorization.k8s.io": "roles rolebindings"}},
	} {
		_, got := RoleResources(tc.role)
		have := map[string]string{}
		for g, rs := range got {
			have[g] = strings.Join(rs, " ")
		}
		if !mapsEqual(have, tc.want) {
			t.Errorf("role %d: %v, want %v", tc.role, have, tc.want)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
