package nodelifecycle_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/client"
	"skiff.dev/internal/workqueue"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/nodelifecycle"
)

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
	ctx, cancel := context.WithTimeout(env.Ctx, patience)
	defer cancel()
	if err := clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatalf("the controller armed no timer for the end of the grace period: %v", err)
	}
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
	if added := taint.GetTimeAdded().AsTime(); !added.Equal(clock.Now()) {
		t.Errorf("taint added at %v, want the controller's clock %v", added, clock.Now())
	}

	// One second short of the default toleration the controller's timer
	// is still armed (its deadline is later) and the pod untouched.
	if err := clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Step(299 * time.Second)
	if err := clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatalf("no timer armed for the end of the toleration: %v", err)
	}
	if p, ok := getPod(env, "web"); !ok || p.GetMetadata().GetDeletionTimestamp() != nil {
		t.Fatalf("pod web evicted before its default toleration ran out: %v", p.GetMetadata())
	}
	clock.Step(time.Second)
	env.Await(patience, "pod web evicted and, its deadline past on the controller's clock, force-deleted", func() (bool, string) {
		_, ok := getPod(env, "web")
		return !ok, "pod web still there"
	})
}
