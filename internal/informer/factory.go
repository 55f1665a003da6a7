package informer

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/client"
	"skiff.dev/internal/object"
)

// Factory hands out shared informers: one per kind (and selector) per
// process, whatever the number of controllers asking for it.
type Factory struct {
	opts FactoryOptions

	mu        sync.Mutex
	informers map[string]runnable
	started   map[string]bool
	wg        sync.WaitGroup
}

// FactoryOptions are the defaults of the factory's informers.
type FactoryOptions struct {
	Resync  time.Duration
	Logger  *zap.Logger
	Metrics *Metrics
}

type runnable interface {
	Run(ctx context.Context)
	Synced() <-chan struct{}
}

// NewFactory returns an empty factory.
func NewFactory(o FactoryOptions) *Factory {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return &Factory{opts: o, informers: map[string]runnable{}, started: map[string]bool{}}
}

// For returns the shared informer of r's kind, creating it on first use.
func For[T object.Object, L List[T]](f *Factory, r *client.Resource[T, L]) *Informer[T] {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := r.Service()
	if inf, ok := f.informers[key]; ok {
		return inf.(*Informer[T])
	}
	inf := New(FromClient(r), Options{Resync: f.opts.Resync, Logger: f.opts.Logger, Metrics: f.opts.Metrics})
	f.informers[key] = inf
	return inf
}

// Start runs every informer not yet running, until ctx ends. It may be
// called again after more informers were asked for.
func (f *Factory) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for key, inf := range f.informers {
		if f.started[key] {
			continue
		}
		f.started[key] = true
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			inf.Run(ctx)
		}()
	}
}

// WaitForSync waits until every started informer has synced, or ctx ends.
func (f *Factory) WaitForSync(ctx context.Context) bool {
	f.mu.Lock()
	var all []interface{ Synced() <-chan struct{} }
	for key, inf := range f.informers {
		if f.started[key] {
			all = append(all, inf)
		}
	}
	f.mu.Unlock()
	return WaitForSync(ctx, all...)
}

// Wait waits for the informers to stop after Start's ctx ended.
func (f *Factory) Wait() { f.wg.Wait() }
