package nodelifecycle

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func lease(renew *timestamppb.Timestamp) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		Metadata: &metav1.ObjectMeta{Namespace: NodeLeaseNamespace, Name: "n1"},
		Spec:     &coordinationv1.LeaseSpec{HolderIdentity: "n1", RenewTime: renew},
	}
}

// TestHeartbeats tells the story of one node's Lease as the controller sees
// it, step by step: the controller's clock, not the renewTime the agent
// wrote, dates each heartbeat.
func TestHeartbeats(t *testing.T) {
	n := &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n1", CreationTimestamp: ts(-500)}}
	h := newHeartbeats()
	steps := []struct {
		what  string
		now   time.Time
		lease *coordinationv1.Lease
		want  time.Time
	}{
		{"no Lease seen yet: the node's creation", at(0), nil, at(-500)},
		{"first sight of a Lease, even an old one: now", at(10), lease(ts(-3600)), at(10)},
		{"the same renewTime later: still when first seen", at(30), lease(ts(-3600)), at(10)},
		{"renewed (the agent's clock is far ahead): now", at(40), lease(ts(9999)), at(40)},
		{"renewTime going back is a renewal too", at(50), lease(ts(5)), at(50)},
		{"Lease deleted: the last heartbeat stays", at(90), nil, at(50)},
		{"Lease without renewTime: a change", at(95), lease(nil), at(95)},
	}
	for _, s := range steps {
		if got := h.heartbeat(n, s.lease, s.now); !got.Equal(s.want) {
			t.Fatalf("%s: heartbeat = %v, want %v", s.what, got.Sub(epoch), s.want.Sub(epoch))
		}
	}
	h.forget("n1")
	if got := h.heartbeat(n, nil, at(100)); !got.Equal(at(-500)) {
		t.Fatalf("after forget: heartbeat = %v, want the creation", got.Sub(epoch))
	}
}
