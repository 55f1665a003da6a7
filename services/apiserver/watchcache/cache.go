package watchcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/storage"
)

// EventType is the type of a watch event.
type EventType uint8

const (
	Added EventType = iota
	Modified
	Deleted
	Bookmark
)

var eventTypeNames = [...]string{"ADDED", "MODIFIED", "DELETED", "BOOKMARK"}

func (t EventType) String() string { return eventTypeNames[t] }

// MaxVersions bounds how many served versions an entry caches encodings for.
const MaxVersions = 4

// Codec decodes a kind's cached objects and names its selectable fields.
type Codec[T object.Object] struct {
	Decode func(raw []byte) (T, error)
	Fields func(T) map[string]string
	// DecodeFields decodes only what Fields reads (see
	// storage.FieldPruner); nil decodes the whole object.
	DecodeFields func(raw []byte) (T, error)
}

// Entry is one object at one revision, kept as its wire encoding (see
// storage.Raw): a byte slice holds no pointers, so a cache of many objects
// costs the garbage collector almost nothing, and the storage version is
// sent to watchers as is. An entry is immutable once published; what it
// computes on demand (labels, fields, other versions) is computed once.
type Entry[T object.Object] struct {
	Key       string
	Namespace string
	Name      string
	Rev       int64
	// Raw is the storage version's wire encoding, resourceVersion included.
	Raw []byte

	codec  *Codec[T]
	labels atomic.Pointer[map[string]string]
	fields atomic.Pointer[map[string]string]
	more   atomic.Pointer[encodings]
}

// encodings holds what watchers of each served version need, made on first use.
type encodings struct {
	enc    [MaxVersions]atomic.Pointer[[]byte]
	framed [MaxVersions][Bookmark]atomic.Pointer[[]byte]
}

// Object decodes the entry into a new object the caller owns.
func (e *Entry[T]) Object() (T, error) {
	return e.codec.Decode(e.Raw)
}

// Labels are the object's labels, decoded once from its metadata.
func (e *Entry[T]) Labels() map[string]string {
	if p := e.labels.Load(); p != nil {
		return *p
	}
	var meta metav1.PartialObjectMetadata
	var m map[string]string
	if err := metadataOnly.Unmarshal(e.Raw, &meta); err == nil {
		m = meta.GetMetadata().GetLabels()
	}
	e.labels.Store(&m)
	return m
}

var metadataOnly = proto.UnmarshalOptions{DiscardUnknown: true}

// Fields holds the values a field selector can match, computed the first
// time a field selector asks (most watchers and lists never do).
func (e *Entry[T]) Fields() map[string]string {
	if p := e.fields.Load(); p != nil {
		return *p
	}
	var m map[string]string
	if e.codec != nil && e.codec.Fields != nil {
		decode := e.codec.DecodeFields
		if decode == nil {
			decode = e.codec.Decode
		}
		if obj, err := decode(e.Raw); err == nil {
			m = e.codec.Fields(obj)
		}
	}
	e.fields.Store(&m)
	return m
}

func (e *Entry[T]) encodings() *encodings {
	if p := e.more.Load(); p != nil {
		return p
	}
	e.more.CompareAndSwap(nil, &encodings{})
	return e.more.Load()
}

// Encoded returns the entry's object encoded for served version v: Raw for
// the storage version (v 0), else computed with encode the first time and
// shared afterwards.
func (e *Entry[T]) Encoded(v int, encode func(T) ([]byte, error)) ([]byte, error) {
	if v == 0 {
		return e.Raw, nil
	}
	enc := e.encodings()
	if p := enc.enc[v].Load(); p != nil {
		return *p, nil
	}
	obj, err := e.Object()
	if err != nil {
		return nil, err
	}
	b, err := encode(obj)
	if err != nil {
		return nil, err
	}
	enc.enc[v].Store(&b)
	return b, nil
}

