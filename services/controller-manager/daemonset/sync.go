package daemonset

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// templateGenerationAnnotation is where Kubernetes' apps/v1 keeps a
// DaemonSet's template generation.
const templateGenerationAnnotation = "deprecated.daemonset.template.generation"

// Event reasons, as Kubernetes'.
const (
	ReasonFailedDaemonPod  = "FailedDaemonPod"
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
	ReasonSelectingAll     = "SelectingAll"
	maxParallelPodWrites   = 64
	slowStartMaxBatch      = 500
	// burstReplicas caps the creations and the deletions of one sync
	// (Kubernetes' BurstReplicas); the rest follow in the next syncs.
	burstReplicas = 250
)

// reconcile is one sync of a DaemonSet: its current revision, the pods to
// create and delete (Manage, then RollingUpdate when Manage has nothing to
// do), the writes, old revisions truncated, then the status.
func (c *Controller) reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, _ := strings.Cut(key, "/")
	if name == "" {
		ns, name = "", ns
	}
	ds, ok := c.dses.Store().GetByName(ns, name)
	if !ok {
		c.expectations.Delete(key)
		return controller.Result{}, nil
	}
	if ds.GetMetadata().GetDeletionTimestamp() != nil {
		return controller.Result{}, nil
	}
	sel, err := controllerutil.Selector(ds.GetSpec().GetSelector())
	if err != nil || sel.Empty() {
		c.recorder.Event(ds, events.EventTypeWarning, ReasonSelectingAll, "This daemon set is selecting all pods. A non-empty selector is required.")
		return controller.Result{}, nil
	}
	cur, old, err := c.constructHistory(ctx, ds, sel)
	if errors.Is(err, errCollision) {
		return controller.Result{Requeue: true}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	hash := cur.GetMetadata().GetLabels()[RevisionLabel]
	pods, err := c.claim(ctx, ds, sel)
	if err != nil {
		return controller.Result{}, err
	}
	s := c.state(ds, hash, pods)

	var syncErr error
	if c.expectations.Satisfied(key) {
		plan := Manage(s)
		if plan.Empty() && ds.GetSpec().GetUpdateStrategy().GetType() == "RollingUpdate" {
			plan, err = RollingUpdate(s)
			if err != nil {
				syncErr = err
			}
		}
		syncErr = errors.Join(syncErr, c.apply(ctx, ds, key, plan, hash))
		if plan.Empty() && syncErr == nil {
			syncErr = c.cleanupHistory(ctx, ds, cur, old, pods)
		}
		for _, n := range plan.BackedOff {
			if in, left := c.failed.inBackoff(backoffKey(ds, n)); in {
				c.queue.EnqueueAfter(key, left)
			}
		}
	}
	if err := c.updateStatus(ctx, ds, s); err != nil {
		syncErr = errors.Join(syncErr, err)
	}
	if syncErr != nil {
		return controller.Result{}, syncErr
	}
	// Look again when a ready pod becomes available.
	var after time.Duration
	if mrs := ds.GetSpec().GetMinReadySeconds(); mrs > 0 {
		for _, p := range pods {
			if d := controllerutil.AvailableIn(p, mrs, s.Now); d > 0 && (after == 0 || d < after) {
				after = d
			}
		}
	}
	return controller.Result{RequeueAfter: after}, nil
}

func backoffKey(ds *appsv1.DaemonSet, node string) string {
	return ds.GetMetadata().GetUid() + "/" + node
}

// state gathers a sync's input from the caches.
func (c *Controller) state(ds *appsv1.DaemonSet, hash string, pods []*corev1.Pod) State {
	nodes := c.nodes.Store().List()
	s := State{DS: ds, Hash: hash, Pods: groupByNode(pods), Now: c.clock.Now(), Nodes: make([]Node, 0, len(nodes))}
	for _, n := range nodes {
		s.Nodes = append(s.Nodes, Node{Name: n.GetMetadata().GetName(), Fit: NodeShouldRunDaemonPod(n, ds)})
	}
	s.InBackoff = func(node string) bool {
		in, _ := c.failed.inBackoff(backoffKey(ds, node))
		return in
	}
	return s
}

func templateGeneration(ds *appsv1.DaemonSet) int64 {
	if v, ok := ds.GetMetadata().GetAnnotations()[templateGenerationAnnotation]; ok {
		if g, err := strconv.ParseInt(v, 10, 64); err == nil {
			return g
		}
	}
	return ds.GetMetadata().GetGeneration()
}

