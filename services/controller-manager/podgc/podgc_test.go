package podgc_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/podgc"
)

// patience bounds each wait for the controller to act.
const patience = 15 * time.Second

// startOnFakeClock runs a pod garbage collector with o on env, on a fake
// clock, and waits until its first pass armed the timer of the next.
func startOnFakeClock(t *testing.T, env *managertest.Env, o podgc.Options) *workqueue.FakeClock {
	t.Helper()
	clock := workqueue.NewFakeClock(time.Now())
	env.Manager.Clock = clock
	c := podgc.New(env.Manager, o)
	env.StartInformers()
	env.GoErr(c.Run)
	waitArmed(t, env, clock)
	return clock
}

// waitArmed waits until a pass armed the timer of the next one.
func waitArmed(t *testing.T, env *managertest.Env, clock *workqueue.FakeClock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(env.Ctx, patience)
	defer cancel()
	if err := clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatalf("no pass armed a timer for the next: %v", err)
	}
}

// createPod creates a pod on node ("": unbound) in phase (if not "").
func createPod(t *testing.T, env *managertest.Env, name, node, phase string) *corev1.Pod {
	t.Helper()
	pods := client.Pods(env.Conn)
	p, err := pods.Create(env.Ctx, &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: &corev1.PodSpec{
			NodeName:                      node,
			Containers:                    []*corev1.Container{{Name: "c", Image: "busybox"}},
			TerminationGracePeriodSeconds: proto.Int64(30),
		},
	})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	if phase != "" {
		p.Status = &corev1.PodStatus{Phase: phase}
		if p, err = pods.UpdateStatus(env.Ctx, p); err != nil {
			t.Fatalf("pod %s: set phase %s: %v", name, phase, err)
		}
	}
	return p
}

func createNode(t *testing.T, env *managertest.Env, name string) {
	t.Helper()
	if _, err := client.Nodes(env.Conn).Create(env.Ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
}

func deleteNode(t *testing.T, env *managertest.Env, name string) {
	t.Helper()
	if _, err := client.Nodes(env.Conn).Delete(env.Ctx, &metav1.DeleteRequest{Name: name}); err != nil {
		t.Fatalf("delete node %s: %v", name, err)
	}
}

// cachedPods lists the names of the pods in env's cache.
func cachedPods(env *managertest.Env) map[string]bool {
	out := map[string]bool{}
	for _, p := range env.Pods().Store().List() {
		out[p.GetMetadata().GetName()] = true
	}
	return out
}

// mustExist fails the test unless the API has every pod named, not being
// deleted and not Failed by the collector.
func mustExist(t *testing.T, env *managertest.Env, why string, names ...string) {
	t.Helper()
	for _, name := range names {
		p, err := client.Pods(env.Conn).Get(env.Ctx, "default", name)
		if err != nil {
			t.Fatalf("%s: pod %s: %v", why, name, err)
		}
		if p.GetStatus().GetPhase() == "Failed" {
			t.Fatalf("%s: pod %s set Failed", why, name)
		}
	}
}

// TestOrphanedPods: the pods of a deleted node, running and terminating,
// are set Failed with DisruptionTarget (DeletionByPodGC) and force-deleted
// once the node has been missing for the 40 s quarantine, not before; the
// pods of a node that exists stay.
func TestOrphanedPods(t *testing.T) {
	env := managertest.Start(t)
	createNode(t, env, "node-a")
	createNode(t, env, "node-gone")
	createPod(t, env, "on-a", "node-a", "Running")
	createPod(t, env, "running", "node-gone", "Running")
	createPod(t, env, "terminating", "node-gone", "Running")
	if _, err := client.Pods(env.Conn).Delete(env.Ctx, &metav1.DeleteRequest{Namespace: "default", Name: "terminating"}); err != nil {
		t.Fatal(err)
	}
	deleteNode(t, env, "node-gone")

	// What the pods looked like last before they went.
	var mu sync.Mutex
	last := map[string]*corev1.Pod{}
	env.Pods().AddHandler(informer.Handler[*corev1.Pod]{OnUpdate: func(_, p *corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		last[p.GetMetadata().GetName()] = p
	}})

	clock := startOnFakeClock(t, env, podgc.Options{})
	// A timer that fired too early would run a pass that deletes before it
	// arms the next timer.
	for range 2 {
		clock.Step(19 * time.Second)
		waitArmed(t, env, clock)
		mustExist(t, env, "within the quarantine", "on-a", "running", "terminating")
	}
	clock.Step(2 * time.Second)
	env.Await(patience, "the pods of node-gone deleted 40 s after the controller found them", func() (bool, string) {
		left := cachedPods(env)
		return !left["running"] && !left["terminating"], managertest.Explain("pods %v", left)
	})
	mustExist(t, env, "on a node that exists", "on-a")

	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"running", "terminating"} {
		p := last[name]
		var cond *corev1.PodCondition
		for _, c := range p.GetStatus().GetConditions() {
			if c.GetType() == "DisruptionTarget" {
				cond = c
			}
		}
		if p.GetStatus().GetPhase() != "Failed" || cond.GetStatus() != "True" || cond.GetReason() != "DeletionByPodGC" ||
			cond.GetMessage() != "PodGC: node no longer exists" || cond.GetLastTransitionTime() == nil {
			t.Errorf("pod %s before its deletion: phase %q, DisruptionTarget %v", name, p.GetStatus().GetPhase(), cond)
		}
	}
	if got := env.Metric("pod_gc_collector_force_delete_pods_total", "namespace", "default", "reason", "orphaned"); got != 2 {
		t.Errorf("orphaned pods force-deleted = %v, want 2", got)
	}
	if got := env.Metric("pod_gc_collector_force_delete_pod_errors_total"); got != 0 {
		t.Errorf("errors = %v, want 0", got)
	}
}

