package leaderelection

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/workqueue"
	coordinationv1 "skiff.dev/proto/coordination/v1"
)

// memLeases keeps one Lease in memory with etcd's conditional writes. When
// loseNextReply is set, the next Update is stored and then its reply is
// lost: the call waits for its context to end (the caller gave up on it) and
// returns that context's error, as a renewal cut off after the commit does.
type memLeases struct {
	mu            sync.Mutex
	lease         *coordinationv1.Lease
	rv            int
	loseNextReply bool
	replyLost     chan struct{} // closed when that Update has been stored
}

func (m *memLeases) current() *coordinationv1.Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	return proto.Clone(m.lease).(*coordinationv1.Lease)
}

func (m *memLeases) Get(_ context.Context, _, name string, _ ...grpc.CallOption) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease == nil {
		return nil, apierrors.NewNotFound("leases", name)
	}
	return proto.Clone(m.lease).(*coordinationv1.Lease), nil
}

func (m *memLeases) Create(_ context.Context, l *coordinationv1.Lease, _ ...grpc.CallOption) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease != nil {
		return nil, apierrors.NewAlreadyExists("leases", l.GetMetadata().GetName())
	}
	return m.storeLocked(l), nil
}

func (m *memLeases) Update(ctx context.Context, l *coordinationv1.Lease, _ ...grpc.CallOption) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	if l.GetMetadata().GetResourceVersion() != m.lease.GetMetadata().GetResourceVersion() {
		m.mu.Unlock()
		return nil, apierrors.NewConflict("leases", l.GetMetadata().GetName(), "the object has been modified")
	}
	stored := m.storeLocked(l)
	lose := m.loseNextReply
	m.loseNextReply = false
	m.mu.Unlock()
	if lose {
		close(m.replyLost)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return stored, nil
}

func (m *memLeases) storeLocked(l *coordinationv1.Lease) *coordinationv1.Lease {
	m.rv++
	m.lease = proto.Clone(l).(*coordinationv1.Lease)
	m.lease.Metadata.ResourceVersion = strconv.Itoa(m.rv)
	return proto.Clone(m.lease).(*coordinationv1.Lease)
}

// A renewal whose reply is lost when the leader stops (its work returned,
// so the attempt in flight is abandoned) still stored a new resourceVersion;
// the release must not give up on the conflict that follows, or the standbys
// wait for the whole lease duration. (Seen in CI as a release failing with
// "the object has been modified" and the standby taking over after 1 s.)
func TestReleaseAfterARenewalWhoseReplyWasLost(t *testing.T) {
	clock := workqueue.NewFakeClock(time.Unix(1_000_000, 0))
	leases := &memLeases{replyLost: make(chan struct{})}
	cfg := Config{
		Lock:          LeaseLock{Namespace: "kube-system", Name: "lost-reply"},
		Identity:      "a",
		Client:        leases,
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
		Clock:         clock,
		Logger:        zaptest.NewLogger(t),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	leading, stopWork := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, func(context.Context) {
			close(leading)
			<-stopWork
		})
	}()
	select {
	case <-leading:
	case <-ctx.Done():
		t.Fatal("a never led")
	}
	// The leader waits on its retry and renew-deadline timers; the next
	// renewal is stored and its reply lost.
	if err := clock.BlockUntilWaiters(ctx, 2); err != nil {
		t.Fatalf("waiting for the leader's timers: %v", err)
	}
	leases.mu.Lock()
	leases.loseNextReply = true
	leases.mu.Unlock()
	clock.Step(cfg.RetryPeriod)
	select {
	case <-leases.replyLost:
	case <-ctx.Done():
		t.Fatal("no renewal after the retry period")
	}

	close(stopWork)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after the work did")
	}
	if l := leases.current(); l.GetSpec().GetHolderIdentity() != "" {
		t.Errorf("after the leader stopped the lease names holder %q (resourceVersion %s), want it released",
			l.GetSpec().GetHolderIdentity(), l.GetMetadata().GetResourceVersion())
	}
}
