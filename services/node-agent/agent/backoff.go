package agent

import (
	"strings"
	"sync"
	"time"
)

// backoff is the kubelet's per-item exponential backoff (client-go's
// flowcontrol.Backoff) for restarting crashed containers and pulling
// images: the first failure waits initial, each later one twice the
// previous, up to max; an item quiet for twice max starts over. Every
// method takes the time, so that the type is pure over its entries.
type backoff struct {
	initial, max time.Duration

	mu      sync.Mutex
	entries map[string]*backoffEntry
}

type backoffEntry struct {
	delay      time.Duration
	lastUpdate time.Time
}

func newBackoff(initial, max time.Duration) *backoff {
	return &backoff{initial: initial, max: max, entries: map[string]*backoffEntry{}}
}

// next records a failure (or a restart) of id at now and returns the
// delay now in force for it.
func (b *backoff) next(id string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[id]
	switch {
	case !ok || now.Sub(e.lastUpdate) > 2*b.max:
		e = &backoffEntry{delay: b.initial}
		b.entries[id] = e
	default:
		e.delay = min(2*e.delay, b.max)
	}
	e.lastUpdate = now
	return e.delay
}

// inBackoffSince reports whether id, which last failed at event, must
// still wait at now, with the delay in force and the time left.
func (b *backoff) inBackoffSince(id string, event, now time.Time) (bool, time.Duration, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[id]
	if !ok || event.Sub(e.lastUpdate) > 2*b.max {
		return false, 0, 0
	}
	left := event.Add(e.delay).Sub(now)
	return left > 0, e.delay, left
}

// inBackoffSinceUpdate reports whether id must still wait at now since its
// last recorded failure, with the time left.
func (b *backoff) inBackoffSinceUpdate(id string, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[id]
	if !ok {
		return false, 0
	}
	left := e.lastUpdate.Add(e.delay).Sub(now)
	return left > 0, left
}

// reset forgets id.
func (b *backoff) reset(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, id)
}

// forgetPrefix forgets every id starting with prefix (a pod's uid).
func (b *backoff) forgetPrefix(prefix string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range b.entries {
		if strings.HasPrefix(id, prefix) {
			delete(b.entries, id)
		}
	}
}

// gc drops the entries quiet for more than twice max at now.
func (b *backoff) gc(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, e := range b.entries {
		if now.Sub(e.lastUpdate) > 2*b.max {
			delete(b.entries, id)
		}
	}
}
