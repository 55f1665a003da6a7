package integration

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/leaderelection"
	"skiff.dev/internal/workqueue"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// Short durations so that the tests take seconds; the ratios are
// Kubernetes' (15s / 10s / 2s).
const (
	electionLeaseDuration = time.Second
	electionRenewDeadline = 600 * time.Millisecond
	electionRetryPeriod   = 100 * time.Millisecond
)

// Lease faults injected into one candidate's client.
const (
	leasesOK   int32 = iota
	leasesFail       // every call fails at once (the apiserver refuses)
	leasesHang       // every call hangs until cancelled (a network partition)
)

// faultyLeases is a real Leases client that can be cut off.
type faultyLeases struct {
	leaderelection.LeaseClient
	mode atomic.Int32
}

func (f *faultyLeases) fault(ctx context.Context) error {
	switch f.mode.Load() {
	case leasesFail:
		return apierrors.NewServiceUnavailable("injected fault")
	case leasesHang:
		<-ctx.Done()
		return apierrors.FromError(ctx.Err())
	}
	return nil
}

func (f *faultyLeases) Get(ctx context.Context, ns, name string, opts ...grpc.CallOption) (*coordinationv1.Lease, error) {
	if err := f.fault(ctx); err != nil {
		return nil, err
	}
	return f.LeaseClient.Get(ctx, ns, name, opts...)
}

func (f *faultyLeases) Create(ctx context.Context, l *coordinationv1.Lease, opts ...grpc.CallOption) (*coordinationv1.Lease, error) {
	if err := f.fault(ctx); err != nil {
		return nil, err
	}
	return f.LeaseClient.Create(ctx, l, opts...)
}

func (f *faultyLeases) Update(ctx context.Context, l *coordinationv1.Lease, opts ...grpc.CallOption) (*coordinationv1.Lease, error) {
	if err := f.fault(ctx); err != nil {
		return nil, err
	}
	return f.LeaseClient.Update(ctx, l, opts...)
}

// electionGroup runs candidates for one lease and counts the moments when
// more than one of them was working.
type electionGroup struct {
	t        *testing.T
	conn     grpc.ClientConnInterface
	lock     leaderelection.LeaseLock
	clock    workqueue.Clock // every candidate's; nil: the real clock
	active   atomic.Int32
	overlaps atomic.Int32
}

// candidate is one running leaderelection.Run.
type candidate struct {
	id      string
	leases  *faultyLeases
	reg     *prometheus.Registry
	cancel  context.CancelFunc
	leading chan context.Context // lead's context, when lead starts
	result  chan error           // what Run returned
}

func (g *electionGroup) start(id string) *candidate {
	c := &candidate{
		id:      id,
		leases:  &faultyLeases{LeaseClient: client.Leases(g.conn)},
		reg:     prometheus.NewRegistry(),
		leading: make(chan context.Context, 1),
		result:  make(chan error, 1),
	}
	cfg := leaderelection.Config{
		Lock:          g.lock,
		Identity:      id,
		Client:        c.leases,
		LeaseDuration: electionLeaseDuration,
		RenewDeadline: electionRenewDeadline,
		RetryPeriod:   electionRetryPeriod,
		Clock:         g.clock,
		Logger:        zaptest.NewLogger(g.t).Named(id),
		Registerer:    c.reg,
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		c.result <- leaderelection.Run(ctx, cfg, func(ctx context.Context) {
			if g.active.Add(1) > 1 {
				g.overlaps.Add(1)
			}
			defer g.active.Add(-1)
			c.leading <- ctx
			<-ctx.Done()
		})
	}()
	g.t.Cleanup(func() {
		cancel()
		select {
		case <-c.result:
		case <-time.After(10 * time.Second):
			g.t.Errorf("%s: Run did not return after its context was cancelled", id)
		}
	})
	return c
}

func (c *candidate) gauge(t *testing.T) float64 {
	t.Helper()
	n, err := testutil.GatherAndCount(c.reg, "leader_election_master_status")
	if err != nil || n != 1 {
		t.Fatalf("%s: leader_election_master_status: %d series, %v", c.id, n, err)
	}
	mfs, _ := c.reg.Gather()
	return mfs[0].GetMetric()[0].GetGauge().GetValue()
}

