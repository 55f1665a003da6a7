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
// by the window) is cut off.
type Watcher[T object.Object] struct {
	cache     *Cache[T]
	prefix    string
	pred      Predicate[T]
	bookmarks bool
	cursor    uint64 // number of the next window event to read
	bookmark  int64  // the last progress revision sent as a bookmark
	done      chan struct{}
	err       error

	// Initial holds the events the watch starts with: the current state as
	// ADDED events (watch from 0). A watch from a revision starts with the
	// window's events after it instead, read like any others.
	Initial []Delivery[T]
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

// Next appends to dst the events waiting for this watcher, at most max,
// then a BOOKMARK when it asked for them and has passed a progress
// notification. With wait it blocks until there is at least one (or ctx
// ends, or the watch ends); without, it may return none.
func (w *Watcher[T]) Next(ctx context.Context, wait bool, dst []Delivery[T], max int) ([]Delivery[T], error) {
	c := w.cache
	for {
		c.mu.RLock()
		select {
		case <-w.done:
			c.mu.RUnlock()
			return dst, w.err
		default:
		}
		if lag := c.next - w.cursor; w.cursor < c.first || lag > uint64(c.cfg.WatcherBuffer) {
			c.mu.RUnlock()
			return dst, w.tooSlow(lag)
		}
		n := uint64(len(c.window))
		delivered := 0
		for ; w.cursor < c.next && delivered < max; w.cursor++ {
			e := c.window[w.cursor%n]
			if typ, ok := w.deliverable(e); ok {
				dst = append(dst, Delivery[T]{Type: typ, Event: e})
				delivered++
			}
		}
		if w.bookmarks && w.cursor == c.next && c.progressRev > w.bookmark {
			w.bookmark = c.progressRev
			dst = append(dst, Delivery[T]{Type: Bookmark, Rev: c.rev})
			delivered++
		}
		fresh := c.fresh
		c.mu.RUnlock()
		if delivered > 0 && c.cfg.Metrics != nil {
			c.cfg.Metrics.eventsDispatched.WithLabelValues(c.resource).Add(float64(delivered))
		}
		if delivered > 0 || !wait {
			return dst, nil
		}
		select {
		case <-fresh:
		case <-w.done:
			return dst, w.err
		case <-ctx.Done():
			return dst, ctx.Err()
		}
	}
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
		if err := c.checkNotCompacted(ctx, rev); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, apierrors.NewServiceUnavailable("apiserver is shutting down")
	}
	w.bookmark = c.progressRev
	if rev == 0 {
		c.ascendPrefix(prefix, func(e *Entry[T]) {
			if pred == nil || pred(e) {
				w.Initial = append(w.Initial, Delivery[T]{Type: Added, Event: &Event[T]{Type: Added, Rev: e.Rev, Cur: e}})
			}
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