// Framed returns the entry as one ready-to-send watch event of type typ
// for served version v (an `events` entry of a WatchResponse), computing it
// with frame the first time and sharing it with every later watcher.
func (e *Entry[T]) Framed(v int, typ EventType, frame func(*Entry[T], EventType) ([]byte, error)) ([]byte, error) {
	enc := e.encodings()
	if p := enc.framed[v][typ].Load(); p != nil {
		return *p, nil
	}
	b, err := frame(e, typ)
	if err != nil {
		return nil, err
	}
	enc.framed[v][typ].Store(&b)
	return b, nil
}

// Event is one change at one revision. For Deleted, Cur is the last state
// with Rev set to the deletion revision.
type Event[T object.Object] struct {
	Type EventType
	Rev  int64
	Cur  *Entry[T]
	Prev *Entry[T]
}

// Predicate says whether an entry is of interest; nil accepts everything.
type Predicate[T object.Object] func(*Entry[T]) bool

// Delivery is what a watcher receives: an event, with the type it has for
// this watcher (a MODIFIED event becomes ADDED or DELETED for a watcher
// whose selector the object starts or stops matching).
type Delivery[T object.Object] struct {
	Type  EventType
	Event *Event[T]
	// Rev is the revision of a Bookmark (Event is nil then).
	Rev int64
}

// Config tunes a cache.
type Config[T object.Object] struct {
	Store  *storage.Store[T]
	Fields func(T) map[string]string
	// FieldPruner keeps the paths Fields reads (the kind's selectable
	// fields), so that computing them decodes only those; nil decodes the
	// whole object.
	FieldPruner *storage.FieldPruner
	// WindowSize is how many recent events are kept for watches that resume.
	WindowSize int
	// WatcherBuffer is how many events a watcher may lag before it is cut off.
	WatcherBuffer int
	// BookmarkInterval is how often bookmark progress is requested and sent.
	BookmarkInterval time.Duration
	// BatchInterval is the least time between two batches of events the
	// cache publishes to its watchers (see batch.go); 0 publishes every
	// etcd watch response at once.
	BatchInterval time.Duration
	// Now is the clock of the snapshots' idle time (snapshot.go); nil:
	// time.Now.
	Now     func() time.Time
	Logger  *zap.Logger
	Metrics *Metrics
}

// Cache is the watch cache of one resource.
type Cache[T object.Object] struct {
	cfg      Config[T]
	codec    *Codec[T]
	resource string
	log      *zap.Logger

	mu       sync.RWMutex
	tree     *btree.BTreeG[*Entry[T]]
	window   []*Event[T] // ring: event number n is at window[n % len(window)]
	first    uint64      // number of the oldest event in the window
	next     uint64      // number the next event gets
	startRev int64       // every event after startRev is in the window
	// progressRev is the revision of the last progress notification:
	// watchers that asked for bookmarks send one when they pass it.
	progressRev int64
	rev         int64 // the revision the cache reflects
	// lastChange is the revision of the tree's last change (an event, or
	// the list that filled it): the tree is the state of every revision
	// from lastChange to rev.
	lastChange int64
	snaps      []*snapshot[T] // recent states for paged lists (snapshot.go)
	fresh      chan struct{}  // closed and replaced whenever rev advances
	// Watchers read the window up to sealed (see batch.go); published is
	// closed and replaced when a batch is sealed or a bookmark is due.
	sealed      uint64
	sealedAt    time.Time
	sealPending bool // a seal is scheduled
	published   chan struct{}
	batches     [recentBatches]*batch // batch number n is at batches[n % recentBatches]
	nbatches    uint64
	// askProgress asks the watch loop for a progress notification now
	// (a waiter needs a revision the cache has not heard of: writes to
	// other kinds move etcd's revision without an event here).
	askProgress chan struct{}
	watchers    map[*Watcher[T]]struct{}
	ready       chan struct{}
	readyErr    error
	stopped     bool

	compacted atomic.Int64 // highest revision etcd is known to have compacted
	// This resource's series of the busiest metrics, resolved once (every
	// watcher adds to them after every batch); nil without metrics.
	dispatched, batchesSealed, sharedEncodings prometheus.Counter
}

func lessEntry[T object.Object](a, b *Entry[T]) bool { return a.Key < b.Key }