// apply makes the plan's deletions, then its creations, under
// expectations: the deletions in parallel, the creations in slow-start
// batches (1, 2, 4, ...) that stop at the first failure.
func (c *Controller) apply(ctx context.Context, ds *appsv1.DaemonSet, key string, plan Plan, hash string) error {
	var errs []error
	if len(plan.CreateOn) > burstReplicas {
		plan.CreateOn = plan.CreateOn[:burstReplicas]
	}
	if len(plan.Delete) > burstReplicas {
		plan.Delete = plan.Delete[:burstReplicas]
	}
	for _, p := range plan.Failed {
		node := TargetNode(p)
		c.failed.next(backoffKey(ds, node))
		c.recorder.Eventf(ds, events.EventTypeWarning, ReasonFailedDaemonPod, "Found failed daemon pod %s/%s on node %s, will try to kill it", p.GetMetadata().GetNamespace(), p.GetMetadata().GetName(), node)
	}
	// Both expectations are set before any write (Kubernetes'
	// SetExpectations): expecting the creations after the deletions would
	// drop the deletions' expectation.
	keys := make([]string, len(plan.Delete))
	for i, p := range plan.Delete {
		keys[i] = informer.Key(p)
	}
	c.expectations.ExpectCreations(key, len(plan.CreateOn))
	if len(keys) > 0 {
		c.expectations.ExpectMoreDeletions(key, keys)
	}
	if len(plan.Delete) > 0 {
		var mu sync.Mutex
		parallel(len(plan.Delete), maxParallelPodWrites, func(i int) bool {
			p := plan.Delete[i]
			m := p.GetMetadata()
			_, err := c.podClient.Delete(ctx, &metav1.DeleteRequest{Namespace: m.GetNamespace(), Name: m.GetName(), Preconditions: &metav1.Preconditions{Uid: m.GetUid()}})
			switch {
			case err == nil:
				c.recorder.Eventf(ds, events.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %s", m.GetName())
			case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
				c.expectations.DeletionObserved(key, keys[i])
			default:
				c.expectations.DeletionObserved(key, keys[i])
				c.recorder.Eventf(ds, events.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
				mu.Lock()
				errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", m.GetNamespace(), m.GetName(), err))
				mu.Unlock()
			}
			return true
		})
	}
	if n := len(plan.CreateOn); n > 0 {
		gen := templateGeneration(ds)
		created, err := slowStart(n, func(i int) error {
			pod := NewPod(ds, plan.CreateOn[i], hash, gen)
			_, err := c.podClient.Create(ctx, pod)
			if err != nil {
				c.expectations.CreationObserved(key)
				if apierrors.IsAlreadyExists(err) {
					return nil
				}
				c.recorder.Eventf(ds, events.EventTypeWarning, ReasonFailedCreate, "Error creating: %v", err)
				return fmt.Errorf("create pod on node %s: %w", plan.CreateOn[i], err)
			}
			return nil
		})
		for range n - created {
			c.expectations.CreationObserved(key)
		}
		if created > 0 {
			c.recorder.Eventf(ds, events.EventTypeNormal, ReasonSuccessfulCreate, "Created %d pods", created)
		}
		if err != nil {
			errs = append(errs, err)
		}
		c.log.Debug("created daemon pods", zap.String("daemonset", key), zap.Int("pods", created))
	}
	return errors.Join(errs...)
}

// slowStart calls fn(0..n-1) in batches of 1, 2, 4, ... calls at a time
// (Kubernetes' slowStartBatch) and stops after a batch with a failure. It
// returns how many calls were made.
func slowStart(n int, fn func(i int) error) (int, error) {
	done := 0
	for batch := 1; done < n; batch = min(2*batch, slowStartMaxBatch) {
		size := min(batch, n-done)
		var mu sync.Mutex
		var errs []error
		start := done
		parallel(size, size, func(i int) bool {
			if err := fn(start + i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return true
		})
		done += size
		if len(errs) > 0 {
			return done, errors.Join(errs...)
		}
	}
	return done, nil
}

// parallel calls fn(0..n-1) on at most workers goroutines and waits.
func parallel(n, workers int, fn func(i int) bool) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// updateStatus writes the status counters when they changed.
func (c *Controller) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, s State) error {
	want := Counts(s)
	have := ds.GetStatus()
	if have == nil {
		have = &appsv1.DaemonSetStatus{}
	}
	want.CollisionCount = have.CollisionCount
	want.Conditions = have.GetConditions()
	if proto.Equal(want, have) {
		return nil
	}
	next := proto.Clone(ds).(*appsv1.DaemonSet)
	next.Status = want
	_, err := c.dsClient.UpdateStatus(ctx, next)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// A newer DaemonSet is on its way to the cache, which syncs again.
		return nil
	}
	if err != nil {
		return fmt.Errorf("update status of daemonset %s/%s: %w", ds.GetMetadata().GetNamespace(), ds.GetMetadata().GetName(), err)
	}
	return nil
}
