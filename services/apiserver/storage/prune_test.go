package storage

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestFieldPrunerKeepsOnlyTheSelectableFields(t *testing.T) {
	pod := &corev1.Pod{ApiVersion: "v1", Kind: "Pod",
		Metadata: &metav1.ObjectMeta{Name: "web-1", Namespace: "shop", Uid: "u", Labels: map[string]string{"app": "web"}},
		Spec: &corev1.PodSpec{NodeName: "node-a", SchedulerName: "default-scheduler", RestartPolicy: "Always",
			Containers: []*corev1.Container{{Name: "c", Image: "img", Args: []string{"a", "b"}}}},
		Status: &corev1.PodStatus{Phase: "Running", PodIp: "10.0.0.7", Conditions: []*corev1.PodCondition{{Type: "Ready", Status: "True"}}},
	}
	raw, err := proto.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	// What the watch cache does: a later metadata carrying the resourceVersion.
	rv, _ := proto.Marshal(&metav1.ObjectMeta{ResourceVersion: "9"})
	raw = protowire.AppendBytes(protowire.AppendTag(raw, 3, protowire.BytesType), rv)

	p, err := NewFieldPruner(pod.ProtoReflect().Descriptor(), []string{
		"metadata.name", "metadata.namespace", "spec.nodeName", "spec.schedulerName", "spec.restartPolicy", "status.phase", "status.podIP"})
	if err != nil {
		t.Fatal(err)
	}
	var got corev1.Pod
	pruned := decodePruned(t, p, raw, &got)
	want := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: "web-1", Namespace: "shop"},
		Spec:     &corev1.PodSpec{NodeName: "node-a", SchedulerName: "default-scheduler", RestartPolicy: "Always"},
		Status:   &corev1.PodStatus{Phase: "Running", PodIp: "10.0.0.7"},
	}
	if !proto.Equal(&got, want) {
		t.Fatalf("pruned pod %v\nwant %v", &got, want)
	}
	if len(pruned) >= len(raw) {
		t.Errorf("pruned to %d of %d bytes", len(pruned), len(raw))
	}

	t.Run("a later occurrence still wins", func(t *testing.T) {
		moved, _ := proto.Marshal(&corev1.Pod{Spec: &corev1.PodSpec{NodeName: "node-b"}})
		var got corev1.Pod
		decodePruned(t, p, append(append([]byte(nil), raw...), moved...), &got)
		if got.GetSpec().GetNodeName() != "node-b" || got.GetSpec().GetSchedulerName() != "default-scheduler" {
			t.Fatalf("merged spec %v, want nodeName node-b and the scheduler name kept", got.GetSpec())
		}
	})
	t.Run("a path ending at a message keeps it whole", func(t *testing.T) {
		ev := &corev1.Event{Reason: "Started", Source: &corev1.EventSource{Component: "node-agent", Host: "node-a"}, Message: "long text"}
		raw, _ := proto.Marshal(ev)
		p, err := NewFieldPruner(ev.ProtoReflect().Descriptor(), []string{"source", "source.component", "reason"})
		if err != nil {
			t.Fatal(err)
		}
		var got corev1.Event
		decodePruned(t, p, raw, &got)
		if want := (&corev1.Event{Reason: "Started", Source: ev.Source}); !proto.Equal(&got, want) {
			t.Fatalf("pruned event %v, want %v", &got, want)
		}
	})
	t.Run("unknown and non-message paths are refused", func(t *testing.T) {
		for _, path := range []string{"spec.noSuchField", "metadata.name.first", "spec.containers.image"} {
			if _, err := NewFieldPruner(pod.ProtoReflect().Descriptor(), []string{path}); err == nil {
				t.Errorf("NewFieldPruner(%q) succeeded, want an error", path)
			}
		}
	})
	t.Run("corrupt bytes are an error", func(t *testing.T) {
		if _, err := p.Prune(raw[:len(raw)-3]); err == nil {
			t.Error("Prune(truncated) succeeded, want an error")
		}
	})
}

// decodePruned prunes raw with p and decodes the result into m; it
// returns the pruned bytes.
func decodePruned(t *testing.T, p *FieldPruner, raw []byte, m proto.Message) []byte {
	t.Helper()
	pruned, err := p.Prune(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(pruned, m); err != nil {
		t.Fatal(err)
	}
	return pruned
}
