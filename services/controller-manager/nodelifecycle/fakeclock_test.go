package nodelifecycle_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/workqueue"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/nodelifecycle"
)

// settle waits until env's controller is idle, every key queued reconciled
// (none waiting for a worker, none in Reconcile), with a timer armed on
// clock: then its timer is armed for the deadline it computed. Steps are
// taken only then. A reconcile in flight during a step returns a
// RequeueAfter computed from the time it started, which the queue adds to
// the time after the step: the deadline slides by the step (and a timer
// that fires during the step only queues the key again, behind it). Seen
// so (CI's failure, made at will with a slowed informer and slowed
// reconciles): a 5 ms retry after a conflict fired in the 299 s step while
// a reconcile begun at 41 s was in flight; its 300 s became 640 s, the
// retry's reconcile, begun at 340 s, armed its 1 s after the last step, at
// 342 s, and the pod stayed.
//
// Reconciles are read before adds: equal, every key added by then was
// reconciled by then.
func settle(t *testing.T, env *managertest.Env, clock *workqueue.FakeClock, what string) {
	t.Helper()
	env.Await(patience, what, func() (bool, string) {
		reconciled := env.Metric("controller_reconcile_total", "controller", nodelifecycle.Name)
		added := env.Metric("workqueue_adds_total", "name", nodelifecycle.Name)
		return added == reconciled && clock.Waiters() > 0,
			managertest.Explain("%v keys queued, %v reconciled, %d timers armed", added, reconciled, clock.Waiters())
	})
}

// TestDefaultsOnAFakeClock runs the controller with its defaults (40 s of
// grace, 300 s of default toleration) on a fake clock: nothing polls, the
// controller acts only when the clock reaches the deadlines it computed.
func TestDefaultsOnAFakeClock(t *testing.T) {
	env := managertest.Start(t)
	// The node, its Lease (renewed once, never again) and a pod exist
	// before the controller starts, so it sees the Lease at the clock's
	// start.
	createNode(t, env, "node-a")
	_, err := client.Leases(env.Conn).Create(env.Ctx, &coordinationv1.Lease{
		Metadata: &metav1.ObjectMeta{Namespace: nodelifecycle.NodeLeaseNamespace, Name: "node-a"},
		Spec:     &coordinationv1.LeaseSpec{HolderIdentity: "node-a", LeaseDurationSeconds: proto.Int32(40), RenewTime: timestamppb.Now()},
	})
	if err != nil {
		t.Fatal(err)
	}
	createReadyPod(t, env, podSpec("web", "node-a"))

	clock := workqueue.NewFakeClock(time.Now())
	env.Manager.Clock = clock
	c := nodelifecycle.New(env.Manager, nodelifecycle.Options{})
	env.StartInformers()
	env.GoErr(c.Run)
	settle(t, env, clock, "a timer armed for the end of the grace period")
	if n := getNode(env, "node-a"); len(n.GetSpec().GetTaints()) != 0 {
		t.Fatalf("node tainted within its grace period: %v", n.GetSpec().GetTaints())
	}

	clock.Step(41 * time.Second)
	env.Await(patience, "node-a unreachable after the default grace period", func() (bool, string) {
		n := getNode(env, "node-a")
		taint := noExecuteTaint(n, nodelifecycle.TaintNodeUnreachable)
		p, _ := getPod(env, "web")
		return taint != nil && podReady(p).GetStatus() == "False",
			managertest.Explain("taints %v, pod Ready %v", n.GetSpec().GetTaints(), podReady(p))
	})
	taint := noExecuteTaint(getNode(env, "node-a"), nodelifecycle.TaintNodeUnreachable)
	// timeAdded is a Time: whole seconds, as Kubernetes keeps it.
	if added, want := taint.GetTimeAdded().AsTime(), clock.Now().Truncate(time.Second); !added.Equal(want) {
		t.Errorf("taint added at %v, want the controller's clock %v in whole seconds", added, want)
	}

	// One second short of the default toleration the controller's timer
	// is still armed (its deadline is later) and the pod untouched.
	settle(t, env, clock, "a timer armed for the end of the toleration")
	clock.Step(299 * time.Second)
	settle(t, env, clock, "a timer armed for the end of the toleration, 1 s ahead")
	if p, ok := getPod(env, "web"); !ok || p.GetMetadata().GetDeletionTimestamp() != nil {
		t.Fatalf("pod web evicted before its default toleration ran out: %v", p.GetMetadata())
	}
	clock.Step(time.Second)
	env.Await(patience, "pod web evicted and, its deadline past on the controller's clock, force-deleted", func() (bool, string) {
		_, ok := getPod(env, "web")
		return !ok, "pod web still there"
	})
}

