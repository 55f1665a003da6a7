package cronjob

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	batchv1 "skiff.dev/proto/batch/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// reconcile syncs the CronJob of key: it deletes finished Jobs beyond the
// history limits, brings status.active up to date, runs the schedule time
// that is due, writes the status if it changed, and asks to be woken at the
// next schedule time.
func (c *Controller) reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := controller.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.Terminal(err)
	}
	cached, ok := c.cronJobs.Store().GetByName(ns, name)
	if !ok {
		return controller.Result{}, nil // deleted: its Jobs go with it (garbage collector)
	}
	cj := proto.Clone(cached).(*batchv1.CronJob)
	jobs := c.jobsOf(cj)
	if hasUnlisted(cj.GetStatus(), jobs) {
		// A running Job status.active does not list: ours, created by a
		// sync whose status write the cache does not show yet, or someone
		// else's. Read the CronJob to tell.
		if cj, err = c.cjClient.Get(ctx, ns, name); err != nil {
			if apierrors.IsNotFound(err) {
				return controller.Result{}, nil // deleted since the cache saw it
			}
			return controller.Result{}, fmt.Errorf("cronjob %q: %w", key, err)
		}
	}
	before := cj.GetStatus()
	if before == nil {
		before = &batchv1.CronJobStatus{}
	}
	cj.Status = proto.Clone(before).(*batchv1.CronJobStatus)

	c.cleanupFinishedJobs(ctx, cj, jobs)
	requeue, syncErr := c.syncCronJob(ctx, cj, jobs)

	if !proto.Equal(cj.Status, before) {
		if _, err := c.cjClient.UpdateStatus(ctx, cj); err != nil {
			return controller.Result{}, fmt.Errorf("cronjob %q: update status: %w", key, err)
		}
	}
	if requeue != nil {
		return controller.Result{RequeueAfter: max(*requeue, time.Nanosecond)}, nil
	}
	return controller.Result{}, syncErr
}

// hasUnlisted reports a running Job that st.active does not list.
func hasUnlisted(st *batchv1.CronJobStatus, jobs []*batchv1.Job) bool {
	for _, j := range jobs {
		if !isJobFinished(j) && !inActive(st, j.GetMetadata().GetUid()) {
			return true
		}
	}
	return false
}

// jobsOf lists the Jobs cj controls, from the cache.
func (c *Controller) jobsOf(cj *batchv1.CronJob) []*batchv1.Job {
	uid := cj.GetMetadata().GetUid()
	var out []*batchv1.Job
	for _, j := range c.jobs.Store().ByOwner(uid) {
		if ref := controllerutil.ControllerOf(j.GetMetadata()); ref != nil && ref.GetUid() == uid && j.GetMetadata().GetNamespace() == cj.GetMetadata().GetNamespace() {
			out = append(out, j)
		}
	}
	return out
}

// cleanupFinishedJobs deletes the finished Jobs beyond cj's history limits,
// the oldest first.
func (c *Controller) cleanupFinishedJobs(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) {
	for _, j := range historyToDelete(cj, jobs) {
		c.deleteJob(ctx, cj, j)
	}
}

