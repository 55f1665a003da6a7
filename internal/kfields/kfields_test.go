package kfields

import (
	"slices"
	"strings"
	"testing"

	"skiff.dev/internal/kinds/decl"
)

func TestLookups(t *testing.T) {
	root, ok := Root("", "v1", "Pod")
	if !ok || root != "core/v1.Pod" {
		t.Fatalf(`Root("", "v1", "Pod") = %q, %v`, root, ok)
	}
	if root, ok := Root("apps", "v1", "Deployment"); !ok || root != "apps/v1.Deployment" {
		t.Errorf(`Root("apps", "v1", "Deployment") = %q, %v`, root, ok)
	}
	if _, ok := Root("", "v1", "Flavour"); ok {
		t.Error("Root of a kind Kubernetes lacks: ok")
	}
	for _, c := range []struct{ typ, field, child string }{
		{"core/v1.Pod", "spec", "core/v1.PodSpec"},
		{"core/v1.Pod", "apiVersion", ""}, // inlined TypeMeta
		{"core/v1.Pod", "metadata", "meta/v1.ObjectMeta"},
		{"core/v1.PodSpec", "containers", "core/v1.Container"},         // a list
		{"core/v1.PodSpec", "os", "core/v1.PodOS"},                     // a pointer
		{"core/v1.PodSpec", "overhead", ""},                            // a map of quantities
		{"core/v1.Volume", "emptyDir", "core/v1.EmptyDirVolumeSource"}, // inlined VolumeSource
		{"core/v1.EphemeralContainer", "image", ""},                    // inlined EphemeralContainerCommon
		{"core/v1.EphemeralContainer", "targetContainerName", ""},
		{"meta/v1.ObjectMeta", "creationTimestamp", ""},     // metav1.Time is a leaf
		{"apps/v1.RollingUpdateDeployment", "maxSurge", ""}, // IntOrString is a leaf
	} {
		child, ok := Field(c.typ, c.field)
		if !ok || child != c.child {
			t.Errorf("Field(%q, %q) = %q, %v; want %q", c.typ, c.field, child, ok, c.child)
		}
	}
	if _, ok := Field("core/v1.PodSpec", "flavour"); ok {
		t.Error(`Field("core/v1.PodSpec", "flavour"): ok`)
	}
	if _, ok := Field("core/v1.Pod", "TypeMeta"); ok {
		t.Error("an inlined struct is a field of its own")
	}
	if f := Fields("core/v1.ResourceQuotaSpec"); !slices.Equal(f, []string{"hard", "scopes", "scopeSelector"}) {
		t.Errorf("Fields(ResourceQuotaSpec) = %q", f)
	}
	if got, ok := ForMessage("skiff.core.v1.PodSpec"); !ok || got != "core/v1.PodSpec" {
		t.Errorf("ForMessage(skiff.core.v1.PodSpec) = %q, %v", got, ok)
	}
	if got, ok := ForMessage("skiff.rbac.v1.ClusterRole"); !ok || got != "rbac/v1.ClusterRole" {
		t.Errorf("ForMessage(skiff.rbac.v1.ClusterRole) = %q, %v", got, ok)
	}
	for _, name := range []string{"skiff.core.v1.ExecRequest", "google.protobuf.Timestamp", "skiff.core"} {
		if got, ok := ForMessage(name); ok {
			t.Errorf("ForMessage(%q) = %q, ok", name, got)
		}
	}
}

// TestEveryDeclaredKind fails when a kind was added to internal/kinds/decl
// and the table was not regenerated (make kfields).
func TestEveryDeclaredKind(t *testing.T) {
	known := map[string]bool{}
	for _, k := range Kinds() {
		known[k] = true
	}
	for _, k := range Skipped() {
		known[k] = true
	}
	for _, k := range decl.All {
		gv := k.Version
		if k.Group != "" {
			gv = k.Group + "/" + k.Version
		}
		key := gv + "/" + k.Kind
		if !known[key] {
			t.Errorf("kind %s is not in kubernetes.gen.go: run make kfields", key)
		}
		delete(known, key)
	}
	for k := range known {
		t.Errorf("kubernetes.gen.go has kind %s, which internal/kinds/decl does not declare: run make kfields", k)
	}
	for name := range types {
		for _, f := range Fields(name) {
			if child, _ := Field(name, f); child != "" && !Has(child) {
				t.Errorf("%s.%s is of type %s, which the table does not hold", name, f, child)
			}
		}
	}
}

func TestPatchStrategyAndDoc(t *testing.T) {
	for _, c := range []struct{ typ, field, strategy, key string }{
		{"core/v1.Container", "ports", "merge", "containerPort"},
		{"core/v1.PodSpec", "containers", "merge", "name"},
		{"core/v1.PodSpec", "volumes", "merge,retainKeys", "name"},
		{"meta/v1.ObjectMeta", "finalizers", "merge", ""},
		{"apps/v1.DeploymentSpec", "strategy", "retainKeys", ""},
		{"core/v1.Container", "image", "", ""},
		{"core/v1.Flavour", "ports", "", ""},
	} {
		strategy, key := PatchStrategy(c.typ, c.field)
		if strategy != c.strategy || key != c.key {
			t.Errorf("PatchStrategy(%q, %q) = %q, %q; want %q, %q", c.typ, c.field, strategy, key, c.strategy, c.key)
		}
	}
	if d := Doc("core/v1.Pod", ""); !strings.HasPrefix(d, "Pod is a collection of containers") {
		t.Errorf("Doc(core/v1.Pod) = %q", d)
	}
	if d := Doc("core/v1.Container", "image"); !strings.Contains(d, "Container image name") {
		t.Errorf("Doc(core/v1.Container, image) = %q", d)
	}
	// A field of an inlined struct is described under the outer type.
	if d := Doc("core/v1.EphemeralContainer", "image"); d == "" {
		t.Error("Doc(core/v1.EphemeralContainer, image) is empty")
	}
	if d := Doc("core/v1.Container", "flavour"); d != "" {
		t.Errorf("Doc of a field nobody has = %q", d)
	}
}