// TestTolerationCountsFromWhenThePodWasSeen: a node unreachable for long,
// whose pods were evicted when their toleration ran out, gets a new pod
// pinned to it (as a ReplicaSet whose template names the node replaces
// them). The new pod's toleration counts from when the controller first saw
// it there, not from when the taint was added: it stays its 300 s, it is
// not evicted at once (which made the ReplicaSet and the controller replace
// and evict pods in a loop, hundreds a minute). A pod tolerating the taint
// for 0 s goes at once.
func TestTolerationCountsFromWhenThePodWasSeen(t *testing.T) {
	env := managertest.Start(t)
	createNode(t, env, "node-a")
	_, err := client.Leases(env.Conn).Create(env.Ctx, &coordinationv1.Lease{
		Metadata: &metav1.ObjectMeta{Namespace: nodelifecycle.NodeLeaseNamespace, Name: "node-a"},
		Spec:     &coordinationv1.LeaseSpec{HolderIdentity: "node-a", LeaseDurationSeconds: proto.Int32(40), RenewTime: timestamppb.Now()},
	})
	if err != nil {
		t.Fatal(err)
	}
	createReadyPod(t, env, podSpec("first", "node-a"))

	clock := workqueue.NewFakeClock(time.Now())
	env.Manager.Clock = clock
	c := nodelifecycle.New(env.Manager, nodelifecycle.Options{})
	env.StartInformers()
	env.GoErr(c.Run)
	settle(t, env, clock, "a timer armed for the end of the grace period")
	clock.Step(41 * time.Second)
	env.Await(patience, "node-a unreachable", func() (bool, string) {
		n := getNode(env, "node-a")
		return noExecuteTaint(n, nodelifecycle.TaintNodeUnreachable) != nil, managertest.Explain("taints %v", n.GetSpec().GetTaints())
	})
	settle(t, env, clock, "a timer armed for the end of pod first's toleration")
	clock.Step(300 * time.Second)
	env.Await(patience, "pod first evicted 300 s after the taint", func() (bool, string) {
		_, ok := getPod(env, "first")
		return !ok, "pod first still there"
	})

	// The node has carried its taint for 300 s: the replacement, seen now,
	// gets its own 300 s (the DefaultTolerationSeconds admission plugin gave
	// it the toleration); the pod tolerating 0 s goes at once.
	createReadyPod(t, env, podSpec("replacement", "node-a"))
	createReadyPod(t, env, podSpec("zero", "node-a", unreachableToleration(proto.Int64(0))))
	env.Await(patience, "pod zero evicted at once; pod replacement kept, marked not ready, its eviction timed", func() (bool, string) {
		p, ok := getPod(env, "replacement")
		if !ok {
			// Not cached yet, or evicted and force-deleted already.
			if _, err := client.Pods(env.Conn).Get(env.Ctx, "default", "replacement"); apierrors.IsNotFound(err) {
				t.Fatal("pod replacement evicted (and force-deleted) at once, as the taint is older than its toleration")
			}
			return false, "pod replacement not cached yet"
		}
		if p.GetMetadata().GetDeletionTimestamp() != nil {
			t.Fatalf("pod replacement evicted at once, as the taint is older than its toleration: deletionTimestamp %v", p.GetMetadata().GetDeletionTimestamp())
		}
		_, zero := getPod(env, "zero")
		return !zero && podReady(p).GetStatus() == "False" && clock.Waiters() == 1,
			managertest.Explain("pod zero present %v, replacement Ready %v, timers armed %d", zero, podReady(p), clock.Waiters())
	})
	// A timer due before the replacement's 300 s are up would fire now and
	// its reconcile evict the pod before arming the next one.
	settle(t, env, clock, "a timer armed for the end of pod replacement's toleration")
	clock.Step(299 * time.Second)
	settle(t, env, clock, "a timer armed for the end of pod replacement's toleration, 1 s ahead")
	if p, err := client.Pods(env.Conn).Get(env.Ctx, "default", "replacement"); err != nil || p.GetMetadata().GetDeletionTimestamp() != nil {
		t.Fatalf("pod replacement evicted before its toleration ran out: %v, %v", p.GetMetadata(), err)
	}
	clock.Step(time.Second)
	env.Await(patience, "pod replacement evicted 300 s after it was first seen", func() (bool, string) {
		_, ok := getPod(env, "replacement")
		return !ok, "pod replacement still there"
	})
}

