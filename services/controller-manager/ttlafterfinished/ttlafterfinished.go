// Package ttlafterfinished is the TTL-after-finished controller of
// skiff-controller-manager, as Kubernetes' pkg/controller/ttlafterfinished:
// it deletes a finished Job (Complete or Failed) once
// spec.ttlSecondsAfterFinished have passed since it finished, with
// background propagation (the garbage collector then deletes its pods).
// It owns nothing else: it never changes a Job and ignores Jobs without a
// TTL or not finished.
package ttlafterfinished

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	batchv1 "skiff.dev/proto/batch/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "ttl-after-finished"

// Options configure the controller.
type Options struct {
	// Workers is the number of Jobs looked at in parallel
	// (--concurrent-ttl-after-finished-syncs, default 5).
	Workers int
}

// Controller deletes finished Jobs whose TTL expired.
type Controller struct {
	log    *zap.Logger
	clock  workqueue.Clock
	jobs   *informer.Informer[*batchv1.Job]
	client *client.Resource[*batchv1.Job, *batchv1.JobList]
	queue  *controller.Controller
}

// New builds the controller on the shared Jobs informer.
func New(mc *manager.Context, o Options) *Controller {
	if o.Workers <= 0 {
		o.Workers = 5
	}
	parts := mc.For(Name)
	c := &Controller{
		log:    parts.Logger,
		clock:  parts.Clock,
		jobs:   informer.For(mc.Informers, client.Jobs(mc.Conn)),
		client: client.Jobs(mc.Conn),
	}
	c.queue = parts.Runner(Name, o.Workers, controller.ReconcileFunc(c.Reconcile))
	enqueue := func(j *batchv1.Job) {
		if needsCleanup(j) {
			c.queue.Enqueue(informer.Key(j))
		}
	}
	c.jobs.AddHandler(informer.Handler[*batchv1.Job]{OnAdd: enqueue, OnUpdate: func(_, j *batchv1.Job) { enqueue(j) }})
	return c
}

// Run waits for the informer, then works until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.jobs) {
		return nil
	}
	return c.queue.Run(ctx)
}

// Reconcile deletes the Job key if its TTL expired, or looks again when
// it will.
func (c *Controller) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := controller.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.Terminal(err)
	}
	j, ok := c.jobs.Store().GetByName(ns, name)
	if !ok || !needsCleanup(j) {
		return controller.Result{}, nil
	}
	left, err := timeLeft(j, c.clock.Now())
	if err != nil || left > 0 {
		return controller.Result{RequeueAfter: left}, err
	}
	// The cache may be stale (the TTL changed, the Job was replaced):
	// decide again on a fresh read, as Kubernetes does.
	fresh, err := c.client.Get(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if !needsCleanup(fresh) {
		return controller.Result{}, nil
	}
	if left, err := timeLeft(fresh, c.clock.Now()); err != nil || left > 0 {
		return controller.Result{RequeueAfter: left}, err
	}
	_, err = c.client.Delete(ctx, &metav1.DeleteRequest{
		Namespace: ns, Name: name,
		Preconditions:     &metav1.Preconditions{Uid: fresh.GetMetadata().GetUid()},
		PropagationPolicy: "Background",
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, fmt.Errorf("delete job %s: %w", key, err)
	}
	c.log.Info("deleted a finished job whose TTL expired", zap.String("job", key))
	return controller.Result{}, nil
}

// needsCleanup: a Job with a TTL, finished, not being deleted.
func needsCleanup(j *batchv1.Job) bool {
	return j.GetSpec().TtlSecondsAfterFinished != nil && j.GetMetadata().GetDeletionTimestamp() == nil && finishedAt(j) != nil
}

// finishedAt is when j's Complete or Failed condition became True.
func finishedAt(j *batchv1.Job) *time.Time {
	for _, c := range j.GetStatus().GetConditions() {
		if (c.GetType() == "Complete" || c.GetType() == "Failed") && c.GetStatus() == "True" {
			t := c.GetLastTransitionTime().AsTime()
			return &t
		}
	}
	return nil
}

// timeLeft returns how long j has until its TTL expires at now (0 or less:
// expired).
func timeLeft(j *batchv1.Job, now time.Time) (time.Duration, error) {
	at := finishedAt(j)
	if at == nil || at.Unix() <= 0 {
		return 0, fmt.Errorf("job %s/%s: finish time unknown", j.GetMetadata().GetNamespace(), j.GetMetadata().GetName())
	}
	expire := at.Add(time.Duration(j.GetSpec().GetTtlSecondsAfterFinished()) * time.Second)
	return expire.Sub(now), nil
}
