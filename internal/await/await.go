// Package await lets tests wait for a condition on events, with a deadline,
// instead of sleeping: code that sees changes (informer handlers, watch
// loops) pokes a Signal; Until re-evaluates the condition at each poke.
// It is for tests; it owns no goroutine.
package await

import (
	"sync"
	"testing"
	"time"
)

// Recheck is how often Until re-evaluates a condition without a poke, for
// conditions that change with time alone.
const Recheck = 100 * time.Millisecond

// Signal wakes the waiters of Until when something changed.
type Signal struct {
	mu      sync.Mutex
	waiters []chan struct{}
}

// Poke wakes every waiter. It never blocks.
func (s *Signal) Poke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.waiters {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

func (s *Signal) wait() (<-chan struct{}, func()) {
	w := make(chan struct{}, 1)
	s.mu.Lock()
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	return w, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.waiters {
			if x == w {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				return
			}
		}
	}
}

// Until waits until cond holds, re-evaluating it at every Poke (and every
// Recheck), and fails tb after timeout with what and cond's last
// explanation. done, when not nil, ends the wait with a failure too (the
// test's context ending).
func (s *Signal) Until(tb testing.TB, timeout time.Duration, what string, done <-chan struct{}, cond func() (ok bool, why string)) {
	tb.Helper()
	w, stop := s.wait()
	defer stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(Recheck)
	defer tick.Stop()
	for {
		ok, why := cond()
		if ok {
			return
		}
		select {
		case <-w:
		case <-tick.C:
		case <-deadline.C:
			tb.Fatalf("waited %v for %s: %s", timeout, what, why)
		case <-done:
			tb.Fatalf("stopped while waiting for %s: %s", what, why)
		}
	}
}
