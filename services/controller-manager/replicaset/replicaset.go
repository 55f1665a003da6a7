package replicaset

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/labels"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// Reconcile syncs one ReplicaSet, named by its key: claim its pods (adopt
// matching orphans, release pods that stopped matching), create or delete
// pods to reach spec.replicas when the cache can be trusted (expectations
// satisfied), then write its status.
func (c *Controller) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := controller.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.Terminal(err)
	}
	if c.bursts.busy(key) {
		// Its burst wakes it once at most maxInFlight calls are left
		// to send.
		return controller.Result{}, nil
	}
	rs, ok := c.rss.Store().GetByName(ns, name)
	if !ok {
		c.expectations.Delete(key)
		c.bursts.forget(key)
		return controller.Result{}, nil
	}
	sel, err := c.selectorOf(rs)
	if err != nil {
		c.rec.Eventf(rs, events.EventTypeWarning, "InvalidSelector", "Invalid selector: %v", err)
		return controller.Result{}, controller.Terminal(fmt.Errorf("replicaset %s: selector: %w", key, err))
	}
	// Read the expectations before the cache: a pod observed in between
	// is then counted twice (too few created, caught up at the next sync),
	// never zero times (too many).
	inFlight, deleting := c.expectations.InFlight(key)

	cl := controllerutil.ClaimPods(rs.GetMetadata(), sel, c.candidates(rs, sel))
	owned := cl.Owned
	var errs []error
	if err := c.release(ctx, rs, cl.Release); err != nil {
		errs = append(errs, err)
	}
	adopted, err := c.adopt(ctx, rs, cl.Adopt)
	owned = append(owned, adopted...)
	if err != nil {
		// Counting without the pods not adopted would create pods for them.
		return controller.Result{}, fmt.Errorf("replicaset %s: %w", key, errors.Join(append(errs, err)...))
	}

	var failure *manageError
	if err := c.bursts.takeFailure(key); err != nil {
		// Reported (condition, error and a retry with backoff) before
		// anything more is tried.
		failure = &manageError{reason: "FailedCreate", err: fmt.Errorf("create pods: %w", err)}
	} else if !deleting && rs.GetMetadata().GetDeletionTimestamp() == nil {
		failure = c.manageReplicas(ctx, key, rs, sel, owned, inFlight)
	} else if ce := c.log.Check(zap.DebugLevel, "waiting for the cache"); ce != nil && deleting {
		adds, dels := c.expectations.Pending(key)
		ce.Write(zap.String("replicaset", key), zap.Int("creations", adds), zap.Int("deletions", dels))
	}

	st, availableIn := calculateStatus(rs, owned, failure, c.clock.Now())
	if err := c.updateStatus(ctx, rs, st); err != nil {
		errs = append(errs, err)
	}
	if availableIn > 0 {
		// A ready pod becomes available then, without any event.
		c.queue.EnqueueAfter(key, availableIn)
	}
	if failure != nil {
		errs = append(errs, failure)
	}
	if err := errors.Join(errs...); err != nil {
		return controller.Result{}, fmt.Errorf("replicaset %s: %w", key, err)
	}
	return controller.Result{}, nil
}

// candidates returns the active pods rs could own: those it controls (from
// the owner index) and the orphans of its namespace that match its selector
// (from the orphan index). Pods controlled by someone else are not read.
func (c *Controller) candidates(rs *appsv1.ReplicaSet, sel labels.Selector) []*corev1.Pod {
	m := rs.GetMetadata()
	store := c.pods.Store()
	// Sized for the pods it has or will have: at thousands of pods, the
	// appends' reallocations were a sync's largest garbage.
	out := make([]*corev1.Pod, 0, max(rs.GetSpec().GetReplicas(), rs.GetStatus().GetReplicas()))
	// Unordered: nothing downstream depends on the order of owned pods
	// (the scale-down ranking is a total order), and a ReplicaSet of
	// thousands of pods is counted at every sync.
	store.EachByIndex(informer.IndexOwnerUID, m.GetUid(), func(p *corev1.Pod) {
		ref := controllerutil.ControllerOf(p.GetMetadata())
		if ref != nil && ref.GetUid() == m.GetUid() && p.GetMetadata().GetNamespace() == m.GetNamespace() && controllerutil.IsPodActive(p) {
			out = append(out, p)
		}
	})
	for _, p := range store.ByIndex(orphanIndex, m.GetNamespace()) {
		if controllerutil.IsPodActive(p) && sel.Matches(p.GetMetadata().GetLabels()) {
			out = append(out, p)
		}
	}
	return out
}

// manageReplicas creates or deletes pods, at most BurstReplicas, to bring
// the active pods plus the creations in flight (made, not yet observed) to
// spec.replicas. Deletions wait until every creation has been observed, so
// that the pods to delete are ranked among all of them; creations wait
// until the cache shows every pod the ReplicaSet has (see verified). It
// returns the failure of deletions or of that check, if any; creations
// report theirs at a later sync.
func (c *Controller) manageReplicas(ctx context.Context, key string, rs *appsv1.ReplicaSet, sel labels.Selector, pods []*corev1.Pod, inFlight int) *manageError {
	want := int(rs.GetSpec().GetReplicas())
	diff := len(pods) + inFlight - want
	switch {
	case diff < 0:
		unseen, err := c.unseenPods(ctx, rs, sel, pods)
		if err != nil {
			return &manageError{reason: "FailedCreate", err: fmt.Errorf("listing pods before creating more: %w", err)}
		}
		if unseen > 0 {
			// Their events are on the way: each wakes the ReplicaSet.
			c.log.Info("waiting for pods that exist to reach the cache before creating more",
				zap.String("replicaset", key), zap.Int("unseen", unseen))
			c.queue.EnqueueAfter(key, unseenRecheck)
			return nil
		}
		c.createPods(ctx, key, rs, min(-diff, c.opts.BurstReplicas))
	case diff > 0 && inFlight == 0:
		return c.deletePods(ctx, key, rs, podsToDelete(pods, min(diff, c.opts.BurstReplicas)))
	}
	return nil
}

