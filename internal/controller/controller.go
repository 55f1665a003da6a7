package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"skiff.dev/internal/workqueue"
)

// Options configure a Controller. The zero value of each field but Name picks
// a default.
type Options struct {
	// Name identifies the controller in logs, the queue's metrics (label
	// name) and the controller's metrics (label controller).
	Name string
	// Workers is the number of keys reconciled in parallel; default 1.
	Workers int
	// Logger logs reconcile failures; nil: nothing is logged.
	Logger *zap.Logger
	// Metrics records the queue's workqueue_* metrics; nil: metrics
	// registered on Registerer.
	Metrics *workqueue.Metrics
	// Clock times delays, backoff and durations; nil: the wall clock.
	Clock workqueue.Clock
	// RateLimiter computes retry backoff; nil: workqueue.DefaultRateLimiter.
	RateLimiter workqueue.RateLimiter[string]
	// Registerer takes the controller_* metrics (and the workqueue_* ones
	// when Metrics is nil); nil: not registered. Controllers may share one.
	Registerer prometheus.Registerer
}

// Controller runs a Reconciler over the keys enqueued to it.
type Controller struct {
	name    string
	r       Reconciler
	q       *workqueue.Queue[string]
	workers int
	log     *zap.Logger
	clock   workqueue.Clock
	m       controllerMetrics
	started atomic.Bool
}

// New returns a controller; keys may be enqueued at once, and are reconciled
// once Run is called.
func New(r Reconciler, o Options) *Controller {
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Clock == nil {
		o.Clock = workqueue.RealClock()
	}
	if o.Metrics == nil {
		o.Metrics = workqueue.NewMetrics(o.Registerer)
	}
	return &Controller{
		name: o.Name,
		r:    r,
		q: workqueue.New(workqueue.Options[string]{
			Name:        o.Name,
			Metrics:     o.Metrics,
			Clock:       o.Clock,
			RateLimiter: o.RateLimiter,
		}),
		workers: o.Workers,
		log:     o.Logger.With(zap.String("controller", o.Name)),
		clock:   o.Clock,
		m:       newMetrics(o.Registerer).forController(o.Name),
	}
}

// Enqueue queues key for reconciling.
func (c *Controller) Enqueue(key string) { c.q.Add(key) }

// EnqueueAfter queues key for reconciling once d has passed.
func (c *Controller) EnqueueAfter(key string, d time.Duration) { c.q.AddAfter(key, d) }

// EnqueueRateLimited queues key after its backoff, as a failed reconcile
// would.
func (c *Controller) EnqueueRateLimited(key string) { c.q.AddRateLimited(key) }

// Queue returns the controller's queue, for tests and metrics; controllers
// enqueue through the Enqueue methods.
func (c *Controller) Queue() *workqueue.Queue[string] { return c.q }

// Run reconciles keys with Options.Workers workers until ctx is cancelled,
// then shuts the queue down, waits for the reconciles in progress (their
// ctx is cancelled too) and returns nil. Keys still queued are dropped. A
// controller runs once: a second Run returns an error.
func (c *Controller) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return fmt.Errorf("controller %q: Run called twice", c.name)
	}
	c.log.Info("starting", zap.Int("workers", c.workers))
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.log.Info("stopping, waiting for workers")
	c.q.ShutDown()
	wg.Wait()
	c.log.Info("stopped")
	return nil
}

// processNext reconciles one key; it returns false when the worker should
// stop.
func (c *Controller) processNext(ctx context.Context) bool {
	key, shutdown := c.q.Get()
	if shutdown {
		return false
	}
	defer c.q.Done(key)
	if ctx.Err() != nil {
		return false // stopping: do not start work on a cancelled context
	}
	c.reconcile(ctx, key)
	return true
}

// reconcile calls the Reconciler for key and acts on its outcome.
func (c *Controller) reconcile(ctx context.Context, key string) {
	log := c.log.With(zap.String("key", key))
	start := c.clock.Now()
	c.m.active.Inc()
	res, err := c.call(ctx, key, log)
	c.m.active.Dec()
	c.m.duration.Observe(c.clock.Now().Sub(start).Seconds())

	switch {
	case IsTerminal(err):
		c.q.Forget(key)
		c.m.total[resultTerminal].Inc()
		c.m.errors.Inc()
		log.Error("reconcile failed, not retrying", zap.Error(err))
	case err != nil:
		c.q.AddRateLimited(key)
		c.m.total[resultError].Inc()
		c.m.errors.Inc()
		if ctx.Err() == nil { // else the error is most likely the cancellation
			log.Info("reconcile failed, retrying", zap.Error(err), zap.Int("retries", c.q.NumRequeues(key)))
		}
	case res.RequeueAfter > 0:
		c.q.Forget(key)
		c.q.AddAfter(key, res.RequeueAfter)
		c.m.total[resultRequeue].Inc()
	case res.Requeue:
		c.q.AddRateLimited(key)
		c.m.total[resultRequeue].Inc()
	default:
		c.q.Forget(key)
		c.m.total[resultSuccess].Inc()
	}
}

// call runs Reconcile, turning a panic into an error so that one bad key
// cannot crash the process.
func (c *Controller) call(ctx context.Context, key string, log *zap.Logger) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.m.panics.Inc()
			log.Error("reconcile panicked", zap.Any("panic", p), zap.Stack("stack"))
			res, err = Result{}, fmt.Errorf("reconcile %q panicked: %v", key, p)
		}
	}()
	return c.r.Reconcile(ctx, key)
}
