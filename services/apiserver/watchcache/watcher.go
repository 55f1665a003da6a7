package watchcache

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/object"
	"skiff.dev/services/apiserver/storage"
)

// Watcher is one client's watch on a cache. It has no buffer of its own: it
// reads the cache's window of events from its cursor, filtering them with
// its predicate, so an event costs the cache the same however many watchers
// there are, and watchers filter in parallel on their own goroutines. A
// watcher more than the cache's WatcherBuffer events behind (or overtaken
// by the window) is cut off. What a watch from a revision starts with (the
// window's events after it, up to the watch's start) is not lag: a client
// cut off resumes from the last resourceVersion it received, which is
// always further behind than the buffer.
type Watcher[T object.Object] struct {
	cache     *Cache[T]
	prefix    string
	pred      Predicate[T]
	bookmarks bool
	cursor    uint64 // number of the next window event to read
	start     uint64 // the window's next event number when the watch started
	bookmark  int64  // the last progress revision sent as a bookmark
	done      chan struct{}
	err       error

	// Initial holds the events the watch starts with: the current state as
	// ADDED events (watch from 0). A watch from a revision starts with the
	// window's events after it instead, read like any others.
	Initial []Delivery[T]
	// InitialRev is the revision of the state Initial holds (watch from 0).
	InitialRev int64
}

// Done is closed when the cache ends the watch (shutdown, relist, too slow).
func (w *Watcher[T]) Done() <-chan struct{} { return w.done }

// Err is why the cache ended the watch; valid after Done is closed.
func (w *Watcher[T]) Err() error { return w.err }

// Stop unregisters the watcher.
func (w *Watcher[T]) Stop() {
	c := w.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	c.terminate(w, nil)
}

func (w *Watcher[T]) matches(e *Entry[T]) bool {
	return strings.HasPrefix(e.Key, w.prefix) && (w.pred == nil || w.pred(e))
}

// deliverable says whether and as what event e reaches this watcher.
func (w *Watcher[T]) deliverable(e *Event[T]) (EventType, bool) {
	switch e.Type {
	case Added:
		return Added, w.matches(e.Cur)
	case Deleted:
		return Deleted, w.matches(e.Prev)
	}
	cur, prev := w.matches(e.Cur), e.Prev != nil && w.matches(e.Prev)
	switch {
	case cur && prev:
		return Modified, true
	case cur:
		return Added, true
	case prev:
		return Deleted, true
	}
	return Modified, false
}

// lag is how many events the watcher is behind the cache, not counting
// those it started with (see Watcher). Callers hold c.mu.
func (w *Watcher[T]) lag() uint64 { return w.cache.next - max(w.cursor, w.start) }

// Next returns what the watcher sends next, from the sealed batches after
// its cursor: messages shared with the other watchers of its prefix and
// version (with share, for a watcher without a predicate that is at a
// batch's start), then deliveries of its own appended to dst (at most
// max), then a BOOKMARK when it asked for them and has passed a progress
// notification. With wait it blocks until there is something (or ctx
// ends, or the watch ends); without, it may return nothing.
func (w *Watcher[T]) Next(ctx context.Context, wait bool, dst []Delivery[T], max int, share *Share[T]) ([][]byte, []Delivery[T], error) {
	c := w.cache
	var msgs [][]byte
	for {
		c.mu.RLock()
		select {
		case <-w.done:
			c.mu.RUnlock()
			return msgs, dst, w.err
		default:
		}
		if lag := w.lag(); w.cursor < c.first || lag > uint64(c.cfg.WatcherBuffer) {
			c.mu.RUnlock()
			return msgs, dst, w.tooSlow(lag)
		}
		delivered := 0
		// A batch whose shared encoding is not ready yet: this watcher
		// encodes it (build), or waits for the watcher that does.
		var pending *sharedMessages
		var build []Delivery[T]
		var building bool
		var after uint64 // the cursor once pending is sent
		if share != nil && w.pred == nil {
			for w.cursor < c.sealed {
				b := c.batchFrom(w.cursor)
				if b == nil {
					break
				}
				m, mine := b.encoding(shareKey{slot: share.Slot, prefix: w.prefix})
				if mine {
					building = true
					build, _ = c.deliveries(w.cursor, b.end, w.prefix, nil, nil, int(b.end-b.start))
				}
				if !m.isReady() {
					pending, after = m, b.end
					break
				}
				if m.err != nil {
					c.mu.RUnlock()
					return msgs, dst, m.err
				}
				msgs = append(msgs, m.msgs...)
				delivered += m.events
				w.cursor = b.end
			}
		}
		if pending == nil {
			var n int
			before := len(dst)
			dst, n = c.deliveries(w.cursor, c.sealed, w.prefix, w.pred, dst, max)
			delivered += len(dst) - before
			w.cursor += uint64(n)
			if w.bookmarks && w.cursor == c.next && c.progressRev > w.bookmark {
				w.bookmark = c.progressRev
				dst = append(dst, Delivery[T]{Type: Bookmark, Rev: c.rev})
				delivered++
			}
		}
		published := c.published
		c.mu.RUnlock()
		if pending != nil {
			if building {
				m, err := share.Encode(build)
				pending.finish(m, len(build), err)
				if c.sharedEncodings != nil {
					c.sharedEncodings.Inc()
				}
			}
			select {
			case <-pending.ready:
			case <-w.done:
				return msgs, dst, w.err
			case <-ctx.Done():
				return msgs, dst, ctx.Err()
			}
			if pending.err != nil {
				return msgs, dst, pending.err
			}
			msgs = append(msgs, pending.msgs...)
			delivered += pending.events
			w.cursor = after
			if len(msgs) == 0 {
				continue // nothing under this prefix: read on
			}
		}
		if delivered > 0 && c.dispatched != nil {
			c.dispatched.Add(float64(delivered))
		}
		if len(msgs) > 0 || len(dst) > 0 || !wait {
			return msgs, dst, nil
		}
		select {
		case <-published:
		case <-w.done:
			return msgs, dst, w.err
		case <-ctx.Done():
			return msgs, dst, ctx.Err()
		}
	}
}