// unseenRecheck is when a ReplicaSet waiting for pods to reach the cache is
// synced again if no event of theirs woke it before.
const unseenRecheck = time.Second

// unseenPods returns how many active pods the ReplicaSet could own exist in
// the API but not among counted (its pods in the cache, as this sync
// counted them), for a ReplicaSet not verified yet (0 otherwise). Every ReplicaSet starts unverified, as the controller does
// after taking the lead (the previous leader's last creations may reach the
// API after the informer's list), and becomes so again after a creation
// failed without a definite answer (the pod may exist). A consistent List
// of its pods finds them; once the cache has them all, the ReplicaSet is
// verified and its expectations account for the rest.
func (c *Controller) unseenPods(ctx context.Context, rs *appsv1.ReplicaSet, sel labels.Selector, counted []*corev1.Pod) (int, error) {
	m := rs.GetMetadata()
	if _, ok := c.verified.Load(m.GetUid()); ok {
		return 0, nil
	}
	list, err := c.podClient.List(ctx, &metav1.ListOptions{Namespace: m.GetNamespace(), LabelSelector: sel.String()})
	if err != nil {
		return 0, err
	}
	seen := make(map[string]struct{}, len(counted))
	for _, p := range counted {
		seen[p.GetMetadata().GetUid()] = struct{}{}
	}
	unseen := 0
	for _, p := range list.GetItems() {
		pm := p.GetMetadata()
		if ref := controllerutil.ControllerOf(pm); !controllerutil.IsPodActive(p) || ref != nil && ref.GetUid() != m.GetUid() {
			continue
		}
		if _, ok := seen[pm.GetUid()]; !ok {
			unseen++
		}
	}
	if unseen == 0 {
		c.verified.Store(m.GetUid(), struct{}{})
	}
	return unseen, nil
}

// createPods starts a burst of n creations from rs's template (see
// bursts), in a slow start unless the ReplicaSet's last burst succeeded.
func (c *Controller) createPods(ctx context.Context, key string, rs *appsv1.ReplicaSet, n int) {
	c.log.Info("creating pods", zap.String("replicaset", key), zap.Int("count", n),
		zap.Int32("replicas", rs.GetSpec().GetReplicas()))
	// Expect them all before the first create: its pod may be observed
	// before the call returns.
	c.expectations.ExpectCreations(key, n)
	tmpl := newPodTemplate(rs)
	uid := rs.GetMetadata().GetUid()
	// A ReplicaSet whose last creations all succeeded skips the ramp: the
	// slow start is there to stop a flood of calls that would all fail.
	initial := slowStartInitialBatchSize
	if _, ok := c.warm.Load(uid); ok {
		initial = n
	}
	create := func(ctx context.Context) error {
		// Only the name is needed (for the event): the rest of the
		// answer, a whole pod, is not decoded.
		meta, err := c.podClient.CreateForMeta(ctx, tmpl.pod())
		if apierrors.MayHaveHappened(err) {
			c.verified.Delete(uid) // the pod may exist: look before creating more
		}
		if err != nil {
			if ctx.Err() == nil { // not the controller stopping
				c.rec.Eventf(rs, events.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
			}
			return err
		}
		c.rec.Eventf(rs, events.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", meta.GetName())
		return nil
	}
	c.bursts.start(ctx, key, n, initial, create, func(created int, clean bool) {
		// The pods not created (failed, or not attempted after a failure)
		// will never be observed.
		for range n - created {
			c.expectations.CreationObserved(key)
		}
		if !clean {
			c.warm.Delete(uid)
			c.log.Info("creating pods failed", zap.String("replicaset", key), zap.Int("created", created), zap.Int("skipped", n-created))
			return
		}
		// Not for a ReplicaSet deleted meanwhile (its handler forgot it).
		if cur, ok := c.rss.Store().Get(key); ok && cur.GetMetadata().GetUid() == uid {
			c.warm.Store(uid, struct{}{})
		}
	})
}

// deletePods deletes victims, concurrently.
func (c *Controller) deletePods(ctx context.Context, key string, rs *appsv1.ReplicaSet, victims []*corev1.Pod) *manageError {
	c.log.Info("deleting pods", zap.String("replicaset", key), zap.Int("count", len(victims)),
		zap.Int32("replicas", rs.GetSpec().GetReplicas()))
	podKeys := make([]string, len(victims))
	for i, p := range victims {
		podKeys[i] = informer.Key(p)
	}
	c.expectations.ExpectDeletions(key, podKeys)
	_, err := parallel(len(victims), func(i int) error {
		m := victims[i].GetMetadata()
		_, err := c.podClient.Delete(ctx, &metav1.DeleteRequest{
			Namespace:     m.GetNamespace(),
			Name:          m.GetName(),
			Preconditions: &metav1.Preconditions{Uid: m.GetUid()},
		})
		if err != nil {
			// The informer will not observe this deletion.
			c.expectations.DeletionObserved(key, podKeys[i])
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return nil // gone already (or replaced by another pod of the same name)
			}
			if ctx.Err() == nil {
				c.rec.Eventf(rs, events.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
			}
			return err
		}
		c.rec.Eventf(rs, events.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", m.GetName())
		return nil
	})
	if err != nil {
		return &manageError{reason: "FailedDelete", err: fmt.Errorf("delete pods: %w", err)}
	}
	return nil
}
