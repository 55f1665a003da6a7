package daemonset

import (
	"sync"
	"time"
)

// Failed daemon pods are replaced with a backoff per DaemonSet and node
// (Kubernetes' failedPodsBackoff: 1 s doubling to 15 min), so that a node
// that keeps failing the pod (a kubelet refusing it) is not a hot loop.
const (
	failedPodsBackoffBase = time.Second
	failedPodsBackoffMax  = 15 * time.Minute
)

type backoffEntry struct {
	delay time.Duration
	last  time.Time
}

// backoff is a per-key exponential backoff on an injected clock.
type backoff struct {
	now func() time.Time

	mu      sync.Mutex
	entries map[string]*backoffEntry
}

func newBackoff(now func() time.Time) *backoff {
	return &backoff{now: now, entries: map[string]*backoffEntry{}}
}

// inBackoff reports whether key's delay since its last Next has not passed,
// and what is left of it.
func (b *backoff) inBackoff(key string) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return false, 0
	}
	left := e.last.Add(e.delay).Sub(b.now())
	return left > 0, left
}

// next records a failure of key now, doubling its delay (reset after
// twice the maximum without failures).
func (b *backoff) next(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	e, ok := b.entries[key]
	switch {
	case !ok || now.Sub(e.last) > 2*failedPodsBackoffMax:
		b.entries[key] = &backoffEntry{delay: failedPodsBackoffBase, last: now}
	default:
		e.delay = min(2*e.delay, failedPodsBackoffMax)
		e.last = now
	}
}

// forget drops the keys with prefix (a DaemonSet gone).
func (b *backoff) forget(prefix string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.entries {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			delete(b.entries, k)
		}
	}
}
