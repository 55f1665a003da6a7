package integration

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	nodev1 "skiff.dev/proto/node/v1"
)

// TestRuntimeClassAdmission: the RuntimeClass plugin (on by default) gives
// a pod created with runtimeClassName its class's overhead, node selector
// and tolerations; refuses an unknown class, an overhead that differs from
// the class's or that no class defines, and a node selector that conflicts
// with the class's, in Kubernetes' words.
func TestRuntimeClassAdmission(t *testing.T) {
	s := startAdmission(t)
	ctx := testContext(t)
	rcs, pods := client.RuntimeClasses(s.Conn), client.Pods(s.Conn)
	for _, rc := range []*nodev1.RuntimeClass{
		{Metadata: &metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc",
			Overhead: &nodev1.Overhead{PodFixed: map[string]string{"cpu": "250m", "memory": "120Mi"}},
			Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"runtime": "gvisor"},
				Tolerations: []*corev1.Toleration{{Key: "runtime", Operator: "Equal", Value: "gvisor", Effect: "NoSchedule"}}}},
		{Metadata: &metav1.ObjectMeta{Name: "plain"}, Handler: "runc"},
	} {
		if _, err := rcs.Create(ctx, rc); err != nil {
			t.Fatal(err)
		}
	}
	withClass := func(name, class string) *corev1.Pod {
		p := pod("default", name)
		p.Spec.RuntimeClassName = proto.String(class)
		return p
	}

	t.Run("overhead, node selector and tolerations from the class", func(t *testing.T) {
		p := withClass("sandboxed", "gvisor")
		p.Spec.NodeSelector = map[string]string{"disk": "ssd", "runtime": "gvisor"}
		p.Spec.Overhead = map[string]string{"cpu": "0.25", "memory": "120Mi"} // equal as quantities
		got, err := pods.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		spec := got.GetSpec()
		if o := spec.GetOverhead(); len(o) != 2 || o["cpu"] != "250m" || o["memory"] != "120Mi" {
			t.Errorf("overhead %v", o)
		}
		if ns := spec.GetNodeSelector(); len(ns) != 2 || ns["runtime"] != "gvisor" || ns["disk"] != "ssd" {
			t.Errorf("nodeSelector %v", ns)
		}
		found := 0
		for _, tol := range spec.GetTolerations() {
			if tol.GetKey() == "runtime" && tol.GetValue() == "gvisor" && tol.GetEffect() == "NoSchedule" {
				found++
			}
		}
		if found != 1 {
			t.Errorf("tolerations %v: want the class's once", spec.GetTolerations())
		}
	})

	t.Run("a class without overhead or scheduling changes nothing", func(t *testing.T) {
		got, err := pods.Create(ctx, withClass("runc", "plain"))
		if err != nil {
			t.Fatal(err)
		}
		if len(got.GetSpec().GetOverhead()) != 0 || len(got.GetSpec().GetNodeSelector()) != 0 {
			t.Errorf("spec %v", got.GetSpec())
		}
	})

	refused := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"an unknown class", withClass("nowhere", "kata"), `pods "nowhere" is forbidden: pod rejected: RuntimeClass "kata" not found`},
		{"an overhead other than the class's", func() *corev1.Pod {
			p := withClass("cheap", "gvisor")
			p.Spec.Overhead = map[string]string{"cpu": "10m"}
			return p
		}(), `pods "cheap" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`},
		{"an overhead the class does not define", func() *corev1.Pod {
			p := withClass("extra", "plain")
			p.Spec.Overhead = map[string]string{"cpu": "10m"}
			return p
		}(), `pods "extra" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`},
		{"an overhead without a class", func() *corev1.Pod {
			p := pod("default", "classless")
			p.Spec.Overhead = map[string]string{"cpu": "10m"}
			return p
		}(), `pods "classless" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`},
		{"a node selector in conflict with the class's", func() *corev1.Pod {
			p := withClass("torn", "gvisor")
			p.Spec.NodeSelector = map[string]string{"runtime": "kata"}
			return p
		}(), `pods "torn" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[runtime] = gvisor; pod.spec.nodeSelector[runtime] = kata`},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pods.Create(ctx, tc.pod)
			wantRefused(t, err, codes.PermissionDenied, tc.want)
		})
	}
}
