package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// controllerName is the spec.managedBy of the Jobs this controller syncs
// (unset means this one too).
const controllerName = "kubernetes.io/job-controller"

// Reconcile syncs one Job, named by its key (see the package comment for
// the steps).
func (c *Controller) Reconcile(ctx context.Context, key string) (res controller.Result, rerr error) {
	if podKey, ok := strings.CutPrefix(key, orphanPrefix); ok {
		return res, c.syncOrphanPod(ctx, podKey)
	}
	start := c.clock.Now()
	c.lastSync.Store(key, start)
	ns, name, err := controller.SplitKey(key)
	if err != nil {
		return res, controller.Terminal(err)
	}
	cached, ok := c.jobs.Store().GetByName(ns, name)
	if !ok {
		c.forget(key)
		return res, nil
	}
	cached = c.latest(key, cached)
	if mb := cached.GetSpec().ManagedBy; mb != nil && *mb != controllerName {
		return res, nil // another controller's
	}
	if IsFinished(cached) {
		c.backoffs.forget(key)
		return res, nil
	}
	mode := cached.GetSpec().GetCompletionMode()
	if mode != "NonIndexed" && mode != "Indexed" {
		c.rec.Eventf(cached, events.EventTypeWarning, "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown")
		return res, nil
	}
	action := "reconciling"
	defer func() {
		result := "success"
		if rerr != nil {
			result = "error"
		}
		c.metrics.syncs.WithLabelValues(mode, result, action).Inc()
		c.metrics.syncDuration.WithLabelValues(mode, result, action).Observe(c.clock.Now().Sub(start).Seconds())
	}()

	j := proto.Clone(cached).(*batchv1.Job)
	if j.Status == nil {
		j.Status = &batchv1.JobStatus{}
	}
	// The controller's memory before the cache: a pod observed in between
	// makes the sync wait for nothing, never act on a stale count. A
	// finalizer removal observed after the cache was read would leave
	// the pod there with its finalizer (not counted, as it seems) and no
	// longer in flight: counted a second time.
	satisfied := c.expectations.Satisfied(key)
	pending := c.finalizers.pending(key)
	if c.cacheReadHook != nil {
		c.cacheReadHook(key)
	}
	v := &view{
		job: j, pods: c.podsOf(j), now: c.clock.Now(), satisfied: satisfied,
		pendingFinalizers: pending,
		backoff:           c.backoffs.get(key),
		backoffBase:       c.opts.BackoffBase, backoffMax: c.opts.BackoffMax,
	}
	a := assess(v)
	if a.requeueAfter > 0 {
		res.RequeueAfter = a.requeueAfter
	}
	st := j.Status
	active, ready, terminating := int32(len(a.active)), a.ready, a.terminating
	finished := a.finished
	suspendChanged := false
	var manageErr error
	if finished != nil {
		// Delete the active pods, keeping their finalizers: they are
		// counted as failed once terminating.
		deletedReady, deleted, err := c.deletePods(ctx, key, j, a.active, false)
		if deleted != active || !satisfied {
			finished = nil // pods not gone or not seen yet: not finished yet
		}
		active -= deleted
		terminating += deleted
		ready -= deletedReady
		manageErr = err
	} else {
		manageCalled := false
		if satisfied && j.GetMetadata().GetDeletionTimestamp() == nil {
			manageCalled = true
			plan := manage(v, a)
			switch {
			case len(plan.deleteUncounted) > 0:
				action = "pods_deleted"
				deletedReady, deleted, err := c.deletePods(ctx, key, j, plan.deleteUncounted, true)
				active -= deleted
				terminating += deleted
				ready -= deletedReady
				manageErr = err
			case plan.create > 0:
				action = "pods_created"
				created, err := c.createPods(ctx, key, j, plan, a)
				active += int32(created)
				manageErr = err
			case plan.backoffWait > 0:
				if res.RequeueAfter == 0 || plan.backoffWait < res.RequeueAfter {
					res.RequeueAfter = plan.backoffWait
				}
			}
		}
		var complete bool
		if j.GetSpec().Completions == nil {
			complete = a.succeeded > 0 && active == 0
		} else {
			complete = a.succeeded >= j.GetSpec().GetCompletions() && active == 0
		}
		switch {
		case complete:
			finished = newCondition("SuccessCriteriaMet", "True", ReasonCompletionsReached, "Reached expected number of succeeded pods", v.now)
		case manageCalled && isSuspended(j):
			if ensureCondition(st, newCondition("Suspended", "True", "JobSuspended", "Job suspended", v.now)) {
				suspendChanged = true
				c.rec.Eventf(j, events.EventTypeNormal, "Suspended", "Job suspended")
			}
		case manageCalled:
			if ensureCondition(st, newCondition("Suspended", "False", "JobResumed", "Job resumed", v.now)) {
				suspendChanged = true
				c.rec.Eventf(j, events.EventTypeNormal, "Resumed", "Job resumed")
				// activeDeadlineSeconds counts from the resumption.
				st.StartTime = timestamppb.New(v.now)
			}
		}
	}
	needsFlush := suspendChanged || active != st.Active || st.Ready == nil || ready != *st.Ready ||
		st.Terminating == nil || terminating != *st.Terminating || !proto.Equal(st.StartTime, cached.GetStatus().GetStartTime())
	st.Active, st.Ready, st.Terminating = active, &ready, &terminating
	if err := c.trackAndRemoveFinalizers(ctx, key, v, a, finished, needsFlush, terminating); err != nil {
		return res, fmt.Errorf("job %s: tracking status: %w", key, errors.Join(err, manageErr))
	}
	if manageErr != nil {
		return res, fmt.Errorf("job %s: %w", key, manageErr)
	}
	return res, nil
}

