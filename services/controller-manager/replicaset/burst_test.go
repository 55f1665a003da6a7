package replicaset

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// burstProbe is a create function whose calls fail at once (fail) or
// succeed once they get a token, and counts the calls made and in flight.
type burstProbe struct {
	tokens   chan struct{}
	made     atomic.Int64
	inFlight atomic.Int64
	peak     atomic.Int64
	fail     func(call int64) error
}

func newBurstProbe() *burstProbe { return &burstProbe{tokens: make(chan struct{}, 100000)} }

func (p *burstProbe) create(ctx context.Context) error {
	call := p.made.Add(1)
	cur := p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	for old := p.peak.Load(); cur > old && !p.peak.CompareAndSwap(old, cur); old = p.peak.Load() {
	}
	if p.fail != nil {
		if err := p.fail(call); err != nil {
			return err
		}
	}
	select {
	case <-p.tokens:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *burstProbe) release(n int) {
	for range n {
		p.tokens <- struct{}{}
	}
}

// burstDone records what a burst's done callback got.
type burstDone struct {
	ch      chan struct{}
	created int
	clean   bool
}

func newBurstDone() *burstDone { return &burstDone{ch: make(chan struct{})} }

func (d *burstDone) done(created int, clean bool) {
	d.created, d.clean = created, clean
	close(d.ch)
}

func (d *burstDone) await(t *testing.T, what string) {
	t.Helper()
	select {
	case <-d.ch:
	case <-time.After(patience):
		t.Fatalf("%s did not finish", what)
	}
}

// awaitCond waits for cond, which events elsewhere make true.
func awaitCond(t *testing.T, what string, wake <-chan string, cond func() bool) {
	t.Helper()
	deadline := time.After(patience)
	for !cond() {
		select {
		case <-wake:
		case <-time.After(time.Millisecond):
			// The calls counted by the probe have no event of their own.
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestBurstWakesWhileItsLastCallsAreInFlight(t *testing.T) {
	ctx := t.Context()
	wakes := make(chan string, 100)
	b := newBursts(func(key string) { wakes <- key })
	p := newBurstProbe()
	const n = 300
	first := newBurstDone()
	b.start(ctx, "ns/a", n, n, p.create, first.done)

	// No call returns yet: maxInFlight are sent, and the burst is busy
	// (more than maxInFlight calls are left to send).
	awaitCond(t, "the first calls", wakes, func() bool { return p.inFlight.Load() == maxInFlight })
	if !b.busy("ns/a") || len(wakes) != 0 {
		t.Fatalf("busy %v with %d wakes, want busy and none, at %d calls sent of %d", b.busy("ns/a"), len(wakes), p.made.Load(), n)
	}
	// Once at most maxInFlight are left to send, the ReplicaSet is woken
	// and no longer busy, its last calls still in flight.
	p.release(n - 2*maxInFlight)
	select {
	case key := <-wakes:
		if key != "ns/a" {
			t.Fatalf("woke %q", key)
		}
	case <-time.After(patience):
		t.Fatalf("not woken after %d calls sent of %d", p.made.Load(), n)
	}
	if b.busy("ns/a") {
		t.Fatal("still busy once no more than maxInFlight calls are left to send")
	}
	// The next burst, and another ReplicaSet's, share the controller's
	// calls in flight.
	second, other := newBurstDone(), newBurstDone()
	b.start(ctx, "ns/a", 50, 50, p.create, second.done)
	b.start(ctx, "ns/b", 200, 200, p.create, other.done)
	if !b.busy("ns/a") || !b.busy("ns/b") {
		t.Fatal("a new burst is not busy")
	}
	p.release(2*maxInFlight + 50 + 200)
	first.await(t, "the first burst")
	second.await(t, "the second burst")
	other.await(t, "the other ReplicaSet's burst")
	if first.created != n || !first.clean || second.created != 50 || !second.clean || other.created != 200 || !other.clean {
		t.Errorf("created %d (clean %v), %d (clean %v) and %d (clean %v), want %d, 50 and 200, clean",
			first.created, first.clean, second.created, second.clean, other.created, other.clean, n)
	}
	if got := p.peak.Load(); got != maxInFlight {
		t.Errorf("%d calls in flight at once, want at most (and here exactly) %d", got, maxInFlight)
	}
	b.wait()
	if b.busy("ns/a") || b.busy("ns/b") || len(b.tracks) != 0 {
		t.Errorf("after the bursts: busy %v %v, %d tracks kept", b.busy("ns/a"), b.busy("ns/b"), len(b.tracks))
	}
}

func TestBurstFailureStopsTheReplicaSetsCallsUntilReported(t *testing.T) {
	ctx := t.Context()
	wakes := make(chan string, 100)
	b := newBursts(func(key string) { wakes <- key })
	boom := errors.New("quota exceeded")
	p := newBurstProbe()
	p.fail = func(int64) error { return boom }
	p.release(1000)

	// A slow start whose first call fails makes no other call.
	first := newBurstDone()
	b.start(ctx, "ns/a", 20, 1, p.create, first.done)
	first.await(t, "the failing burst")
	if first.created != 0 || first.clean || p.made.Load() != 1 {
		t.Fatalf("created %d (clean %v) in %d calls, want 0, not clean, 1 call", first.created, first.clean, p.made.Load())
	}
	// A burst started before the failure was reported makes no call:
	// neither does one of a full batch.
	p.fail = nil
	second := newBurstDone()
	b.start(ctx, "ns/a", 20, 20, p.create, second.done)
	second.await(t, "the burst after the failure")
	if second.created != 0 || second.clean || p.made.Load() != 1 {
		t.Fatalf("before the report: created %d (clean %v), %d calls in all, want none", second.created, second.clean, p.made.Load())
	}
	// Another ReplicaSet is not stopped.
	other := newBurstDone()
	b.start(ctx, "ns/b", 5, 5, p.create, other.done)
	other.await(t, "the other ReplicaSet's burst")
	if other.created != 5 || !other.clean {
		t.Fatalf("other ReplicaSet: created %d (clean %v), want 5", other.created, other.clean)
	}

	if err := b.takeFailure("ns/a"); !errors.Is(err, boom) {
		t.Fatalf("takeFailure = %v, want %v", err, boom)
	}
	if err := b.takeFailure("ns/a"); err != nil {
		t.Fatalf("takeFailure again = %v, want nil (reported once)", err)
	}
	third := newBurstDone()
	b.start(ctx, "ns/a", 20, 1, p.create, third.done)
	third.await(t, "the burst after the report")
	if third.created != 20 || !third.clean {
		t.Errorf("after the report: created %d (clean %v), want 20", third.created, third.clean)
	}

	// A ReplicaSet deleted with a failure not reported leaves nothing.
	p.fail = func(int64) error { return boom }
	gone := newBurstDone()
	b.start(ctx, "ns/gone", 20, 1, p.create, gone.done)
	gone.await(t, "the deleted ReplicaSet's burst")
	b.forget("ns/gone")
	if err := b.takeFailure("ns/gone"); err != nil {
		t.Errorf("a forgotten ReplicaSet's failure: %v", err)
	}
	b.wait()
	if len(b.tracks) != 0 {
		t.Errorf("%d tracks kept", len(b.tracks))
	}
}

func TestBurstFailureInFlightStopsTheCallsNotSent(t *testing.T) {
	ctx := t.Context()
	b := newBursts(func(string) {})
	boom := errors.New("refused")
	p := newBurstProbe()
	p.fail = func(call int64) error {
		if call == 1 {
			return boom
		}
		return nil
	}
	const n = 500
	d := newBurstDone()
	// The first call fails at once; the calls sent before its failure was
	// recorded (at most maxInFlight in all) succeed; no call is sent after.
	p.release(n)
	b.start(ctx, "ns/a", n, n, p.create, d.done)
	d.await(t, "the burst")
	if d.clean || d.created != int(p.made.Load())-1 || p.made.Load() > maxInFlight {
		t.Errorf("created %d (clean %v) in %d calls, want every call but the failed one to succeed and at most %d calls", d.created, d.clean, p.made.Load(), maxInFlight)
	}
}

func TestBurstEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var wakes sync.Map
	b := newBursts(func(key string) { wakes.Store(key, true) })
	p := newBurstProbe() // no tokens: every call waits for its context
	d := newBurstDone()
	b.start(ctx, "ns/a", 400, 400, p.create, d.done)
	awaitCond(t, "the first calls", nil, func() bool { return p.inFlight.Load() == maxInFlight })
	cancel()
	d.await(t, "the burst")
	b.wait()
	if d.created != 0 || d.clean {
		t.Errorf("created %d (clean %v), want 0, not clean", d.created, d.clean)
	}
	if err := b.takeFailure("ns/a"); err != nil {
		t.Errorf("the controller stopping is not a failure to report: %v", err)
	}
}
