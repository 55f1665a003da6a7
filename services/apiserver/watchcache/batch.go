package watchcache

import (
	"sync"
	"time"

	"skiff.dev/internal/object"
)

// Events reach watchers in sealed batches. The cache seals what arrived
// at most once per BatchInterval (the first event after a quiet spell at
// once) and wakes its watchers; each watcher sends what was sealed since
// its cursor, so under load it sends one message per interval instead of
// one per event. Watchers that are at a batch's start and have no
// predicate receive exactly the batch's events under their prefix: the
// first of them to get there encodes the batch (Share.Encode) and every
// other watcher of the same prefix and served version sends the same
// bytes. With 1,000 watchers of one namespace, an event is encoded into a
// message once, not 1,000 times.

// recentBatches is how many of the last sealed batches keep their shared
// encodings: enough for watchers a few intervals behind; a watcher
// further behind encodes its own messages until it is at a batch's start.
const recentBatches = 8

// batch is the events numbered [start, end) of the window, sealed together.
type batch struct {
	start, end uint64

	mu        sync.Mutex
	encodings map[shareKey]*sharedMessages
}

// shareKey names the watchers that can share a batch's messages: those of
// one prefix (namespace or all) and one served version.
type shareKey struct {
	slot   int
	prefix string
}

// sharedMessages is a batch encoded for one shareKey; ready is closed once
// msgs (or err) is set.
type sharedMessages struct {
	ready  chan struct{}
	msgs   [][]byte
	events int
	err    error
}

// Share lets watchers without a predicate send each sealed batch as
// messages encoded once for all of them.
type Share[T object.Object] struct {
	// Slot is the served version (as in Entry.Framed).
	Slot int
	// Encode turns a batch's deliveries into the messages that carry them.
	// The messages are shared by many streams: nothing may change them.
	Encode func([]Delivery[T]) ([][]byte, error)
}

// encoding returns the batch's messages for key, and whether the caller
// made the entry (and must encode it: see finish).
func (b *batch) encoding(key shareKey) (*sharedMessages, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m, ok := b.encodings[key]; ok {
		return m, false
	}
	if b.encodings == nil {
		b.encodings = map[shareKey]*sharedMessages{}
	}
	m := &sharedMessages{ready: make(chan struct{})}
	b.encodings[key] = m
	return m, true
}

func (m *sharedMessages) finish(msgs [][]byte, events int, err error) {
	m.msgs, m.events, m.err = msgs, events, err
	close(m.ready)
}

func (m *sharedMessages) isReady() bool {
	select {
	case <-m.ready:
		return true
	default:
		return false
	}
}

// batchFrom returns the recent batch that starts at event number n, or
// nil. Callers hold c.mu.
func (c *Cache[T]) batchFrom(n uint64) *batch {
	for i := range min(c.nbatches, recentBatches) {
		b := c.batches[(c.nbatches-1-i)%recentBatches]
		if b.start == n {
			return b
		}
		if b.start < n {
			return nil
		}
	}
	return nil
}

// sealSoon seals the unsealed events now when the last seal is at least
// an interval old, else makes sure a seal follows when it is. Callers
// hold c.mu.
func (c *Cache[T]) sealSoon() {
	if c.next == c.sealed || c.stopped {
		return
	}
	wait := c.cfg.BatchInterval - time.Since(c.sealedAt)
	if wait <= 0 {
		c.seal()
		return
	}
	if !c.sealPending {
		c.sealPending = true
		time.AfterFunc(wait, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.sealPending = false
			c.sealSoon()
		})
	}
}

// seal publishes the events that arrived since the last seal as a batch
// and wakes the watchers. Callers hold c.mu.
func (c *Cache[T]) seal() {
	c.batches[c.nbatches%recentBatches] = &batch{start: c.sealed, end: c.next}
	c.nbatches++
	c.sealed = c.next
	c.sealedAt = time.Now()
	if c.batchesSealed != nil {
		c.batchesSealed.Inc()
	}
	c.wakeWatchers()
}

// wakeWatchers wakes every watcher: a batch was sealed, a bookmark is due,
// or the cache ends. Callers hold c.mu.
func (c *Cache[T]) wakeWatchers() {
	close(c.published)
	c.published = make(chan struct{})
}
