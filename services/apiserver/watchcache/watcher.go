package watchcache

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/object"
	"skiff.dev/services/apiserver/storage"
)

// Watcher is one client's watch on a cache. Read Initial first, then
// Deliveries until Done is closed; Err says why it ended.
type Watcher[T object.Object] struct {
	cache     *Cache[T]
	prefix    string
	pred      Predicate[T]
	bookmarks bool
	ch        chan Delivery[T]
	hurry     chan struct{}
	done      chan struct{}
	err       error

	// Initial holds the events the watch starts with: the current state as
	// ADDED events (watch from 0), or the window's events after the
	// requested revision.
	Initial []Delivery[T]
}

// Deliveries is the stream of live events.
func (w *Watcher[T]) Deliveries() <-chan Delivery[T] { return w.ch }

// Hurry gets a signal when the watcher's buffer is more than half full: a
// watcher that waits to batch events should send now.
func (w *Watcher[T]) Hurry() <-chan struct{} { return w.hurry }

// Done is closed when the cache ends the watch (slow watcher, shutdown, relist).
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
		ch:        make(chan Delivery[T], c.cfg.WatcherBuffer),
		hurry:     make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	if rev > 0 {
		if err := c.WaitFresh(ctx, rev); err != nil {
			return nil, err
		}
		if err := c.checkNotCompacted(ctx, rev); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, apierrors.NewServiceUnavailable("apiserver is shutting down")
	}
	if rev == 0 {
		c.ascendPrefix(prefix, func(e *Entry[T]) {
			if pred == nil || pred(e) {
				w.Initial = append(w.Initial, Delivery[T]{Type: Added, Event: &Event[T]{Type: Added, Rev: e.Rev, Cur: e}})
			}
		})
	} else {
		if rev < c.startRev {
			return nil, c.expired(rev)
		}
		for i := 0; i < c.count; i++ {
			e := c.window[(c.head+i)%len(c.window)]
			if e.Rev <= rev {
				continue
			}
			if typ, ok := w.deliverable(e); ok {
				w.Initial = append(w.Initial, Delivery[T]{Type: typ, Event: e})
			}
		}
	}
	c.watchers[w] = struct{}{}
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.registeredWatchers.WithLabelValues(c.resource).Inc()
	}
	return w, nil
}

// checkNotCompacted asks etcd whether rev is still available, so that a
// watch from a compacted revision fails even while the window holds it.
func (c *Cache[T]) checkNotCompacted(ctx context.Context, rev int64) error {
	if rev < c.compacted.Load() {
		return c.expired(rev)
	}
	if rev >= c.Revision() {
		return nil // nothing to replay
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