// waitLeading waits for c's lead to start and returns its context.
func (c *candidate) waitLeading(t *testing.T, within time.Duration) context.Context {
	t.Helper()
	select {
	case ctx := <-c.leading:
		return ctx
	case err := <-c.result:
		t.Fatalf("%s: Run returned %v before leading", c.id, err)
	case <-time.After(within):
		t.Fatalf("%s: not leading after %v", c.id, within)
	}
	return nil
}

func (c *candidate) waitResult(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case err := <-c.result:
		c.result <- err // for the cleanup
		return err
	case <-time.After(within):
		t.Fatalf("%s: Run did not return within %v", c.id, within)
	}
	return nil
}

func (g *electionGroup) lease() *coordinationv1.Lease {
	g.t.Helper()
	l, err := client.Leases(g.conn).Get(context.Background(), g.lock.Namespace, g.lock.Name)
	if err != nil {
		g.t.Fatalf("reading the lease: %v", err)
	}
	return l
}

func TestLeaderElectionOneLeaderAtATimeAndReleaseOnStop(t *testing.T) {
	s := apiservertest.Start(t)
	g := &electionGroup{t: t, conn: s.Conn, lock: leaderelection.LeaseLock{Namespace: "kube-system", Name: "one-at-a-time"}}
	a, b := g.start("a"), g.start("b")

	var leader, standby *candidate
	var leaderCtx context.Context
	select {
	case leaderCtx = <-a.leading:
		leader, standby = a, b
	case leaderCtx = <-b.leading:
		leader, standby = b, a
	case <-time.After(10 * time.Second):
		t.Fatal("no candidate leads after 10s")
	}

	// While the leader renews, the standby stays idle, well past one lease duration.
	select {
	case <-standby.leading:
		t.Fatalf("%s leads while %s renews", standby.id, leader.id)
	case <-leaderCtx.Done():
		t.Fatalf("%s stopped leading: %v", leader.id, context.Cause(leaderCtx))
	case <-time.After(3 * electionLeaseDuration):
	}
	if l := g.lease(); l.GetSpec().GetHolderIdentity() != leader.id || l.GetSpec().GetLeaseDurationSeconds() != 1 {
		t.Fatalf("lease spec = %v, want holder %q for 1s", l.GetSpec(), leader.id)
	}
	if lg, sg := leader.gauge(t), standby.gauge(t); lg != 1 || sg != 0 {
		t.Errorf("leader_election_master_status: leader %v, standby %v; want 1, 0", lg, sg)
	}

	// Stopping the leader releases the lease: the standby takes over at its
	// next retry, well before the lease would have expired.
	stoppedAt := time.Now()
	leader.cancel()
	if err := leader.waitResult(t, 5*time.Second); err != nil {
		t.Fatalf("%s: Run after cancel = %v, want nil", leader.id, err)
	}
	standby.waitLeading(t, 5*time.Second)
	if took := time.Since(stoppedAt); took >= electionLeaseDuration-electionRetryPeriod {
		t.Errorf("the standby took over %v after the leader stopped: not through the release", took)
	}
	if n := g.overlaps.Load(); n != 0 {
		t.Errorf("%d times two candidates led at once", n)
	}
	if l := g.lease(); l.GetSpec().GetHolderIdentity() != standby.id || l.GetSpec().GetLeaseTransitions() != 1 {
		t.Errorf("lease spec = %v, want holder %q after 1 transition", l.GetSpec(), standby.id)
	}
	if lg := leader.gauge(t); lg != 0 {
		t.Errorf("leader_election_master_status of the stopped leader = %v, want 0", lg)
	}
}

