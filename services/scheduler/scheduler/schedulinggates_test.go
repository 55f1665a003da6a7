package scheduler

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
)

// TestGatedPodWaitsUntilItsGatesAreRemoved: a pod created with scheduling
// gates stays Pending with PodScheduled=False SchedulingGated (written at
// create) and is never tried; removing one gate changes nothing, removing
// the last one schedules it.
func TestGatedPodWaitsUntilItsGatesAreRemoved(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "n1", cpu: "4", mem: "4Gi"})
	e.startScheduler(Config{})
	p := newPod("gated", "100m", "")
	p.Spec.SchedulingGates = []*corev1.PodSchedulingGate{{Name: "example.com/quota"}, {Name: "example.com/review"}}
	e.createPod(p)
	e.podScheduledFalse("gated", "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")

	removeGate := func() {
		t.Helper()
		err := client.RetryOnConflict(e.ctx, client.DefaultRetry, func() error {
			cur, err := client.Pods(e.conn).Get(e.ctx, "test", "gated")
			if err != nil {
				return err
			}
			next := proto.Clone(cur).(*corev1.Pod)
			next.Spec.SchedulingGates = next.Spec.SchedulingGates[1:]
			_, err = client.Pods(e.conn).Update(e.ctx, next)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	removeGate()
	// A pod that is placed when it should not be would be seen here: the
	// free pod created after it is placed, the gated one still is not.
	e.createPod(newPod("free", "100m", ""))
	e.nodeOf("free", 10*time.Second)
	if p := e.pod("gated"); p.GetSpec().GetNodeName() != "" || len(p.GetSpec().GetSchedulingGates()) != 1 {
		t.Fatalf("with one gate left: %s, gates %v", describePod(p), p.GetSpec().GetSchedulingGates())
	}
	if evs := e.eventsFor("gated"); len(evs) != 0 {
		t.Errorf("a gated pod was tried: events %v", evs)
	}

	removeGate()
	if n := e.nodeOf("gated", 10*time.Second); n != "n1" {
		t.Errorf("bound to %q, want n1", n)
	}
}
