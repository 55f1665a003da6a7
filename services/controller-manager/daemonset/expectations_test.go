package daemonset

import (
	"testing"

	"skiff.dev/internal/client"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
)

// A sync that deletes and creates expects both before it writes: the
// creations' expectation must not drop the deletions' (the cache would
// be trusted again while the deleted pods are still in it), as
// Kubernetes' SetExpectations sets both counts at once.
func TestApplyExpectsDeletionsAndCreationsTogether(t *testing.T) {
	env := managertest.Start(t)
	dc := New(env.Manager, Options{})
	spec := &corev1.PodSpec{Containers: []*corev1.Container{{Name: "agent", Image: "agent:v1"}}}
	old, err := client.Pods(env.Conn).Create(env.Ctx, &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "ds-old"}, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	ds := &appsv1.DaemonSet{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "ds", Uid: "ds-uid"},
		Spec: &appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ds"}},
			Template: &corev1.PodTemplateSpec{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "ds"}}, Spec: spec},
		},
	}
	const key = "default/ds"
	if err := dc.apply(env.Ctx, ds, key, Plan{Delete: []*corev1.Pod{old}, CreateOn: []string{"node-b"}}, "h1"); err != nil {
		t.Fatal(err)
	}
	// The informers do not run: nothing was observed yet.
	if adds, dels := dc.expectations.Pending(key); adds != 1 || dels != 1 {
		t.Errorf("pending after a sync that deleted one pod and created one: %d creations, %d deletions; want 1 and 1", adds, dels)
	}
}
