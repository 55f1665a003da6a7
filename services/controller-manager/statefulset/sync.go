package statefulset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/labels"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/history"
)

// Reconcile syncs one StatefulSet, named by its key: claim its pods and
// revisions, find (or make) its current and update revisions, carry out
// decide's steps when the cache can be trusted (expectations), write the
// status, and truncate the revision history.
func (c *Controller) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := controller.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.Terminal(err)
	}
	set, ok := c.sets.Store().GetByName(ns, name)
	if !ok {
		c.expectations.forget(key)
		return controller.Result{}, nil
	}
	sel, err := controllerutil.Selector(set.GetSpec().GetSelector())
	if err != nil {
		c.rec.Eventf(set, events.EventTypeWarning, "InvalidSelector", "Invalid selector: %v", err)
		return controller.Result{}, controller.Terminal(fmt.Errorf("statefulset %s: selector: %w", key, err))
	}
	// Read before the cache (see expectations).
	satisfied := c.expectations.satisfied(key)

	pods, err := c.claimPods(ctx, set, sel)
	if err != nil {
		return controller.Result{}, fmt.Errorf("statefulset %s: %w", key, err)
	}
	revisions, err := c.claimRevisions(ctx, set, sel)
	if err != nil {
		return controller.Result{}, fmt.Errorf("statefulset %s: %w", key, err)
	}
	current, update, collisions, err := c.revisionsOf(ctx, set, revisions)
	if err != nil {
		return controller.Result{}, fmt.Errorf("statefulset %s: revisions: %w", key, err)
	}
	var errs []error
	if satisfied {
		currentSet, err1 := applyRevision(set, current)
		updateSet, err2 := applyRevision(set, update)
		if err := errors.Join(err1, err2); err != nil {
			return controller.Result{}, controller.Terminal(fmt.Errorf("statefulset %s: %w", key, err))
		}
		pl := decide(input{
			set: set, currentSet: currentSet, updateSet: updateSet,
			currentRevision: current.GetMetadata().GetName(), updateRevision: update.GetMetadata().GetName(),
			pods: pods, claims: c.claim(ns), now: c.clock.Now(),
		})
		if pl.waiting != "" {
			if ce := c.log.Check(zap.DebugLevel, "waiting"); ce != nil {
				ce.Write(zap.String("statefulset", key), zap.String("for", pl.waiting))
			}
		}
		if err := c.execute(ctx, key, set, updateSet, pl.actions); err != nil {
			errs = append(errs, err)
		}
	}

	st, availableIn := computeStatus(set, pods, current.GetMetadata().GetName(), update.GetMetadata().GetName(), collisions, c.clock.Now())
	if err := c.updateStatus(ctx, set, st); err != nil {
		errs = append(errs, err)
	}
	live := map[string]bool{current.GetMetadata().GetName(): true, update.GetMetadata().GetName(): true}
	for _, p := range pods {
		live[podRevision(p)] = true
	}
	if err := c.history.Truncate(ctx, revisions, live, set.GetSpec().GetRevisionHistoryLimit()); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return controller.Result{}, fmt.Errorf("statefulset %s: %w", key, err)
	}
	return controller.Result{RequeueAfter: availableIn}, nil
}

// claim returns a lookup of the namespace's claims in the cache.
func (c *Controller) claim(ns string) func(string) *corev1.PersistentVolumeClaim {
	return func(name string) *corev1.PersistentVolumeClaim {
		pvc, _ := c.claims.Store().GetByName(ns, name)
		return pvc
	}
}