// TestDeletedNodeStartsTheQuarantine: a node deleted while the controller
// runs starts its pods' quarantine at once, not at the next periodic pass.
func TestDeletedNodeStartsTheQuarantine(t *testing.T) {
	env := managertest.Start(t)
	createNode(t, env, "node-a")
	createPod(t, env, "web", "node-a", "Running")
	clock := startOnFakeClock(t, env, podgc.Options{})

	clock.Step(15 * time.Second) // 5 s before the next periodic pass
	deleteNode(t, env, "node-a")
	env.Await(patience, "a pass as soon as node-a's deletion is seen", func() (bool, string) {
		passes := env.Metric("controller_reconcile_total", "controller", "podgc")
		return passes == 2, managertest.Explain("%v passes", passes)
	})
	// The quarantine ends 40 s after the deletion was seen; the periodic
	// passes in between (in 5 s, then 20 s later) do not delete.
	clock.Step(5 * time.Second)
	waitArmed(t, env, clock)
	clock.Step(34 * time.Second)
	waitArmed(t, env, clock)
	mustExist(t, env, "within the quarantine", "web")
	clock.Step(time.Second)
	env.Await(patience, "pod web deleted 40 s after its node", func() (bool, string) {
		return !cachedPods(env)["web"], "pod web still there"
	})
}

// TestTerminatedPodsBeyondTheThreshold: of the terminated pods beyond the
// threshold, the one its agent evicted goes first, then the oldest; running
// pods do not count.
func TestTerminatedPodsBeyondTheThreshold(t *testing.T) {
	env := managertest.Start(t)
	createNode(t, env, "node-a")
	createPod(t, env, "done-1", "node-a", "Succeeded")
	createPod(t, env, "done-2", "node-a", "Failed")
	createPod(t, env, "done-3", "node-a", "Succeeded")
	evicted := createPod(t, env, "evicted", "node-a", "")
	evicted.Status = &corev1.PodStatus{Phase: "Failed", Reason: "Evicted"}
	if _, err := client.Pods(env.Conn).UpdateStatus(env.Ctx, evicted); err != nil {
		t.Fatal(err)
	}
	createPod(t, env, "running", "node-a", "Running")

	startOnFakeClock(t, env, podgc.Options{TerminatedPodThreshold: 2})
	env.Await(patience, "two terminated pods left", func() (bool, string) {
		left := cachedPods(env)
		return len(left) == 3, managertest.Explain("pods %v", left)
	})
	if left := cachedPods(env); !left["done-2"] || !left["done-3"] || !left["running"] {
		t.Errorf("pods left %v, want done-2, done-3 and running", left)
	}
	if got := env.Metric("pod_gc_collector_force_delete_pods_total", "reason", "terminated"); got != 2 {
		t.Errorf("terminated pods force-deleted = %v, want 2", got)
	}
}

// TestUnscheduledTerminatingPod: a terminating pod bound to no node (a
// finalizer holds it) is set Failed, so that the finalizer's owner sees it
// finished, and force-deleted: it goes when the finalizer is removed.
func TestUnscheduledTerminatingPod(t *testing.T) {
	env := managertest.Start(t)
	pods := client.Pods(env.Conn)
	_, err := pods.Create(env.Ctx, &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "held", Finalizers: []string{"example.com/hold"}},
		Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "busybox"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Delete(env.Ctx, &metav1.DeleteRequest{Namespace: "default", Name: "held"}); err != nil {
		t.Fatal(err)
	}
	createPod(t, env, "pending", "", "")

	clock := startOnFakeClock(t, env, podgc.Options{})
	env.Await(patience, "pod held set Failed and deleted with grace period 0", func() (bool, string) {
		held, _ := env.Pods().Store().GetByName("default", "held")
		return held.GetStatus().GetPhase() == "Failed" && held.GetMetadata().DeletionGracePeriodSeconds != nil && held.GetMetadata().GetDeletionGracePeriodSeconds() == 0,
			managertest.Explain("phase %q, deletionGracePeriodSeconds %v", held.GetStatus().GetPhase(), held.GetMetadata().DeletionGracePeriodSeconds)
	})
	// The next pass has nothing more to do for it.
	clock.Step(podgc.CheckPeriod)
	waitArmed(t, env, clock)
	if got := env.Metric("pod_gc_collector_force_delete_pods_total", "reason", "unscheduled"); got != 1 {
		t.Errorf("unscheduled pods force-deleted = %v, want 1", got)
	}
	mustExist(t, env, "not terminating", "pending")

	err = client.RetryOnConflict(env.Ctx, client.DefaultRetry, func() error {
		cur, err := pods.Get(env.Ctx, "default", "held")
		if err != nil {
			return err
		}
		cur.Metadata.Finalizers = nil
		_, err = pods.Update(env.Ctx, cur)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(env.Ctx, "default", "held"); !apierrors.IsNotFound(err) {
		t.Errorf("pod held after its finalizer went: %v, want not found (its grace period was 0)", err)
	}
}
