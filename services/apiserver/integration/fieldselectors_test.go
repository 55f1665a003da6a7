package integration

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/object"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// Every field selector a kind declares matches the value its object
// holds, from the watch cache (which decodes only the selectable fields
// of each object to compute them) as from a fresh object.
func TestEveryDeclaredFieldSelectorMatches(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	const ns = "fields"

	pods := client.Pods(s.Conn)
	p, err := pods.Create(ctx, &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: "p", Labels: map[string]string{"a": "b"}},
		Spec: &corev1.PodSpec{NodeName: "node-7", SchedulerName: "my-scheduler", RestartPolicy: "OnFailure",
			Containers: []*corev1.Container{{Name: "c", Image: "img", Args: []string{"x"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = &corev1.PodStatus{Phase: "Running", PodIp: "10.1.2.3", Conditions: []*corev1.PodCondition{{Type: "Ready", Status: "True"}}}
	if _, err := pods.UpdateStatus(ctx, p); err != nil {
		t.Fatal(err)
	}
	expectSelected(t, ctx, "pods", ns, "p", map[string]string{
		"metadata.name": "p", "metadata.namespace": ns, "spec.nodeName": "node-7", "spec.schedulerName": "my-scheduler",
		"spec.restartPolicy": "OnFailure", "status.phase": "Running", "status.podIP": "10.1.2.3",
	}, lister(ctx, pods, ns))

	nodes := client.Nodes(s.Conn)
	if _, err := nodes.Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "node-7"}, Spec: &corev1.NodeSpec{Unschedulable: true, PodCidr: "10.1.2.0/24"}}); err != nil {
		t.Fatal(err)
	}
	expectSelected(t, ctx, "nodes", "", "node-7", map[string]string{"metadata.name": "node-7", "spec.unschedulable": "true"},
		lister(ctx, nodes, ""))

	namespaces := client.Namespaces(s.Conn)
	if _, err := namespaces.Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: "fields-ns"}}); err != nil {
		t.Fatal(err)
	}
	expectSelected(t, ctx, "namespaces", "", "fields-ns", map[string]string{"metadata.name": "fields-ns", "status.phase": "Active"},
		lister(ctx, namespaces, ""))

	evs := client.Events(s.Conn)
	if _, err := evs.Create(ctx, &corev1.Event{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: "e"},
		InvolvedObject: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p", Uid: "uid-1", ApiVersion: "v1", ResourceVersion: "5", FieldPath: "spec.containers{c}"},
		Reason:         "Started", Message: "started container c", Type: "Normal", ReportingComponent: "node-agent",
		Source: &corev1.EventSource{Component: "node-agent", Host: "node-7"}}); err != nil {
		t.Fatal(err)
	}
	expectSelected(t, ctx, "events", ns, "e", map[string]string{
		"metadata.name": "e", "metadata.namespace": ns, "involvedObject.kind": "Pod", "involvedObject.namespace": ns,
		"involvedObject.name": "p", "involvedObject.uid": "uid-1", "involvedObject.apiVersion": "v1",
		"involvedObject.resourceVersion": "5", "involvedObject.fieldPath": "spec.containers{c}", "reason": "Started",
		"reportingComponent": "node-agent", "source": "node-agent", "type": "Normal",
	}, lister(ctx, evs, ns))

	rss := client.ReplicaSets(s.Conn)
	labels := map[string]string{"app": "f"}
	rs, err := rss.Create(ctx, &appsv1.ReplicaSet{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: "rs"},
		Spec: &appsv1.ReplicaSetSpec{Replicas: proto.Int32(3), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: &corev1.PodTemplateSpec{Metadata: &metav1.ObjectMeta{Labels: labels},
				Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "img"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	rs.Status = &appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2}
	if _, err := rss.UpdateStatus(ctx, rs); err != nil {
		t.Fatal(err)
	}
	expectSelected(t, ctx, "replicasets", ns, "rs", map[string]string{"metadata.name": "rs", "metadata.namespace": ns, "status.replicas": "3"},
		lister(ctx, rss, ns))
}

// lister lists the names of r's objects in ns that a field selector selects.
func lister[T object.Object, L interface {
	proto.Message
	GetItems() []T
}](ctx context.Context, r *client.Resource[T, L], ns string) func(sel string) ([]string, error) {
	return func(sel string) ([]string, error) {
		l, err := r.List(ctx, &metav1.ListOptions{Namespace: ns, FieldSelector: sel})
		return names(l.GetItems()), err
	}
}

// expectSelected checks that list(field=value) returns name and
// list(field!=value) does not, for every field.
func expectSelected(t *testing.T, ctx context.Context, resource, ns, name string, fields map[string]string, list func(sel string) ([]string, error)) {
	t.Helper()
	for f, v := range fields {
		for _, tc := range []struct {
			op   string
			want bool
		}{{"=", true}, {"!=", false}} {
			got, err := list(f + tc.op + v)
			if err != nil {
				t.Fatalf("%s: list %s%s%s: %v", resource, f, tc.op, v, err)
			}
			found := false
			for _, n := range got {
				found = found || n == name
			}
			if found != tc.want {
				t.Errorf("%s: list %s%s%s in %q returned %v: %s selected %v, want %v", resource, f, tc.op, v, ns, got, name, found, tc.want)
			}
		}
	}
}