// TestRestartGivesPodsAFreshToleration: the controller remembers when it
// first saw each pod on a tainted node in memory only, as Kubernetes' taint
// manager does. A controller that starts (a restart, or another copy taking
// over leadership) sees every pod anew: a pod 200 s into its 300 s on a
// not-ready node gets 300 s more, not 100 s.
func TestRestartGivesPodsAFreshToleration(t *testing.T) {
	// A grace period of an hour: the node stays not-ready (its agent says
	// Ready=False) without a Lease to renew.
	opts := nodelifecycle.Options{GracePeriod: time.Hour}
	first := managertest.Start(t)
	createNode(t, first, "node-a")
	setNodeReady(t, first, "node-a", "False")
	createReadyPod(t, first, podSpec("web", "node-a"))

	clock := workqueue.NewFakeClock(time.Now())
	first.Manager.Clock = clock
	c := nodelifecycle.New(first.Manager, opts)
	first.StartInformers()
	first.GoErr(c.Run)
	first.Await(patience, "node-a tainted not-ready, pod web not ready", func() (bool, string) {
		n := getNode(first, "node-a")
		p, _ := getPod(first, "web")
		return noExecuteTaint(n, nodelifecycle.TaintNodeNotReady) != nil && podReady(p).GetStatus() == "False",
			managertest.Explain("taints %v, pod Ready %v", n.GetSpec().GetTaints(), podReady(p))
	})
	settle(t, first, clock, "a timer armed for the end of pod web's toleration")
	clock.Step(200 * time.Second)
	first.Stop()
	if n := clock.Waiters(); n != 0 {
		t.Fatalf("%d timers still armed by the stopped controller", n)
	}

	second := managertest.NewEnv(t, first.Server, first.Conn, first.Logger)
	second.Manager.Clock = clock
	c = nodelifecycle.New(second.Manager, opts)
	second.StartInformers()
	second.GoErr(c.Run)
	settle(t, second, clock, "the new controller's timer armed")
	// 300 s after the taint: the first controller's deadline. A timer due
	// then fires, its reconcile evicts, and a timer is armed again (for the
	// end of the grace period); one not due then stays armed.
	clock.Step(100 * time.Second)
	settle(t, second, clock, "a timer armed after the first controller's deadline")
	if p, err := client.Pods(second.Conn).Get(second.Ctx, "default", "web"); err != nil || p.GetMetadata().GetDeletionTimestamp() != nil {
		t.Fatalf("pod web evicted 300 s after the taint although the new controller saw it 100 s ago: %v, %v", p.GetMetadata(), err)
	}
	clock.Step(199 * time.Second)
	settle(t, second, clock, "a timer armed for the end of pod web's toleration, 1 s ahead")
	if p, err := client.Pods(second.Conn).Get(second.Ctx, "default", "web"); err != nil || p.GetMetadata().GetDeletionTimestamp() != nil {
		t.Fatalf("pod web evicted before 300 s after the new controller saw it: %v, %v", p.GetMetadata(), err)
	}
	clock.Step(time.Second)
	second.Await(patience, "pod web evicted 300 s after the new controller first saw it", func() (bool, string) {
		p, ok := getPod(second, "web")
		return ok && p.GetMetadata().GetDeletionTimestamp() != nil, managertest.Explain("present %v, deletionTimestamp %v", ok, p.GetMetadata().GetDeletionTimestamp())
	})
}
