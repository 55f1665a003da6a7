package cronjob

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	batchv1 "skiff.dev/proto/batch/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "cronjob"

// Options configure the controller.
type Options struct {
	// Workers is the number of CronJobs synced in parallel
	// (--concurrent-cron-job-syncs, default 5).
	Workers int
}

// Controller creates the Jobs of CronJobs at their schedule times.
type Controller struct {
	cronJobs *informer.Informer[*batchv1.CronJob]
	jobs     *informer.Informer[*batchv1.Job]

	cjClient  *client.Resource[*batchv1.CronJob, *batchv1.CronJobList]
	jobClient *client.Resource[*batchv1.Job, *batchv1.JobList]
	recorder  events.Recorder
	log       *zap.Logger
	clock     workqueue.Clock
	metrics   *metrics
	queue     *controller.Controller
}

// New builds the controller from the manager's shared pieces: the CronJob
// and Job informers of the shared factory, the manager's clock (schedule
// times are read from it, and the queue's requeues at them run on it), its
// recorder and registry. Call Run.
func New(mc *manager.Context, o Options) *Controller {
	if o.Workers <= 0 {
		o.Workers = 5
	}
	parts := mc.For(Name)
	c := &Controller{
		cronJobs:  informer.For(mc.Informers, client.CronJobs(mc.Conn)),
		jobs:      informer.For(mc.Informers, client.Jobs(mc.Conn)),
		cjClient:  client.CronJobs(mc.Conn),
		jobClient: client.Jobs(mc.Conn),
		recorder:  parts.Recorder,
		log:       parts.Logger,
		clock:     parts.Clock,
		metrics:   newMetrics(mc.Registerer),
	}
	c.queue = parts.Runner(Name, o.Workers, controller.ReconcileFunc(c.reconcile))
	c.cronJobs.AddHandler(informer.Handler[*batchv1.CronJob]{
		OnAdd:    c.enqueue,
		OnUpdate: c.cronJobUpdated,
		OnDelete: c.enqueue,
	})
	c.jobs.AddHandler(informer.Handler[*batchv1.Job]{
		OnAdd:    c.jobChanged,
		OnUpdate: c.jobUpdated,
		OnDelete: c.jobChanged,
	})
	return c
}

// Run waits for the informers to sync, then syncs CronJobs until ctx ends;
// it returns nil then.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.cronJobs, c.jobs) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s: informers did not sync", Name)
	}
	return c.queue.Run(ctx)
}

func (c *Controller) enqueue(cj *batchv1.CronJob) { c.queue.Enqueue(informer.Key(cj)) }

// cronJobUpdated syncs a changed CronJob now, except when its schedule or
// time zone changed: then it is due at its new next schedule time (an
// earlier requeue still queued runs and finds nothing to do).
func (c *Controller) cronJobUpdated(old, cur *batchv1.CronJob) {
	os, cs := old.GetSpec(), cur.GetSpec()
	if os.GetSchedule() == cs.GetSchedule() && sameZone(os.TimeZone, cs.TimeZone) {
		c.enqueue(cur)
		return
	}
	sched, err := parseSchedule(cur)
	if err != nil {
		c.recorder.Eventf(cur, events.EventTypeWarning, "UnParseableCronJobSchedule", "unparseable schedule for cronjob: %s", cs.GetSchedule())
		return
	}
	c.queue.EnqueueAfter(informer.Key(cur), requeueAfter(cur, c.clock.Now(), sched))
}

func sameZone(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// cronJobOf resolves a Job's controller reference to the CronJob it names,
// if it still exists with that uid.
func (c *Controller) cronJobOf(namespace string, ref *metav1.OwnerReference) (*batchv1.CronJob, bool) {
	if ref == nil || ref.GetKind() != "CronJob" {
		return nil, false
	}
	cj, ok := c.cronJobs.Store().GetByName(namespace, ref.GetName())
	if !ok || cj.GetMetadata().GetUid() != ref.GetUid() {
		return nil, false
	}
	return cj, true
}

// jobChanged enqueues the CronJob controlling j.
func (c *Controller) jobChanged(j *batchv1.Job) {
	m := j.GetMetadata()
	if cj, ok := c.cronJobOf(m.GetNamespace(), controllerutil.ControllerOf(m)); ok {
		c.enqueue(cj)
	}
}

// jobUpdated also tells the former controller of a Job that changed hands.
func (c *Controller) jobUpdated(old, cur *batchv1.Job) {
	if old.GetMetadata().GetResourceVersion() == cur.GetMetadata().GetResourceVersion() {
		return
	}
	oldRef, curRef := controllerutil.ControllerOf(old.GetMetadata()), controllerutil.ControllerOf(cur.GetMetadata())
	if oldRef != nil && oldRef.GetUid() != curRef.GetUid() {
		if cj, ok := c.cronJobOf(old.GetMetadata().GetNamespace(), oldRef); ok {
			c.enqueue(cj)
		}
	}
	c.jobChanged(cur)
}
