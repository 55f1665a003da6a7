package job

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/expectations"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "job"

// DefaultWorkers is the default of Options.Workers (Kubernetes'
// --concurrent-job-syncs).
const DefaultWorkers = 5

// Options configure the controller. Zero values pick the defaults.
type Options struct {
	// Workers is the number of Jobs synced in parallel
	// (--concurrent-job-syncs, default 5).
	Workers int
	// BackoffBase and BackoffMax bound the delay before a failed pod is
	// replaced (default 10 s and 6 min); tests shorten them.
	BackoffBase, BackoffMax time.Duration
	// SyncBatchPeriod is the least time between the starts of two syncs
	// of one Job that its pods' events (and its own status writes) ask
	// for: an event finds the Job idle (its last sync started this long
	// ago or more) and syncs it at once, or it waits for the rest of the
	// period, gathered with the others into one sync. A change of the
	// Job's spec syncs it at once. Kubernetes waits a fixed 1 s
	// (syncJobBatchPeriod) after every pod event, which bounds a Job to
	// parallelism pods per second.
	SyncBatchPeriod time.Duration
}

// DefaultSyncBatchPeriod is the default of Options.SyncBatchPeriod.
const DefaultSyncBatchPeriod = 100 * time.Millisecond

// Controller runs Jobs' pods to completion.
type Controller struct {
	opts  Options
	log   *zap.Logger
	rec   events.Recorder
	clock workqueue.Clock

	pods      *informer.Informer[*corev1.Pod]
	jobs      *informer.Informer[*batchv1.Job]
	podClient *client.Resource[*corev1.Pod, *corev1.PodList]
	jobClient *client.Resource[*batchv1.Job, *batchv1.JobList]

	expectations *expectations.Tracker
	finalizers   *finalizerExpectations
	backoffs     *backoffStore
	// written holds, by key, the Job as this controller's last status
	// write returned it: newer than the cache until the informer catches
	// up, and a sync must not count from an older status (the pods it
	// counted have lost their finalizers already).
	written sync.Map
	// lastSync holds, by key, when the Job's last sync started
	// (time.Time): enqueueBatched counts the batch period from it.
	lastSync sync.Map
	queue    *controller.Controller
	metrics  *metrics

	// cacheReadHook, when set (tests), runs in each sync between its
	// reads of the controller's memory and of the pods cache, with the
	// Job's key: the informer may apply events there.
	cacheReadHook func(key string)
}

// New builds the controller on the shared pods and Jobs informers and
// registers its handlers; the manager starts the informers.
func New(mc *manager.Context, o Options) *Controller {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.SyncBatchPeriod <= 0 {
		o.SyncBatchPeriod = DefaultSyncBatchPeriod
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = DefaultPodFailureBackoff
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = MaxPodFailureBackoff
	}
	parts := mc.For(Name)
	c := &Controller{
		opts:         o,
		log:          parts.Logger,
		rec:          parts.Recorder,
		clock:        parts.Clock,
		pods:         informer.For(mc.Informers, client.Pods(mc.Conn)),
		jobs:         informer.For(mc.Informers, client.Jobs(mc.Conn)),
		podClient:    client.Pods(mc.Conn),
		jobClient:    client.Jobs(mc.Conn),
		expectations: expectations.New(parts.Clock.Now),
		finalizers:   newFinalizerExpectations(),
		backoffs:     newBackoffStore(),
		metrics:      newMetrics(mc.Registerer),
	}
	c.queue = parts.Runner(Name, o.Workers, controller.ReconcileFunc(c.Reconcile))
	c.jobs.AddHandler(informer.Handler[*batchv1.Job]{
		OnAdd:    func(j *batchv1.Job) { c.queue.Enqueue(informer.Key(j)) },
		OnUpdate: c.updateJob,
		OnDelete: c.deleteJob,
	})
	c.pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd:    c.addPod,
		OnUpdate: c.updatePod,
		OnDelete: c.deletePod,
	})
	return c
}

// Run waits for the informers to sync, then syncs Jobs until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.pods, c.jobs) {
		return nil
	}
	return c.queue.Run(ctx)
}

// The handlers run on the informers' goroutines: they map an event to the
// Job it concerns, lower expectations, and enqueue.

func (c *Controller) updateJob(old, cur *batchv1.Job) {
	if old.GetMetadata().GetUid() != cur.GetMetadata().GetUid() {
		c.forget(informer.Key(old))
	}
	if cur.GetMetadata().GetGeneration() == old.GetMetadata().GetGeneration() && old.GetMetadata().GetUid() == cur.GetMetadata().GetUid() {
		// A status write (often this controller's own): batched with
		// the pod events, as Kubernetes does.
		c.enqueueBatched(informer.Key(cur))
		return
	}
	c.queue.Enqueue(informer.Key(cur))
}

func (c *Controller) deleteJob(j *batchv1.Job) {
	c.forget(informer.Key(j))
	c.queue.Enqueue(informer.Key(j))
	// Its pods that still hold the finalizer are orphans now (Kubernetes'
	// cleanupPodFinalizers).
	for _, p := range c.podsOf(j) {
		if hasTrackingFinalizer(p) {
			c.queue.Enqueue(orphanPrefix + informer.Key(p))
		}
	}
}