// deleteJob deletes j (its pods in the background, by the garbage
// collector) and drops it from status.active; it reports success.
func (c *Controller) deleteJob(ctx context.Context, cj *batchv1.CronJob, j *batchv1.Job) bool {
	m := j.GetMetadata()
	_, err := c.jobClient.Delete(ctx, &metav1.DeleteRequest{
		Namespace: m.GetNamespace(), Name: m.GetName(), PropagationPolicy: "Background",
		Preconditions: &metav1.Preconditions{Uid: m.GetUid()},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		c.recorder.Eventf(cj, events.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		c.log.Info("deleting job failed", zap.String("job", m.GetNamespace()+"/"+m.GetName()), zap.Error(err))
		return false
	}
	removeActive(cj.Status, m.GetUid())
	c.recorder.Eventf(cj, events.EventTypeNormal, "SuccessfulDelete", "Deleted job %s", m.GetName())
	return true
}

// syncCronJob updates cj's status (in place) from its Jobs and runs the
// schedule time that is due, as Kubernetes' syncCronJob. It returns when
// the CronJob is due again (nil: not until it changes).
func (c *Controller) syncCronJob(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) (*time.Duration, error) {
	now := c.clock.Now()
	st := cj.Status
	ns := cj.GetMetadata().GetNamespace()

	u := reconcileActive(st, jobs)
	for _, j := range u.unexpected {
		c.recorder.Eventf(cj, events.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.GetMetadata().GetName())
	}
	for _, j := range u.completed {
		removeActive(st, j.GetMetadata().GetUid())
		c.recorder.Eventf(cj, events.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, status: %s", j.GetMetadata().GetName(), finishedStatus(j))
	}
	if u.lastSuccessful != nil {
		st.LastSuccessfulTime = u.lastSuccessful
	}
	for _, r := range u.gone {
		// Not in the cache: read it, as the watch may just be slow.
		_, err := c.jobClient.Get(ctx, r.GetNamespace(), r.GetName())
		switch {
		case apierrors.IsNotFound(err):
			c.recorder.Eventf(cj, events.EventTypeNormal, "MissingJob", "Active job went missing: %s", r.GetName())
			removeActive(st, r.GetUid())
		case err != nil:
			return nil, err
		}
	}

	if cj.GetMetadata().GetDeletionTimestamp() != nil {
		return nil, nil // being deleted: status only
	}
	spec := cj.GetSpec()
	if tz := spec.TimeZone; tz != nil {
		if _, err := time.LoadLocation(*tz); err != nil {
			c.recorder.Eventf(cj, events.EventTypeWarning, "UnknownTimeZone", "invalid timeZone: %q: %s", *tz, err)
			return nil, nil
		}
	}
	if spec.GetSuspend() {
		return nil, nil
	}
	if _, usesTZ := scheduleSpec(cj); usesTZ {
		c.recorder.Eventf(cj, events.EventTypeWarning, "UnsupportedSchedule", "CRON_TZ or TZ used in schedule %q is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", spec.GetSchedule())
	}
	sched, err := parseSchedule(cj)
	if err != nil {
		// A user's error: nothing to do until the spec changes.
		c.recorder.Eventf(cj, events.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: %q : %s", spec.GetSchedule(), err)
		return nil, nil
	}
	scheduled, tooMany, err := nextScheduleTime(cj, now, sched)
	if err != nil {
		c.recorder.Eventf(cj, events.EventTypeWarning, "InvalidSchedule", "invalid schedule: %s : %s", spec.GetSchedule(), err)
		return nil, nil
	}
	if tooMany {
		c.recorder.Eventf(cj, events.EventTypeWarning, "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
	}
	next := func() *time.Duration { d := requeueAfter(cj, now, sched); return &d }
	if scheduled == nil {
		return next(), nil // woken early (a restart, a Job's event): nothing due
	}
	if tooLate(cj, *scheduled, now) {
		c.recorder.Eventf(cj, events.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return next(), nil
	}
	if inActiveByName(st, ns, jobName(cj, *scheduled)) || (st.LastScheduleTime != nil && st.LastScheduleTime.AsTime().Equal(*scheduled)) {
		return next(), nil // this time ran already
	}
	if spec.GetConcurrencyPolicy() == "Forbid" && len(st.Active) > 0 {
		c.recorder.Event(cj, events.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
		return next(), nil
	}
	if spec.GetConcurrencyPolicy() == "Replace" {
		for _, r := range append(st.Active[:0:0], st.Active...) {
			j, err := c.jobClient.Get(ctx, r.GetNamespace(), r.GetName())
			if err != nil {
				c.recorder.Eventf(cj, events.EventTypeWarning, "FailedGet", "Get job: %v", err)
				return nil, err
			}
			if !c.deleteJob(ctx, cj, j) {
				return nil, fmt.Errorf("could not replace job %s/%s", r.GetNamespace(), r.GetName())
			}
		}
	}

	want, err := jobFromTemplate(cj, *scheduled)
	if err != nil {
		return nil, err
	}
	created, err := c.jobClient.Create(ctx, want)
	switch {
	case apierrors.IsAlreadyExists(err):
		// Ours from a sync whose status write was lost, or someone else's.
		existing, err := c.jobClient.Get(ctx, ns, want.GetMetadata().GetName())
		if err != nil {
			return nil, err
		}
		ref := controllerutil.ControllerOf(existing.GetMetadata())
		if ref == nil || ref.GetUid() != cj.GetMetadata().GetUid() || inActive(st, existing.GetMetadata().GetUid()) {
			// Someone else's, or listed already: leave it, and wake at the
			// next time (Kubernetes waits for an event here, which may
			// never come for someone else's Job).
			return next(), nil
		}
		created = existing
		c.log.Info("job already exists", zap.String("cronjob", ns+"/"+cj.GetMetadata().GetName()), zap.String("job", existing.GetMetadata().GetName()))
	case err != nil:
		c.recorder.Eventf(cj, events.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return nil, err
	default:
		c.metrics.creationSkew.Observe(now.Sub(*scheduled).Seconds())
		c.recorder.Eventf(cj, events.EventTypeNormal, "SuccessfulCreate", "Created job %s", created.GetMetadata().GetName())
	}
	st.Active = append(st.Active, jobRef(created))
	st.LastScheduleTime = timestamppb.New(*scheduled)
	return next(), nil
}