func TestLeaderElectionTakeoverWhenTheLeaderIsCutOff(t *testing.T) {
	s := apiservertest.Start(t)
	for _, tc := range []struct {
		name  string
		fault int32
	}{
		{"apiserver refuses", leasesFail},
		{"calls hang", leasesHang},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &electionGroup{t: t, conn: s.Conn, lock: leaderelection.LeaseLock{Namespace: "kube-system", Name: "cut-off-" + map[int32]string{leasesFail: "fail", leasesHang: "hang"}[tc.fault]}}
			old := g.start("old")
			oldCtx := old.waitLeading(t, 10*time.Second)
			successor := g.start("successor")

			cutAt := time.Now()
			old.leases.mode.Store(tc.fault)

			// The old leader's work stops within RenewDeadline of its last
			// successful renewal, so within RenewDeadline of the cut.
			select {
			case <-oldCtx.Done():
			case <-time.After(electionRenewDeadline + 300*time.Millisecond):
				t.Fatalf("old leader still working %v after it was cut off", time.Since(cutAt))
			}
			stoppedAfter := time.Since(cutAt)
			if err := old.waitResult(t, 5*time.Second); !errors.Is(err, leaderelection.ErrLeaderLost) {
				t.Fatalf("old leader's Run = %v, want ErrLeaderLost", err)
			}

			// The successor takes over once the lease has gone unrenewed for its duration.
			successor.waitLeading(t, electionLeaseDuration+5*time.Second)
			tookOver := time.Since(cutAt)
			if tookOver < electionLeaseDuration-electionRetryPeriod {
				t.Errorf("successor took over %v after the cut, before the lease could expire", tookOver)
			}
			if stoppedAfter >= tookOver {
				t.Errorf("old leader stopped %v after the cut, successor took over after %v", stoppedAfter, tookOver)
			}
			if n := g.overlaps.Load(); n != 0 {
				t.Errorf("%d times two candidates led at once", n)
			}
			if l := g.lease(); l.GetSpec().GetHolderIdentity() != "successor" || l.GetSpec().GetLeaseTransitions() != 1 {
				t.Errorf("lease spec = %v, want holder successor after 1 transition", l.GetSpec())
			}
			t.Logf("work stopped %v after the cut; successor took over after %v", stoppedAfter, tookOver)
		})
	}
}

func TestLeaderElectionStopWhileWaiting(t *testing.T) {
	s := apiservertest.Start(t)
	g := &electionGroup{t: t, conn: s.Conn, lock: leaderelection.LeaseLock{Namespace: "kube-system", Name: "stop-while-waiting"}}
	leader := g.start("leader")
	leader.waitLeading(t, 10*time.Second)
	waiting := g.start("waiting")
	waiting.cancel()
	if err := waiting.waitResult(t, 5*time.Second); err != nil {
		t.Fatalf("Run of a candidate stopped while waiting = %v, want nil", err)
	}
	if l := g.lease(); l.GetSpec().GetHolderIdentity() != "leader" {
		t.Errorf("lease holder = %q, want leader (untouched)", l.GetSpec().GetHolderIdentity())
	}
}

// notLeading fails the test if c leads or Run returns within d.
func (c *candidate) notLeading(t *testing.T, d time.Duration, why string) {
	t.Helper()
	select {
	case <-c.leading:
		t.Fatalf("%s leads: %s", c.id, why)
	case err := <-c.result:
		t.Fatalf("%s: Run returned %v: %s", c.id, err, why)
	case <-time.After(d):
	}
}

// waitTimers waits until the candidates on clk have armed n timers between
// them: each has finished its attempt and waits for its next one.
func waitTimers(t *testing.T, clk *workqueue.FakeClock, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.BlockUntilWaiters(ctx, n); err != nil {
		t.Fatalf("waiting for %d armed timers (%d armed): %v", n, clk.Waiters(), err)
	}
}