func (c *Controller) forget(key string) {
	c.written.Delete(key)
	c.lastSync.Delete(key)
	c.expectations.Delete(key)
	c.finalizers.forget(key)
	c.backoffs.forget(key)
}

// orphanPrefix marks a queue key naming a pod (not a Job) whose tracking
// finalizer may have to go: its Job is gone or finished.
const orphanPrefix = "pod:"

// orphaned enqueues p for syncOrphanPod if it holds the tracking finalizer
// and no running Job in the cache controls it; it reports whether it did.
func (c *Controller) orphaned(p *corev1.Pod, key string, found bool) bool {
	if !hasTrackingFinalizer(p) {
		return false
	}
	if found {
		if j, ok := c.jobs.Store().Get(key); ok && !IsFinished(j) {
			return false
		}
	}
	c.queue.Enqueue(orphanPrefix + informer.Key(p))
	return true
}

func (c *Controller) addPod(p *corev1.Pod) {
	key, ok := c.jobOf(p)
	c.orphaned(p, key, ok)
	if !ok {
		return
	}
	if p.GetMetadata().GetDeletionTimestamp() != nil {
		c.expectations.DeletionObserved(key, informer.Key(p))
	} else {
		c.expectations.CreationObserved(key)
	}
	c.enqueueBatched(key)
}

func (c *Controller) updatePod(old, cur *corev1.Pod) {
	if old.GetMetadata().GetResourceVersion() == cur.GetMetadata().GetResourceVersion() {
		return
	}
	key, ok := c.jobOf(cur)
	c.orphaned(cur, key, ok)
	if !ok {
		if key, ok = c.jobOf(old); ok {
			c.enqueueBatched(key)
		}
		return
	}
	if cur.GetMetadata().GetDeletionTimestamp() != nil {
		c.expectations.DeletionObserved(key, informer.Key(cur))
	}
	if !hasTrackingFinalizer(cur) {
		c.finalizers.observed(key, cur.GetMetadata().GetUid())
	}
	c.enqueueBatched(key)
}

func (c *Controller) deletePod(p *corev1.Pod) {
	key, ok := c.jobOf(p)
	if !ok {
		return
	}
	c.expectations.DeletionObserved(key, informer.Key(p))
	c.finalizers.observed(key, p.GetMetadata().GetUid())
	c.enqueueBatched(key)
}

// latest returns the newer of the cached Job and the one this
// controller's last status write returned (same uid).
func (c *Controller) latest(key string, cached *batchv1.Job) *batchv1.Job {
	v, ok := c.written.Load(key)
	if !ok {
		return cached
	}
	w := v.(*batchv1.Job)
	if w.GetMetadata().GetUid() != cached.GetMetadata().GetUid() {
		c.written.Delete(key)
		return cached
	}
	wrv, err1 := strconv.ParseInt(w.GetMetadata().GetResourceVersion(), 10, 64)
	crv, err2 := strconv.ParseInt(cached.GetMetadata().GetResourceVersion(), 10, 64)
	if err1 != nil || err2 != nil || crv >= wrv {
		c.written.CompareAndDelete(key, v) // the cache caught up
		return cached
	}
	return w
}

// enqueueBatched syncs key at once if its last sync started at least the
// batch period ago, else once the period has passed since (sooner if it
// is already due sooner). While the key is being synced, the queue holds
// it back until that sync is done: the events of a busy Job are gathered
// into its next sync.
func (c *Controller) enqueueBatched(key string) {
	if v, ok := c.lastSync.Load(key); ok {
		if wait := c.opts.SyncBatchPeriod - c.clock.Now().Sub(v.(time.Time)); wait > 0 {
			c.queue.EnqueueAfter(key, wait)
			return
		}
	}
	c.queue.Enqueue(key)
}

// jobOf returns the key of the Job controlling p, if the cache holds it.
func (c *Controller) jobOf(p *corev1.Pod) (string, bool) {
	ref := controllerutil.ControllerOf(p.GetMetadata())
	if ref == nil || ref.GetKind() != "Job" || ref.GetApiVersion() != "batch/v1" {
		return "", false
	}
	j, ok := c.jobs.Store().GetByName(p.GetMetadata().GetNamespace(), ref.GetName())
	if !ok || j.GetMetadata().GetUid() != ref.GetUid() {
		return "", false
	}
	return informer.Key(j), true
}

// podsOf returns the pods j controls, from the owner index.
func (c *Controller) podsOf(j *batchv1.Job) []*corev1.Pod {
	m := j.GetMetadata()
	var out []*corev1.Pod
	c.pods.Store().EachByIndex(informer.IndexOwnerUID, m.GetUid(), func(p *corev1.Pod) {
		if ref := controllerutil.ControllerOf(p.GetMetadata()); ref.GetUid() == m.GetUid() && p.GetMetadata().GetNamespace() == m.GetNamespace() {
			out = append(out, p)
		}
	})
	return out
}