// deliveries appends to dst what the window's events numbered [from, to)
// are for a watcher of prefix and pred, at most max of them, and returns
// how many events it read. Callers hold c.mu.
func (c *Cache[T]) deliveries(from, to uint64, prefix string, pred Predicate[T], dst []Delivery[T], max int) ([]Delivery[T], int) {
	n := uint64(len(c.window))
	w := Watcher[T]{prefix: prefix, pred: pred}
	read, delivered := 0, 0
	for i := from; i < to && delivered < max; i++ {
		e := c.window[i%n]
		read++
		if typ, ok := w.deliverable(e); ok {
			dst = append(dst, Delivery[T]{Type: typ, Event: e})
			delivered++
		}
	}
	return dst, read
}

// tooSlow cuts the watcher off.
func (w *Watcher[T]) tooSlow(lag uint64) error {
	c := w.cache
	err := apierrors.NewServiceUnavailable(fmt.Sprintf(
		"watch of %s was too slow (more than %d events behind) and was closed; watch again from the last resourceVersion you received",
		c.resource, c.cfg.WatcherBuffer))
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.watchers[w]; ok {
		if c.cfg.Metrics != nil {
			c.cfg.Metrics.terminatedWatchers.WithLabelValues(c.resource).Inc()
		}
		c.log.Info("cutting off a slow watcher", zap.Uint64("behind", lag))
		c.terminate(w, err)
	}
	return w.err
}

// Watch starts a watch of the entries under prefix that pred accepts.
// rev 0 starts with the current state as ADDED events; rev N starts with
// the changes after N, or fails with Expired when N is too old.
func (c *Cache[T]) Watch(ctx context.Context, rev int64, prefix string, pred Predicate[T], bookmarks bool) (*Watcher[T], error) {
	if err := c.WaitReady(ctx); err != nil {
		return nil, err
	}
	w := &Watcher[T]{
		cache:     c,
		prefix:    prefix,
		pred:      pred,
		bookmarks: bookmarks,
		done:      make(chan struct{}),
	}
	if rev > 0 {
		if err := c.WaitFresh(ctx, rev); err != nil {
			return nil, err
		}
		if rev < c.Revision() { // else there is nothing to replay
			if err := c.CheckNotCompacted(ctx, rev); err != nil {
				return nil, err
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, apierrors.NewServiceUnavailable("apiserver is shutting down")
	}
	w.bookmark = c.progressRev
	w.start = c.next
	if rev == 0 {
		w.InitialRev = c.rev
		c.ascendPrefix(prefix, func(e *Entry[T]) bool {
			if pred == nil || pred(e) {
				w.Initial = append(w.Initial, Delivery[T]{Type: Added, Event: &Event[T]{Type: Added, Rev: e.Rev, Cur: e}})
			}
			return true
		})
		w.cursor = c.next
	} else {
		if rev < c.startRev {
			return nil, c.expired(rev)
		}
		n := uint64(len(c.window))
		w.cursor = c.next
		for w.cursor > c.first && c.window[(w.cursor-1)%n].Rev > rev {
			w.cursor-- // back to the first event after rev
		}
	}
	c.watchers[w] = struct{}{}
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.registeredWatchers.WithLabelValues(c.resource).Inc()
	}
	return w, nil
}

// CheckNotCompacted asks etcd whether rev is still available (Expired when
// not), so that a watch from a compacted revision fails even while the
// window holds it, and a list continued at one even while a snapshot does
// (and even while the cache has not heard of the writes after rev yet).
func (c *Cache[T]) CheckNotCompacted(ctx context.Context, rev int64) error {
	if rev < c.compacted.Load() {
		return c.expired(rev)
	}
	_, err := c.cfg.Store.Client().Get(ctx, c.cfg.Store.Prefix(), clientv3.WithRev(rev), clientv3.WithCountOnly(), clientv3.WithLimit(1))
	if err == nil {
		return nil
	}
	if storage.IsCompacted(err) {
		c.noteCompacted(rev + 1)
		return c.expired(rev)
	}
	return apierrors.NewInternal(fmt.Errorf("etcd: %w", err))
}

func (c *Cache[T]) expired(rev int64) error {
	return apierrors.NewExpired(fmt.Sprintf("too old resource version: %d: %s at that revision has been compacted; list again and watch from the list's resourceVersion", rev, c.resource))
}
