package podgc

import (
	"context"
	"testing"
	"time"

	"skiff.dev/internal/client"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
)

// TestCacheLagDoesNotCostANodeItsPods: the node cache lacks node-late (it
// lags behind the node's creation; the test plays that by hiding the node
// from the controller's lookup). Once the quarantine is over the GET finds
// the node: its pod stays, and the node is quarantined again. When the node
// is really deleted, its pod goes at the end of that quarantine.
func TestCacheLagDoesNotCostANodeItsPods(t *testing.T) {
	env := managertest.Start(t)
	if _, err := client.Nodes(env.Conn).Create(env.Ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "node-late"}}); err != nil {
		t.Fatal(err)
	}
	pods := client.Pods(env.Conn)
	if _, err := pods.Create(env.Ctx, &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec:     &corev1.PodSpec{NodeName: "node-late", Containers: []*corev1.Container{{Name: "c", Image: "busybox"}}},
	}); err != nil {
		t.Fatal(err)
	}

	clock := workqueue.NewFakeClock(time.Now())
	env.Manager.Clock = clock
	c := New(env.Manager, Options{})
	cached := c.nodeCached
	c.nodeCached = func(name string) bool { return name != "node-late" && cached(name) }
	env.StartInformers()
	env.GoErr(c.Run)
	ctx, cancel := context.WithTimeout(env.Ctx, 15*time.Second)
	defer cancel()
	step := func(d time.Duration) {
		t.Helper()
		if err := clock.BlockUntilWaiters(ctx, 1); err != nil {
			t.Fatalf("no pass armed a timer for the next: %v", err)
		}
		clock.Step(d)
	}
	podThere := func(why string) {
		t.Helper()
		if err := clock.BlockUntilWaiters(ctx, 1); err != nil {
			t.Fatal(err)
		}
		p, err := pods.Get(env.Ctx, "default", "web")
		if err != nil || p.GetStatus().GetPhase() == "Failed" {
			t.Fatalf("%s: pod web %v, %v", why, p.GetStatus(), err)
		}
	}

	step(20 * time.Second)
	step(20 * time.Second) // the quarantine is over: the GET finds node-late
	podThere("the API has node-late")
	if _, err := client.Nodes(env.Conn).Delete(env.Ctx, &metav1.DeleteRequest{Name: "node-late"}); err != nil {
		t.Fatal(err)
	}
	step(20 * time.Second)
	step(19 * time.Second)
	podThere("within the second quarantine")
	step(time.Second)
	env.Await(15*time.Second, "pod web deleted at the end of the second quarantine", func() (bool, string) {
		_, ok := env.Pods().Store().GetByName("default", "web")
		return !ok, "pod web still there"
	})
}