// syncOrphanPod removes the tracking finalizer of a pod whose Job is gone
// (or finished, or not a batch/v1 Job), as Kubernetes' syncOrphanPod: no
// Job will count it, and the finalizer would keep it forever.
func (c *Controller) syncOrphanPod(ctx context.Context, podKey string) error {
	p, ok := c.pods.Store().Get(podKey)
	if !ok || !hasTrackingFinalizer(p) {
		return nil
	}
	if ref := controllerutil.ControllerOf(p.GetMetadata()); ref != nil {
		if ref.GetKind() != "Job" || ref.GetApiVersion() != "batch/v1" {
			return nil // someone else's: not ours to change
		}
		if j, ok := c.jobs.Store().GetByName(p.GetMetadata().GetNamespace(), ref.GetName()); ok && j.GetMetadata().GetUid() == ref.GetUid() {
			if mb := j.GetSpec().ManagedBy; mb != nil && *mb != controllerName {
				return nil
			}
			if !IsFinished(j) {
				return nil // its Job counts it
			}
		}
	}
	if err := c.removeFinalizer(ctx, p); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("orphan pod %s: removing the tracking finalizer: %w", podKey, err)
	}
	return nil
}

// trackAndRemoveFinalizers writes the status with the newly finished pods
// in the uncounted lists (and the interim condition), removes their
// finalizers, counts them, and writes the final condition once nothing is
// uncounted or terminating (Kubernetes' trackJobStatusAndRemoveFinalizers
// and flushUncountedAndRemoveFinalizers).
func (c *Controller) trackAndRemoveFinalizers(ctx context.Context, key string, v *view, a assessment, finished *batchv1.JobCondition, needsFlush bool, terminating int32) error {
	plan := track(v, a, finished, needsFlush)
	j := v.job
	mode := j.GetSpec().GetCompletionMode()
	old := proto.Clone(j.Status).(*batchv1.JobStatus)
	if plan.needsFlush {
		got, err := c.jobClient.UpdateStatus(ctx, j)
		if err != nil {
			return fmt.Errorf("adding uncounted pods to status: %w", err)
		}
		c.backoffs.set(key, a.backoff)
		c.written.Store(key, got)
		j = got
		if j.Status == nil {
			j.Status = &batchv1.JobStatus{}
		}
	}
	flush := false
	removed, rmErr := c.removeFinalizers(ctx, key, plan.removeFinalizers)
	for _, uid := range removed {
		delete(plan.withFinalizer, uid)
	}
	if countUncounted(j.Status, plan.withFinalizer) {
		flush = true
	}
	if rmErr != nil {
		if flush {
			got, err := c.jobClient.UpdateStatus(ctx, j)
			if err != nil {
				return errors.Join(rmErr, fmt.Errorf("removing uncounted pods from status: %w", err))
			}
			c.written.Store(key, got)
		}
		return rmErr
	}
	done := !plan.reachedMax && enactFinished(j.Status, plan.finished, terminating)
	if done {
		flush = true
	}
	if flush {
		got, err := c.jobClient.UpdateStatus(ctx, j)
		if err != nil {
			return fmt.Errorf("removing uncounted pods from status: %w", err)
		}
		c.written.Store(key, got)
		j = got
	}
	c.metrics.podsFinished.WithLabelValues(mode, "succeeded").Add(float64(max(j.GetStatus().GetSucceeded()-old.GetSucceeded(), 0)))
	c.metrics.podsFinished.WithLabelValues(mode, "failed").Add(float64(max(j.GetStatus().GetFailed()-old.GetFailed(), 0)))
	if done {
		c.recordFinished(j, plan.finished)
	}
	return nil
}