// New returns a cache; Run fills it.
func New[T object.Object](cfg Config[T]) *Cache[T] {
	if cfg.WindowSize <= 0 {
		cfg.WindowSize = 10000
	}
	if cfg.WatcherBuffer <= 0 {
		cfg.WatcherBuffer = 1000
	}
	if cfg.BookmarkInterval <= 0 {
		cfg.BookmarkInterval = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if m := cfg.Metrics; m != nil {
		// Every resource's series exists from the start, at zero.
		r := cfg.Store.Resource()
		m.eventsReceived.WithLabelValues(r)
		m.eventsDispatched.WithLabelValues(r)
		m.registeredWatchers.WithLabelValues(r)
		m.terminatedWatchers.WithLabelValues(r)
	}
	c := &Cache[T]{
		cfg:         cfg,
		codec:       &Codec[T]{Decode: cfg.Store.DecodeRaw, Fields: cfg.Fields},
		resource:    cfg.Store.Resource(),
		log:         cfg.Logger.With(zap.String("resource", cfg.Store.Resource())),
		tree:        btree.NewG(32, lessEntry[T]),
		window:      make([]*Event[T], cfg.WindowSize),
		fresh:       make(chan struct{}),
		published:   make(chan struct{}),
		askProgress: make(chan struct{}, 1),
		watchers:    map[*Watcher[T]]struct{}{},
		ready:       make(chan struct{}),
	}
	if p := cfg.FieldPruner; p != nil {
		c.codec.DecodeFields = func(raw []byte) (T, error) {
			pruned, err := p.Prune(raw)
			if err != nil {
				var zero T
				return zero, fmt.Errorf("%s: pruning a cached object to its selectable fields: %w", c.resource, err)
			}
			return cfg.Store.DecodeRaw(pruned)
		}
	}
	if m := cfg.Metrics; m != nil {
		c.dispatched = m.eventsDispatched.WithLabelValues(c.resource)
		c.batchesSealed = m.batches.WithLabelValues(c.resource)
		c.sharedEncodings = m.sharedEncodings.WithLabelValues(c.resource)
	}
	return c
}

// Codec decodes the cache's objects and names their selectable fields.
func (c *Cache[T]) Codec() *Codec[T] { return c.codec }

// Run lists and watches until ctx ends, relisting when etcd has compacted
// the revision the cache's own watch needs.
func (c *Cache[T]) Run(ctx context.Context) {
	defer c.stop()
	for ctx.Err() == nil {
		rev, err := c.initialize(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("watch cache list failed, retrying", zap.Error(err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		err = c.watch(ctx, rev)
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("watch cache lost its etcd watch, relisting", zap.Error(err))
	}
}

func (c *Cache[T]) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	for w := range c.watchers {
		c.terminate(w, apierrors.NewServiceUnavailable("apiserver is shutting down; watch again"))
	}
	select {
	case <-c.ready:
	default:
		c.readyErr = errors.New("watch cache stopped")
		close(c.ready)
	}
}

// initialize lists everything from etcd and replaces the cache's state.
func (c *Cache[T]) initialize(ctx context.Context) (int64, error) {
	tree := btree.NewG(32, lessEntry[T])
	rev, err := c.cfg.Store.Scan(ctx, c.cfg.Store.Prefix(), func(key string, value []byte, modRev int64) error {
		if e := c.newEntry(key, value, modRev); e != nil {
			tree.ReplaceOrInsert(e)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.relists.WithLabelValues(c.resource).Inc()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Watchers registered against the old state cannot be continued exactly.
	for w := range c.watchers {
		c.terminate(w, apierrors.NewServiceUnavailable("watch cache was reinitialized; watch again from your last resourceVersion"))
	}
	c.tree = tree
	clear(c.window)
	c.first = c.next // numbers keep growing: old cursors fall out of the window
	c.sealed = c.next
	c.batches, c.nbatches = [recentBatches]*batch{}, 0
	c.startRev = rev
	c.lastChange = rev
	c.advance(rev)
	select {
	case <-c.ready:
	default:
		close(c.ready)
	}
	return rev, nil
}

// NewEntry makes the entry of the value etcd stores under key at revision
// rev (the cache's own, or a paged list's read from etcd); value is copied.
func (c *Cache[T]) NewEntry(key string, value []byte, rev int64) (*Entry[T], error) {
	raw, err := c.cfg.Store.Raw(key, value, rev)
	if err != nil {
		return nil, err
	}
	ns, name := c.cfg.Store.SplitKey(key)
	return &Entry[T]{Key: key, Namespace: ns, Name: name, Rev: rev, Raw: raw, codec: c.codec}, nil
}

// newEntry is NewEntry for the cache's own state: it logs and returns nil
// for a value skiff did not write.
func (c *Cache[T]) newEntry(key string, value []byte, rev int64) *Entry[T] {
	e, err := c.NewEntry(key, value, rev)
	if err != nil {
		c.log.Error("skipping an object etcd holds that cannot be read (not skiff's, or encrypted with a key no longer configured)", zap.String("key", key), zap.Error(err))
		return nil
	}
	return e
}

// watch follows etcd from rev+1 until the watch fails or ctx ends.
func (c *Cache[T]) watch(ctx context.Context, rev int64) error {
	stream := c.cfg.Store.Watcher().Watch(ctx, c.cfg.Store.Prefix(), rev)
	defer stream.Close()
	ticker := time.NewTicker(c.cfg.BookmarkInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
			// Ask etcd where it is; the answer arrives as a progress notification.
			stream.RequestProgress()
		case <-c.askProgress:
			stream.RequestProgress()
		case resp, ok := <-stream.Responses():
			if !ok {
				if err := stream.Err(); err != nil {
					return err
				}
				return errors.New("etcd watch ended")
			}
			if resp.CompactRevision != 0 {
				c.noteCompacted(resp.CompactRevision)
				return fmt.Errorf("etcd compacted revision %d the cache still needed", resp.CompactRevision)
			}
			if resp.Progress {
				c.progress(resp.Revision)
				continue
			}
			c.apply(resp.Events, resp.Revision)
		}
	}
}

// apply turns etcd events into cache events, updates the store and the
// window, and seals them for the watchers (each reads the window itself)
// now or within the batch interval.
func (c *Cache[T]) apply(evs []*mvccpb.Event, headerRev int64) {
	// Build entries outside the lock.
	entries := make([]*Entry[T], len(evs))
	for i, ev := range evs {
		if ev.Type == mvccpb.PUT {
			entries[i] = c.newEntry(string(ev.Kv.Key), ev.Kv.Value, ev.Kv.ModRevision)
		}
	}
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.eventsReceived.WithLabelValues(c.resource).Add(float64(len(evs)))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, ev := range evs {
		var e *Event[T]
		switch ev.Type {
		case mvccpb.PUT:
			cur := entries[i]
			if cur == nil {
				continue
			}
			prev, _ := c.tree.ReplaceOrInsert(cur)
			e = &Event[T]{Type: Added, Rev: cur.Rev, Cur: cur, Prev: prev}
			if prev != nil {
				e.Type = Modified
			}
		case mvccpb.DELETE:
			prev, ok := c.tree.Delete(&Entry[T]{Key: string(ev.Kv.Key)})
			if !ok {
				continue
			}
			// The last state, at the deletion's revision.
			cur := &Entry[T]{Key: prev.Key, Namespace: prev.Namespace, Name: prev.Name, Rev: ev.Kv.ModRevision,
				Raw: storage.WithResourceVersion(prev.Raw, ev.Kv.ModRevision), codec: c.codec}
			e = &Event[T]{Type: Deleted, Rev: cur.Rev, Cur: cur, Prev: prev}
		}
		c.push(e)
		c.lastChange = e.Rev
	}
	c.advance(headerRev)
	if len(c.snaps) > 0 {
		c.dropSnapshots(c.cfg.Now())
	}
	c.sealSoon()
}

// push appends to the window, evicting the oldest event when full.
func (c *Cache[T]) push(e *Event[T]) {
	n := uint64(len(c.window))
	if c.next-c.first == n {
		c.startRev = c.window[c.first%n].Rev
		c.window[c.first%n] = nil
		c.first++
	}
	c.window[c.next%n] = e
	c.next++
}

// advance moves the cache's revision forward and wakes those waiting for it.
func (c *Cache[T]) advance(rev int64) {
	if rev <= c.rev {
		return
	}
	c.rev = rev
	c.notify()
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.resourceVersion.WithLabelValues(c.resource).Set(float64(rev))
	}
}

// notify wakes every waiter for a revision: the cache's revision moved.
func (c *Cache[T]) notify() {
	close(c.fresh)
	c.fresh = make(chan struct{})
}

// progress handles an etcd progress notification: nothing of this resource
// changed up to rev. Watchers that asked for bookmarks get one.
func (c *Cache[T]) progress(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advance(rev)
	if rev > c.progressRev {
		c.progressRev = rev
		c.wakeWatchers()
	}
}

// terminate removes w and tells it why. Callers hold c.mu.
func (c *Cache[T]) terminate(w *Watcher[T], err error) {
	if _, ok := c.watchers[w]; !ok {
		return
	}
	delete(c.watchers, w)
	w.err = err
	close(w.done)
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.registeredWatchers.WithLabelValues(c.resource).Dec()
	}
}

func (c *Cache[T]) noteCompacted(rev int64) {
	for {
		cur := c.compacted.Load()
		if rev <= cur || c.compacted.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// WaitReady blocks until the first list has loaded.
func (c *Cache[T]) WaitReady(ctx context.Context) error {
	select {
	case <-c.ready:
		return c.readyErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Revision is the revision the cache reflects now.
func (c *Cache[T]) Revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rev
}

// WaitFresh waits until the cache reflects at least rev, or gives up at the
// ctx deadline (at most 3 s) with a Timeout. A cache that is only a few
// events behind catches up by itself; one still behind after
// askProgressAfter asks etcd where it is, once (writes to other kinds move
// etcd's revision without an event here, and the periodic bookmark may be
// a minute away).
func (c *Cache[T]) WaitFresh(ctx context.Context, rev int64) error {
	if err := c.WaitReady(ctx); err != nil {
		return err
	}
	deadline := time.NewTimer(3 * time.Second)
	defer deadline.Stop()
	ask := time.NewTimer(askProgressAfter)
	defer ask.Stop()
	for {
		c.mu.RLock()
		cur, fresh := c.rev, c.fresh
		c.mu.RUnlock()
		if cur >= rev {
			return nil
		}
		select {
		case <-fresh:
		case <-ask.C:
			select {
			case c.askProgress <- struct{}{}:
			default: // another waiter asked already
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return apierrors.NewTimeout(fmt.Sprintf("Too large resource version: %d, current: %d", rev, cur))
		}
	}
}

// askProgressAfter is how long WaitFresh lets the cache catch up through
// its events before it asks etcd for a progress notification.
const askProgressAfter = 20 * time.Millisecond

// Get returns the cached entry for key.
func (c *Cache[T]) Get(key string) (*Entry[T], bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.tree.Get(&Entry[T]{Key: key})
}

// List returns the entries under prefix that pred accepts, in key order,
// and the revision they are consistent at.
func (c *Cache[T]) List(prefix string, pred Predicate[T]) ([]*Entry[T], int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*Entry[T]
	c.ascendPrefix(prefix, func(e *Entry[T]) bool {
		if pred == nil || pred(e) {
			out = append(out, e)
		}
		return true
	})
	return out, c.rev
}

// Count is how many objects the cache holds.
func (c *Cache[T]) Count() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.tree.Len()
}

// CountPrefix is how many objects the cache holds under prefix, counted
// up to upTo (at least one): what a List there would read, for flow
// control's estimate of its work, at a bounded cost.
func (c *Cache[T]) CountPrefix(prefix string, upTo int) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	c.ascendPrefix(prefix, func(*Entry[T]) bool {
		n++
		return n < upTo
	})
	return n
}

// ascendPrefix calls fn on the entries under prefix in key order, until
// fn returns false.
func (c *Cache[T]) ascendPrefix(prefix string, fn func(*Entry[T]) bool) {
	end := clientv3.GetPrefixRangeEnd(prefix)
	c.tree.AscendRange(&Entry[T]{Key: prefix}, &Entry[T]{Key: end}, fn)
}
