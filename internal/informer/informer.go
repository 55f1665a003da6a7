package informer

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
)

// Options configure an informer.
type Options struct {
	// ListOptions restricts what is cached (namespace, label and field
	// selectors); resourceVersion, limit and continue are the reflector's.
	ListOptions *metav1.ListOptions
	// Resync, when positive, replays every cached object to the handlers'
	// OnUpdate(obj, obj) at that period, so level-based controllers revisit
	// everything even without changes.
	Resync time.Duration
	// PageSize is the limit of each List page (default 500).
	PageSize int64
	// Logger defaults to a no-op logger.
	Logger *zap.Logger
	// Metrics may be nil.
	Metrics *Metrics
}

// Handler receives an informer's changes. Nil functions are skipped. The
// objects are shared: read them, never change them. Handlers run one at a
// time, in the order of the changes, on the informer's goroutine: they
// should only enqueue work.
type Handler[T object.Object] struct {
	OnAdd    func(obj T)
	OnUpdate func(old, cur T)
	// OnDelete gets the last state the informer knew of the object.
	OnDelete func(obj T)
}

// Informer keeps a Store of one kind in step with the API server and tells
// handlers about each change.
type Informer[T object.Object] struct {
	src   Source[T]
	opts  Options
	log   *zap.Logger
	store *Store[T]

	mu       sync.Mutex // serialises store changes with handler calls and AddHandler
	handlers []Handler[T]
	lastRV   string // the resourceVersion the cache is at; guarded by mu

	synced     chan struct{}
	syncedOnce sync.Once
}

// New returns an informer over src. Call Run to start it.
func New[T object.Object](src Source[T], o Options) *Informer[T] {
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.ListOptions == nil {
		o.ListOptions = &metav1.ListOptions{}
	}
	return &Informer[T]{
		src:    src,
		opts:   o,
		log:    o.Logger.With(zap.String("resource", src.Resource())),
		store:  newStore[T](),
		synced: make(chan struct{}),
	}
}

// Store is the informer's cache.
func (i *Informer[T]) Store() *Store[T] { return i.store }

// AddIndex adds a secondary index to the store (before or after Run).
// Several users of a shared informer may ask for the same index: an index
// of that name already there is kept (the same name must mean the same
// function).
func (i *Informer[T]) AddIndex(name string, fn IndexFunc[T]) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.store.hasIndex(name) {
		return
	}
	i.store.addIndex(name, fn)
}

// AddHandler registers h. Objects already cached are replayed to its OnAdd
// first, so a handler added late sees the same world as one added early.
func (i *Informer[T]) AddHandler(h Handler[T]) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers = append(i.handlers, h)
	if h.OnAdd != nil {
		for _, obj := range i.store.List() {
			h.OnAdd(obj)
		}
	}
}

// Synced is closed once the first List has been stored.
func (i *Informer[T]) Synced() <-chan struct{} { return i.synced }

// HasSynced reports whether the first List has been stored.
func (i *Informer[T]) HasSynced() bool {
	select {
	case <-i.synced:
		return true
	default:
		return false
	}
}

// ResourceVersion is the revision the cache has reached.
func (i *Informer[T]) ResourceVersion() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.lastRV
}

// Run lists, watches and resyncs until ctx ends.
func (i *Informer[T]) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if i.opts.Resync > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i.resyncLoop(ctx)
		}()
	}
	newReflector(i).run(ctx)
	wg.Wait()
}

func (i *Informer[T]) resyncLoop(ctx context.Context) {
	t := time.NewTicker(i.opts.Resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			i.mu.Lock()
			for _, obj := range i.store.List() {
				for _, h := range i.handlers {
					if h.OnUpdate != nil {
						h.OnUpdate(obj, obj)
					}
				}
			}
			i.mu.Unlock()
		}
	}
}

// replace makes the store hold exactly items, as of resourceVersion rv, and
// tells the handlers what changed.
func (i *Informer[T]) replace(items []T, rv string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	seen := make(map[string]struct{}, len(items))
	for _, obj := range items {
		seen[Key(obj)] = struct{}{}
		i.upsertLocked(obj)
	}
	for _, key := range i.store.keys() {
		if _, ok := seen[key]; !ok {
			if old, ok := i.store.remove(key); ok {
				i.notifyDelete(old)
			}
		}
	}
	i.lastRV = rv
	i.syncedOnce.Do(func() { close(i.synced) })
}

// apply stores one watch event.
func (i *Informer[T]) apply(typ string, obj T) {
	rv := obj.GetMetadata().GetResourceVersion()
	i.mu.Lock()
	defer i.mu.Unlock()
	switch typ {
	case "ADDED", "MODIFIED":
		i.upsertLocked(obj)
	case "DELETED":
		if _, ok := i.store.remove(Key(obj)); ok {
			i.notifyDelete(obj)
		}
	}
	if rv != "" {
		i.lastRV = rv
	}
}

func (i *Informer[T]) upsertLocked(obj T) {
	old, existed := i.store.put(obj)
	switch {
	case !existed:
		for _, h := range i.handlers {
			if h.OnAdd != nil {
				h.OnAdd(obj)
			}
		}
	case old.GetMetadata().GetResourceVersion() != obj.GetMetadata().GetResourceVersion():
		for _, h := range i.handlers {
			if h.OnUpdate != nil {
				h.OnUpdate(old, obj)
			}
		}
	}
}

func (i *Informer[T]) notifyDelete(obj T) {
	for _, h := range i.handlers {
		if h.OnDelete != nil {
			h.OnDelete(obj)
		}
	}
}

// WaitForSync waits until every informer has synced or ctx ends, and
// reports whether they all synced.
func WaitForSync(ctx context.Context, informers ...interface{ Synced() <-chan struct{} }) bool {
	for _, inf := range informers {
		select {
		case <-inf.Synced():
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// bookmark moves the cache's revision forward without a change.
func (i *Informer[T]) bookmark(rv string) {
	if rv == "" {
		return
	}
	i.mu.Lock()
	i.lastRV = rv
	i.mu.Unlock()
}