// claimPods returns the set's pods: those it controls whose labels match
// its selector and whose names are its own, and the orphans of that kind,
// which it adopts. Pods it controls that no longer match are released.
// Neither adoption nor release happens while the set is being deleted.
func (c *Controller) claimPods(ctx context.Context, set *appsv1.StatefulSet, sel labels.Selector) ([]*corev1.Pod, error) {
	m := set.GetMetadata()
	deleting := m.GetDeletionTimestamp() != nil
	store := c.pods.Store()
	var owned, adopt, release []*corev1.Pod
	store.EachByIndex(informer.IndexOwnerUID, m.GetUid(), func(p *corev1.Pod) {
		ref := controllerutil.ControllerOf(p.GetMetadata())
		if ref == nil || ref.GetUid() != m.GetUid() || p.GetMetadata().GetNamespace() != m.GetNamespace() {
			return
		}
		if sel.Matches(p.GetMetadata().GetLabels()) && isMemberOf(set, p) {
			owned = append(owned, p)
		} else if !deleting {
			release = append(release, p)
		}
	})
	if !deleting {
		for _, p := range store.ByIndex(orphanIndex, m.GetNamespace()) {
			if sel.Matches(p.GetMetadata().GetLabels()) && isMemberOf(set, p) && !isTerminating(p) {
				adopt = append(adopt, p)
			}
		}
	}
	var errs []error
	for _, p := range release {
		next := proto.Clone(p).(*corev1.Pod)
		next.Metadata.OwnerReferences = slices.DeleteFunc(next.Metadata.OwnerReferences, func(r *metav1.OwnerReference) bool { return r.GetUid() == m.GetUid() })
		if _, err := c.podClient.Update(ctx, next); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("release pod %s: %w", p.GetMetadata().GetName(), err))
		}
	}
	if len(adopt) > 0 {
		fresh, err := c.setClient.Get(ctx, m.GetNamespace(), m.GetName())
		if err != nil {
			return nil, fmt.Errorf("recheck before adopting: %w", err)
		}
		if fresh.GetMetadata().GetUid() != m.GetUid() || fresh.GetMetadata().GetDeletionTimestamp() != nil {
			adopt = nil
		}
	}
	ref := controllerutil.NewControllerRef(withKind(set))
	for _, p := range adopt {
		next := proto.Clone(p).(*corev1.Pod)
		next.Metadata.OwnerReferences = append(next.Metadata.OwnerReferences, ref)
		got, err := c.podClient.Update(ctx, next)
		switch {
		case err == nil:
			owned = append(owned, got)
		case !apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("adopt pod %s: %w", p.GetMetadata().GetName(), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		// Counting without the pods not adopted would create pods of their names.
		return nil, err
	}
	return owned, nil
}

// claimRevisions returns the set's revisions (its own and the orphans its
// selector matches, which it adopts), sorted.
func (c *Controller) claimRevisions(ctx context.Context, set *appsv1.StatefulSet, sel labels.Selector) ([]*appsv1.ControllerRevision, error) {
	revisions := c.history.List(set, sel)
	if set.GetMetadata().GetDeletionTimestamp() != nil {
		return revisions, nil
	}
	for i, r := range revisions {
		if controllerutil.ControllerOf(r.GetMetadata()) != nil {
			continue
		}
		adopted, err := c.history.Adopt(ctx, withKind(set), setKind, r)
		if err != nil {
			return nil, err
		}
		revisions[i] = adopted
	}
	history.SortControllerRevisions(revisions)
	return revisions, nil
}

// revisionsOf is Kubernetes' getStatefulSetRevisions: the update revision
// is the revision of the set's template (the last one if equal, an earlier
// equal one renumbered to the next number, i.e. a rollback, or a new one);
// the current revision is status.currentRevision's, or the update revision
// when the set has none yet. It also returns the collision count to
// report.
func (c *Controller) revisionsOf(ctx context.Context, set *appsv1.StatefulSet, revisions []*appsv1.ControllerRevision) (current, update *appsv1.ControllerRevision, collisions int32, err error) {
	collisions = set.GetStatus().GetCollisionCount()
	data, err := history.TemplatePatch(set.GetSpec().GetTemplate())
	if err != nil {
		return nil, nil, collisions, err
	}
	update = history.NewControllerRevision(withKind(set), setKind, set.GetSpec().GetTemplate().GetMetadata().GetLabels(), data, history.NextRevision(revisions), &collisions)
	if update.Metadata.Annotations == nil {
		update.Metadata.Annotations = map[string]string{}
	}
	maps.Copy(update.Metadata.Annotations, set.GetMetadata().GetAnnotations())

	equal := history.FindEqualRevisions(revisions, update)
	switch {
	case len(equal) > 0 && history.EqualRevision(revisions[len(revisions)-1], equal[len(equal)-1]):
		update = revisions[len(revisions)-1]
	case len(equal) > 0:
		update, err = c.history.UpdateRevision(ctx, equal[len(equal)-1], update.GetRevision())
	default:
		update, err = c.history.Create(ctx, withKind(set), update, &collisions)
	}
	if err != nil {
		return nil, nil, collisions, err
	}
	for _, r := range revisions {
		if r.GetMetadata().GetName() == set.GetStatus().GetCurrentRevision() {
			current = r
			break
		}
	}
	if current == nil {
		current = update
	}
	return current, update, collisions, nil
}

// applyRevision returns set with the template the revision holds.
func applyRevision(set *appsv1.StatefulSet, r *appsv1.ControllerRevision) (*appsv1.StatefulSet, error) {
	t, err := history.TemplateFromPatch(r.GetData())
	if err != nil {
		return nil, fmt.Errorf("revision %s: %w", r.GetMetadata().GetName(), err)
	}
	out := proto.Clone(set).(*appsv1.StatefulSet)
	out.Spec.Template = t
	return out, nil
}

// execute carries out the steps in order and stops at the first failure.
func (c *Controller) execute(ctx context.Context, key string, set, updateSet *appsv1.StatefulSet, actions []action) error {
	for _, a := range actions {
		c.log.Debug("step", zap.String("statefulset", key), zap.Stringer("action", a))
		var err error
		switch a.kind {
		case createPod:
			var exists bool
			exists, err = c.createPod(ctx, key, set, updateSet, a.pod)
			if exists {
				// Its deletion (a failed pod going) or its creation (a
				// cache behind) will be seen: the events sync again.
				return nil
			}
		case deletePod:
			err = c.deletePodFor(ctx, key, set, a)
		case fixIdentity:
			_, err = c.podClient.Update(ctx, withIdentity(a.pod))
			if err != nil {
				err = fmt.Errorf("update pod %s: %w", a.pod.GetMetadata().GetName(), err)
			}
		case fixClaims:
			err = c.fixClaims(ctx, updateSet, a.pod)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// createPod creates the pod's claims that do not exist, then the pod, then
// sets the claims' owners. It reports whether a pod of the name exists
// already.
func (c *Controller) createPod(ctx context.Context, key string, set, updateSet *appsv1.StatefulSet, p *corev1.Pod) (bool, error) {
	name := p.GetMetadata().GetName()
	setName := set.GetMetadata().GetName()
	for _, claim := range newClaims(updateSet, ordinalOf(p)) {
		cn := claim.GetMetadata().GetName()
		if _, ok := c.claims.Store().GetByName(claim.GetMetadata().GetNamespace(), cn); ok {
			continue
		}
		_, err := c.claimClient.Create(ctx, claim)
		switch {
		case err == nil:
			c.rec.Eventf(set, events.EventTypeNormal, "SuccessfulCreate", "create Claim %s Pod %s in StatefulSet %s success", cn, name, setName)
		case apierrors.IsAlreadyExists(err):
		default:
			if ctx.Err() == nil {
				c.rec.Eventf(set, events.EventTypeWarning, "FailedCreate", "create Claim %s for Pod %s in StatefulSet %s failed error: %v", cn, name, setName, err)
			}
			return false, fmt.Errorf("create claim %s: %w", cn, err)
		}
	}
	c.expectations.expectCreate(key, name)
	got, err := c.podClient.Create(ctx, p)
	if err != nil {
		c.expectations.created(key, name)
		if apierrors.IsAlreadyExists(err) {
			return true, nil
		}
		if ctx.Err() == nil {
			c.rec.Eventf(set, events.EventTypeWarning, "FailedCreate", "create Pod %s in StatefulSet %s failed error: %v", name, setName, err)
		}
		return false, fmt.Errorf("create pod %s: %w", name, err)
	}
	c.rec.Eventf(set, events.EventTypeNormal, "SuccessfulCreate", "create Pod %s in StatefulSet %s successful", name, setName)
	return false, c.fixClaims(ctx, updateSet, got)
}

// deletePodFor deletes the pod of a step (uid precondition).
func (c *Controller) deletePodFor(ctx context.Context, key string, set *appsv1.StatefulSet, a action) error {
	m := a.pod.GetMetadata()
	setName := set.GetMetadata().GetName()
	if a.reason == reasonFailed {
		c.rec.Eventf(set, events.EventTypeWarning, "RecreatingFailedPod", "StatefulSet %s/%s is recreating failed Pod %s", m.GetNamespace(), setName, m.GetName())
	}
	c.expectations.expectDelete(key, m.GetName())
	_, err := c.podClient.Delete(ctx, &metav1.DeleteRequest{
		Namespace: m.GetNamespace(), Name: m.GetName(),
		Preconditions: &metav1.Preconditions{Uid: m.GetUid()},
	})
	if err != nil {
		c.expectations.deleted(key, m.GetName())
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		if ctx.Err() == nil {
			c.rec.Eventf(set, events.EventTypeWarning, "FailedDelete", "delete Pod %s in StatefulSet %s failed error: %v", m.GetName(), setName, err)
		}
		return fmt.Errorf("delete pod %s: %w", m.GetName(), err)
	}
	c.log.Info("deleted pod", zap.String("statefulset", key), zap.String("pod", m.GetName()), zap.String("reason", a.reason))
	c.rec.Eventf(set, events.EventTypeNormal, "SuccessfulDelete", "delete Pod %s in StatefulSet %s successful", m.GetName(), setName)
	return nil
}

// fixClaims gives the pod's existing claims the owners the retention
// policy wants (Kubernetes' UpdatePodClaimForRetentionPolicy).
func (c *Controller) fixClaims(ctx context.Context, set *appsv1.StatefulSet, p *corev1.Pod) error {
	var errs []error
	for _, want := range newClaims(set, ordinalOf(p)) {
		cur, ok := c.claims.Store().GetByName(want.GetMetadata().GetNamespace(), want.GetMetadata().GetName())
		if !ok || claimOwnersUpToDate(cur, set, p) {
			continue
		}
		if _, err := c.claimClient.Update(ctx, withClaimOwners(cur, set, p)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("update claim %s owners: %w", want.GetMetadata().GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// updateStatus writes st unless the set has it already, reading the set
// again on a conflict.
func (c *Controller) updateStatus(ctx context.Context, set *appsv1.StatefulSet, st *appsv1.StatefulSetStatus) error {
	m := set.GetMetadata()
	cur := set
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		if cur == nil {
			fresh, err := c.setClient.Get(ctx, m.GetNamespace(), m.GetName())
			if err != nil {
				return err
			}
			if fresh.GetMetadata().GetUid() != m.GetUid() {
				return nil
			}
			cur = fresh
		}
		if proto.Equal(cur.GetStatus(), st) {
			return nil
		}
		next := proto.Clone(cur).(*appsv1.StatefulSet)
		next.Status = st
		_, err := c.setClient.UpdateStatus(ctx, next)
		if apierrors.IsConflict(err) {
			cur = nil
		}
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update status: %w", err)
	}
	return nil
}