// A member killed with SIGKILL leaves its Lease held, unreleased. Restarted
// under the same identity (the host name by default), it takes the Lease
// back at once, without a tick of the election clock, while a standby of
// another identity waits the lease out.
func TestLeaderElectionRestartedMemberTakesItsLeaseAtOnce(t *testing.T) {
	s := apiservertest.Start(t)
	clk := workqueue.NewFakeClock(time.Unix(1_800_000_000, 0))
	g := &electionGroup{t: t, conn: s.Conn, clock: clk, lock: leaderelection.LeaseLock{Namespace: "kube-system", Name: "restart"}}

	// What the killed run of member "cm-1" left: a Lease held for 15s,
	// renewed just now.
	now := timestamppb.New(clk.Now())
	if _, err := client.Leases(s.Conn).Create(context.Background(), &coordinationv1.Lease{
		Metadata: &metav1.ObjectMeta{Namespace: g.lock.Namespace, Name: g.lock.Name},
		Spec: &coordinationv1.LeaseSpec{HolderIdentity: "cm-1", LeaseDurationSeconds: proto.Int32(15),
			AcquireTime: now, RenewTime: now, LeaseTransitions: proto.Int32(2)},
	}); err != nil {
		t.Fatal(err)
	}

	standby := g.start("cm-2")
	waitTimers(t, clk, 1) // its first attempt found the Lease held
	standby.notLeading(t, 3*electionRetryPeriod, "the Lease is held by cm-1 and the clock has not moved")

	restarted := g.start("cm-1")
	restarted.waitLeading(t, 10*time.Second) // no clock step: at its first attempt
	l := g.lease()
	if l.GetSpec().GetHolderIdentity() != "cm-1" || l.GetSpec().GetLeaseTransitions() != 2 || !l.GetSpec().GetAcquireTime().AsTime().Equal(now.AsTime()) {
		t.Errorf("lease spec = %v, want cm-1 renewing its own lease (acquireTime and transitions kept)", l.GetSpec())
	}
	if !l.GetSpec().GetRenewTime().AsTime().Equal(clk.Now()) || l.GetSpec().GetLeaseDurationSeconds() != 1 {
		t.Errorf("lease spec = %v, want renewed at %v for this run's 1s", l.GetSpec(), clk.Now())
	}

	// The restarted leader renews; the standby still waits.
	waitTimers(t, clk, 3) // the standby's retry, the leader's retry and renew deadline
	clk.Step(electionRetryPeriod)
	standby.notLeading(t, 3*electionRetryPeriod, "cm-1 renews its lease")
	if n := g.overlaps.Load(); n != 0 {
		t.Errorf("%d times two candidates led at once", n)
	}
}

// A leader stopped gracefully (its context cancelled, as SIGTERM does)
// releases the Lease: the standby takes it at its next retry, one
// RetryPeriod on the election clock, not after the lease duration.
func TestLeaderElectionReleaseHandsOverWithinOneRetry(t *testing.T) {
	s := apiservertest.Start(t)
	clk := workqueue.NewFakeClock(time.Unix(1_800_000_000, 0))
	g := &electionGroup{t: t, conn: s.Conn, clock: clk, lock: leaderelection.LeaseLock{Namespace: "kube-system", Name: "release"}}
	leader := g.start("leader")
	leader.waitLeading(t, 10*time.Second)
	standby := g.start("standby")
	waitTimers(t, clk, 3) // the leader's retry and renew deadline, the standby's retry

	start := clk.Now()
	leader.cancel()
	if err := leader.waitResult(t, 5*time.Second); err != nil {
		t.Fatalf("leader's Run after cancel = %v, want nil", err)
	}
	if l := g.lease(); l.GetSpec().GetHolderIdentity() != "" || l.GetSpec().GetLeaseDurationSeconds() != 1 {
		t.Fatalf("lease spec after a graceful stop = %v, want released (no holder, 1s)", l.GetSpec())
	}
	waitTimers(t, clk, 1) // only the standby's retry is left
	clk.Step(electionRetryPeriod)
	standby.waitLeading(t, 10*time.Second)
	if took := clk.Now().Sub(start); took >= electionLeaseDuration {
		t.Errorf("the standby took over %v after the release on the election clock, want one retry (%v)", took, electionRetryPeriod)
	}
	if l := g.lease(); l.GetSpec().GetHolderIdentity() != "standby" || l.GetSpec().GetLeaseTransitions() != 1 {
		t.Errorf("lease spec = %v, want holder standby after 1 transition", l.GetSpec())
	}
	if n := g.overlaps.Load(); n != 0 {
		t.Errorf("%d times two candidates led at once", n)
	}
}
