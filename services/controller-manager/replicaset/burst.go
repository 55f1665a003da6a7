package replicaset

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// bursts run each ReplicaSet's pod creations off its sync, so that they
// overlap the work around them instead of leaving the apiserver idle
// during it: the sync that starts a burst writes the status while the
// burst's calls are in flight, and the next sync reads the cache and
// starts the next burst while the last calls of this one are in flight
// (Kubernetes' controller makes its burst inside the sync and waits for the
// slowest call; its next sync starts after the status write).
//
// The controller has at most maxInFlight creations in flight, over all
// bursts of all ReplicaSets (the apiserver admits about 200 mutating
// requests of one user at once and refuses more with a retry hint of a
// second). A ReplicaSet has at most one burst with more than maxInFlight
// calls left to send ("busy"): while it is busy its syncs return at once,
// and once no more than maxInFlight are left the burst wakes the
// ReplicaSet, whose next sync counts the calls not sent or still in flight
// through the expectations (raised for the whole burst before its first
// call) like any pod not observed yet.
//
// A failed call stops every later call of the ReplicaSet's bursts (a
// failure would most likely repeat for every pod) until a sync has
// reported it (takeFailure: the ReplicaFailure condition, an error and a
// retry with backoff); the burst after that slow-starts again.
type bursts struct {
	wake  func(key string) // enqueues the ReplicaSet
	slots chan struct{}    // one per call in flight

	mu     sync.Mutex
	tracks map[string]*track // by ReplicaSet key, while it has bursts or an unreported failure
	wg     sync.WaitGroup    // the bursts' goroutines
}

// track is the bursts of one ReplicaSet.
type track struct {
	running  int   // bursts not finished
	starting int   // bursts that have not woken the ReplicaSet yet
	epoch    int   // bumped each time a failure is reported
	failure  error // the first failure since the last report
}

// errStopped is the answer of a call not made because an earlier call of
// the ReplicaSet failed.
var errStopped = errors.New("not attempted after an earlier creation failed")

func newBursts(wake func(string)) *bursts {
	return &bursts{wake: wake, slots: make(chan struct{}, maxInFlight), tracks: map[string]*track{}}
}

// busy reports whether a burst of key has more than maxInFlight calls
// left to send (it wakes key when it has no more).
func (b *bursts) busy(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tracks[key]
	return t != nil && t.starting > 0
}

// takeFailure returns the first creation failure of key since the last
// call, or nil; the bursts started after it make their calls again.
func (b *bursts) takeFailure(key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tracks[key]
	if t == nil || t.failure == nil {
		return nil
	}
	err := t.failure
	t.failure = nil
	t.epoch++
	b.forgetIdle(key, t)
	return err
}

// forget drops key's unreported failure: its ReplicaSet is gone (or was
// replaced by another of the same name, which must not inherit it).
func (b *bursts) forget(key string) { _ = b.takeFailure(key) }

// start makes n calls of create for key in the background, in a slow start
// from initial (see slowStart). done gets the number of calls that
// succeeded and whether the burst saw no failure, once every call has
// returned; a failure wakes key at once.
func (b *bursts) start(ctx context.Context, key string, n, initial int, create func(context.Context) error, done func(created int, clean bool)) {
	b.mu.Lock()
	t := b.tracks[key]
	if t == nil {
		t = &track{}
		b.tracks[key] = t
	}
	t.running++
	t.starting++
	epoch := t.epoch
	b.mu.Unlock()

	var sent atomic.Int64
	var once sync.Once
	nearlySent := func() {
		once.Do(func() {
			b.mu.Lock()
			t.starting--
			b.mu.Unlock()
			b.wake(key)
		})
	}
	// sending counts a call as sent (or given up). Once no more than
	// maxInFlight calls are left to send, key is woken: its next sync reads
	// the cache and starts the next burst while this one's last calls
	// keep the apiserver busy.
	wakeAt := int64(max(n-maxInFlight, 1))
	sending := func() {
		if sent.Add(1) == wakeAt {
			nearlySent()
		}
	}
	call := func() error {
		select {
		case b.slots <- struct{}{}:
		case <-ctx.Done():
			sending()
			return ctx.Err()
		}
		defer func() { <-b.slots }()
		if b.stopped(t, epoch) {
			sending()
			return errStopped
		}
		sending()
		err := create(ctx)
		if err != nil && ctx.Err() == nil {
			b.fail(key, t, epoch, err)
		}
		return err
	}
	b.wg.Go(func() {
		created, err := slowStart(n, initial, call)
		nearlySent() // the slow start ended early
		b.mu.Lock()
		t.running--
		clean := err == nil && t.failure == nil && t.epoch == epoch
		b.forgetIdle(key, t)
		b.mu.Unlock()
		done(created, clean)
	})
}

// stopped reports whether a call of a burst started in epoch must not be
// made: a call failed since then.
func (b *bursts) stopped(t *track, epoch int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return t.epoch != epoch || t.failure != nil
}

// fail records err as key's failure if it is the first of its epoch, and
// wakes key to report it.
func (b *bursts) fail(key string, t *track, epoch int, err error) {
	b.mu.Lock()
	first := t.epoch == epoch && t.failure == nil
	if first {
		t.failure = err
	}
	b.mu.Unlock()
	if first {
		b.wake(key)
	}
}

// forgetIdle drops t, key's track, once it has no bursts and no failure
// to report. b.mu is held.
func (b *bursts) forgetIdle(key string, t *track) {
	if t.running == 0 && t.failure == nil && b.tracks[key] == t {
		delete(b.tracks, key)
	}
}

// wait waits for every burst to finish (their calls end with their context).
func (b *bursts) wait() { b.wg.Wait() }
