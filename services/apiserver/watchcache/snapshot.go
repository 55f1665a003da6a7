package watchcache

import (
	"slices"
	"time"

	"github.com/google/btree"
	clientv3 "go.etcd.io/etcd/client/v3"

	"skiff.dev/internal/object"
)

// Paged lists (limit, continue) read snapshots of the cache's B-tree, as
// Kubernetes' watch cache serves them (ListFromCacheSnapshot): a snapshot
// is a copy-on-write clone of the tree, taken in constant time (the
// cache's later writes copy the few nodes they change), so every page of
// a listing reads the state at the first page's revision while the cache
// moves on, and no page reads etcd or decodes an object. A snapshot is
// kept while pages ask for it, until snapshotIdle after the last, and at
// most maxSnapshots at once (the least recently used goes first); a page
// whose revision no snapshot has is the caller's to read from etcd.
const (
	maxSnapshots = 16
	snapshotIdle = time.Minute
)

// snapshot is the tree as it was for every revision in [from, to].
type snapshot[T object.Object] struct {
	from, to int64
	tree     *btree.BTreeG[*Entry[T]]
	used     time.Time
}

// Snapshot is the state of a cache's resource at one revision. It never
// changes.
type Snapshot[T object.Object] struct {
	tree *btree.BTreeG[*Entry[T]]
	// Rev is the revision the state is at.
	Rev int64
}

// Snapshot returns the current state, for the first page of a list; the
// next pages find it with SnapshotAt(Rev).
func (c *Cache[T]) Snapshot() Snapshot[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Snapshot[T]{tree: c.snapshot(c.cfg.Now()).tree, Rev: c.rev}
}

// SnapshotAt returns the state at revision rev when the cache has it: a
// snapshot's whose revisions include rev, or the current state's when
// nothing changed since rev.
func (c *Cache[T]) SnapshotAt(rev int64) (Snapshot[T], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	c.dropSnapshots(now)
	for _, s := range c.snaps {
		if s.from <= rev && rev <= s.to {
			s.used = now
			return Snapshot[T]{tree: s.tree, Rev: rev}, true
		}
	}
	if c.lastChange <= rev && rev <= c.rev {
		return Snapshot[T]{tree: c.snapshot(now).tree, Rev: rev}, true
	}
	return Snapshot[T]{}, false
}

// snapshot returns a snapshot of the current state: the newest one when
// nothing changed since it was taken (it is also now's), else a new clone
// of the tree. Callers hold c.mu (cloning changes the tree's copy-on-write
// context).
func (c *Cache[T]) snapshot(now time.Time) *snapshot[T] {
	if n := len(c.snaps); n > 0 && c.snaps[n-1].from == c.lastChange {
		s := c.snaps[n-1]
		s.to, s.used = c.rev, now
		return s
	}
	c.dropSnapshots(now)
	if len(c.snaps) == maxSnapshots {
		lru := 0
		for i, s := range c.snaps {
			if s.used.Before(c.snaps[lru].used) {
				lru = i
			}
		}
		c.snaps = slices.Delete(c.snaps, lru, lru+1)
	}
	s := &snapshot[T]{from: c.lastChange, to: c.rev, tree: c.tree.Clone(), used: now}
	c.snaps = append(c.snaps, s)
	return s
}

// dropSnapshots forgets the snapshots unused for snapshotIdle, and with
// them the entries only they still hold. Callers hold c.mu.
func (c *Cache[T]) dropSnapshots(now time.Time) {
	c.snaps = slices.DeleteFunc(c.snaps, func(s *snapshot[T]) bool { return now.Sub(s.used) >= snapshotIdle })
}

// Page returns, in key order, the entries under prefix from key start on
// ("" = the first) that pred accepts, at most limit of them (0 = all), and
// where the next page starts: the key that follows the last entry
// returned, "" when no key under prefix does. Pages end where etcd's
// would (storage.Store.List), so a listing may go on either way.
func (s Snapshot[T]) Page(prefix, start string, limit int64, pred Predicate[T]) ([]*Entry[T], string) {
	if start == "" {
		start = prefix
	}
	var out []*Entry[T]
	if limit > 0 {
		out = make([]*Entry[T], 0, min(limit, int64(s.tree.Len())))
	}
	next := ""
	end := clientv3.GetPrefixRangeEnd(prefix)
	s.tree.AscendRange(&Entry[T]{Key: start}, &Entry[T]{Key: end}, func(e *Entry[T]) bool {
		if limit > 0 && int64(len(out)) == limit {
			next = e.Key
			return false
		}
		if pred == nil || pred(e) {
			out = append(out, e)
		}
		return true
	})
	return out, next
}

// Remaining counts the entries under prefix from key from on: the items
// after a page that ends before from (Kubernetes' remainingItemCount).
// It reads them one by one, as etcd counts a range.
func (s Snapshot[T]) Remaining(prefix, from string) int64 {
	var n int64
	s.tree.AscendRange(&Entry[T]{Key: from}, &Entry[T]{Key: clientv3.GetPrefixRangeEnd(prefix)}, func(*Entry[T]) bool {
		n++
		return true
	})
	return n
}
