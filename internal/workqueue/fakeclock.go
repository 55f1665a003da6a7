package workqueue

import (
	"context"
	"sync"
	"time"
)

// FakeClock is a Clock that moves only when a test steps it. A timer fires
// during the Step or SetTime call that reaches its deadline. FakeClock is
// safe for concurrent use and meant for the tests of any package that takes
// a Clock.
//
// A typical test arms a timer through the code under test, waits for it
// with BlockUntilWaiters, then steps:
//
//	clk := workqueue.NewFakeClock(time.Unix(0, 0))
//	q := workqueue.New(workqueue.Options[string]{Clock: clk})
//	q.AddAfter("a", time.Second)
//	clk.Step(time.Second) // "a" is now ready for Get
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever timers changes
}

// NewFakeClock returns a FakeClock set to t.
func NewFakeClock(t time.Time) *FakeClock {
	return &FakeClock{now: t, changed: make(chan struct{})}
}

// Now returns the clock's current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires once the clock reaches Now()+d. A
// timer with d <= 0 has fired already and is not counted as a waiter.
func (c *FakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.newTimerLocked(c.now.Add(d))
}

// newTimerAt implements deadlineClock.
func (c *FakeClock) newTimerAt(t time.Time) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.newTimerLocked(t)
}

func (c *FakeClock) newTimerLocked(deadline time.Time) Timer {
	t := &fakeTimer{clock: c, deadline: deadline, c: make(chan time.Time, 1)}
	if !deadline.After(c.now) {
		t.c <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	c.notifyLocked()
	return t
}

// Step advances the clock by d and fires the timers it reaches.
func (c *FakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(c.now.Add(d))
}

// SetTime sets the clock to t and fires the timers it reaches. Moving the
// clock backwards fires nothing.
func (c *FakeClock) SetTime(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(t)
}

// Waiters returns the number of armed timers, neither fired nor stopped.
func (c *FakeClock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// HasWaiters reports whether any timer is armed.
func (c *FakeClock) HasWaiters() bool { return c.Waiters() > 0 }

// BlockUntilWaiters blocks until at least n timers are armed, or ctx ends
// (then it returns ctx.Err()). Tests call it before Step, so that the step
// is not taken before the code under test has computed its deadline.
func (c *FakeClock) BlockUntilWaiters(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		armed, changed := len(c.timers), c.changed
		c.mu.Unlock()
		if armed >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *FakeClock) setLocked(t time.Time) {
	if t.After(c.now) {
		c.now = t
	}
	fired := false
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if tm.deadline.After(c.now) {
			kept = append(kept, tm)
			continue
		}
		tm.c <- c.now // buffered; a timer fires once, so it never blocks
		fired = true
	}
	clear(c.timers[len(kept):])
	c.timers = kept
	if fired {
		c.notifyLocked()
	}
}

func (c *FakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type fakeTimer struct {
	clock    *FakeClock
	deadline time.Time
	c        chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, tm := range c.timers {
		if tm == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			c.notifyLocked()
			return true
		}
	}
	return false
}