func (c *Controller) recordFinished(j *batchv1.Job, cond *batchv1.JobCondition) {
	mode := j.GetSpec().GetCompletionMode()
	if cond.GetType() == "Complete" {
		if j.GetSpec().Completions != nil && j.GetStatus().GetSucceeded() > j.GetSpec().GetCompletions() {
			c.rec.Eventf(j, events.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
		}
		c.rec.Eventf(j, events.EventTypeNormal, "Completed", "Job completed")
		c.metrics.finished.WithLabelValues(mode, "succeeded", "").Inc()
		return
	}
	c.rec.Eventf(j, events.EventTypeWarning, cond.GetReason(), "%s", cond.GetMessage())
	c.metrics.finished.WithLabelValues(mode, "failed", cond.GetReason()).Inc()
}

// createPods creates plan's pods in a slow start (1, 2, 4... at once,
// stopping at the first batch with a failure, as Kubernetes' manageJob),
// and returns how many it created.
func (c *Controller) createPods(ctx context.Context, key string, j *batchv1.Job, plan managePlan, a assessment) (int, error) {
	n := plan.create
	c.expectations.ExpectCreations(key, n)
	c.log.Debug("creating pods", zap.String("job", key), zap.Int("count", n), zap.Int32("wantActive", plan.wantActive))
	podFor := func(i int) *corev1.Pod {
		if !isIndexed(j) {
			return newPod(j, unknownIndex, 0, 0)
		}
		ix := plan.createIndexes[i]
		var failures, ignored int
		if d, ok := a.delayed[ix]; ok {
			failures, ignored = nextIndexFailureCounts(j, d)
		}
		return newPod(j, ix, failures, ignored)
	}
	var created atomic.Int64
	var errs []error
	var mu sync.Mutex
	next := 0
	for batch := 1; next < n; batch *= 2 {
		size := min(batch, n-next)
		var wg sync.WaitGroup
		for i := next; i < next+size; i++ {
			wg.Go(func() {
				meta, err := c.podClient.CreateForMeta(ctx, podFor(i))
				if err != nil {
					c.expectations.CreationObserved(key)
					if ctx.Err() == nil && !apierrors.IsAlreadyExists(err) {
						c.rec.Eventf(j, events.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
					}
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				created.Add(1)
				c.rec.Eventf(j, events.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", meta.GetName())
			})
		}
		wg.Wait()
		next += size
		if len(errs) > 0 {
			for range n - next {
				c.expectations.CreationObserved(key) // never attempted
			}
			break
		}
	}
	return int(created.Load()), errors.Join(errs...)
}

// deletePods deletes pods concurrently, removing their tracking
// finalizer first when removeFinalizer (the pods are not to be counted).
// It returns how many were deleted (a pod gone already counts) and how
// many of those were ready.
func (c *Controller) deletePods(ctx context.Context, key string, j *batchv1.Job, pods []*corev1.Pod, removeFinalizer bool) (deletedReady, deleted int32, err error) {
	if len(pods) == 0 {
		return 0, 0, nil
	}
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = informer.Key(p)
	}
	c.expectations.ExpectMoreDeletions(key, keys)
	var nReady, nDeleted atomic.Int32
	var mu sync.Mutex
	var errs []error
	fail := func(i int, err error) {
		c.expectations.DeletionObserved(key, keys[i])
		if apierrors.IsNotFound(err) {
			nDeleted.Add(1)
			return
		}
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			if removeFinalizer && hasTrackingFinalizer(p) {
				if err := c.removeFinalizer(ctx, p); err != nil {
					fail(i, fmt.Errorf("removing completion finalizer: %w", err))
					return
				}
			}
			m := p.GetMetadata()
			_, err := c.podClient.Delete(ctx, &metav1.DeleteRequest{Namespace: m.GetNamespace(), Name: m.GetName(), Preconditions: &metav1.Preconditions{Uid: m.GetUid()}})
			if err != nil {
				fail(i, err)
				if !apierrors.IsNotFound(err) && ctx.Err() == nil {
					c.rec.Eventf(j, events.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
				}
				return
			}
			nDeleted.Add(1)
			if controllerutil.IsPodReady(p) {
				nReady.Add(1)
			}
			c.rec.Eventf(j, events.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", m.GetName())
		})
	}
	wg.Wait()
	return nReady.Load(), nDeleted.Load(), errors.Join(errs...)
}

// removeFinalizers removes the tracking finalizer of pods concurrently and
// returns the uids of those that no longer have it (a pod gone counts).
func (c *Controller) removeFinalizers(ctx context.Context, key string, pods []*corev1.Pod) ([]string, error) {
	if len(pods) == 0 {
		return nil, nil
	}
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = p.GetMetadata().GetUid()
	}
	c.finalizers.expect(key, uids)
	ok := make([]bool, len(pods))
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			err := c.removeFinalizer(ctx, p)
			if err != nil && !apierrors.IsNotFound(err) {
				c.finalizers.observed(key, uids[i])
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			ok[i] = true
		})
	}
	wg.Wait()
	var removed []string
	for i, done := range ok {
		if done {
			removed = append(removed, uids[i])
		}
	}
	return removed, errors.Join(errs...)
}

// removeFinalizer updates p without the tracking finalizer, reading it
// again after a conflict.
func (c *Controller) removeFinalizer(ctx context.Context, p *corev1.Pod) error {
	cur := p
	return client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		if !hasTrackingFinalizer(cur) {
			return nil
		}
		next := proto.Clone(cur).(*corev1.Pod)
		next.Metadata.Finalizers = slices.DeleteFunc(next.Metadata.Finalizers, func(f string) bool { return f == TrackingFinalizer })
		_, err := c.podClient.Update(ctx, next)
		if apierrors.IsConflict(err) {
			fresh, gerr := c.podClient.Get(ctx, p.GetMetadata().GetNamespace(), p.GetMetadata().GetName())
			if gerr != nil {
				return gerr
			}
			if fresh.GetMetadata().GetUid() != p.GetMetadata().GetUid() {
				return nil // another pod of that name: ours is gone
			}
			cur = fresh
		}
		return err
	})
}
