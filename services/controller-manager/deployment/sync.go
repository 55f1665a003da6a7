package deployment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/deployutil"
	"skiff.dev/internal/events"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// Event reasons.
const (
	EventScalingReplicaSet         = "ScalingReplicaSet"
	EventDeploymentRollback        = "DeploymentRollback"
	EventRollbackRevisionNotFound  = "DeploymentRollbackRevisionNotFound"
	EventRollbackTemplateUnchanged = "DeploymentRollbackTemplateUnchanged"
	EventRollbackInvalid           = "DeploymentRollbackInvalid"
	EventSelectingAll              = "SelectingAll"
	EventInvalidSpec               = "InvalidSpec"
	EventHashCollision             = "HashCollision"
	// EventReplicaSetCreateError is also the Progressing condition's reason.
	EventReplicaSetCreateError = ReasonReplicaSetCreateError
)

// errStale says the Deployment changed under a sync: the change's event
// syncs it again.
var errStale = errors.New("deployment changed during sync")

// reconcile syncs the Deployment named by key: the runner's Reconciler.
func (c *Controller) reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := controller.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.Terminal(err)
	}
	cached, ok := c.deployments.Store().GetByName(ns, name)
	if !ok {
		return controller.Result{}, nil // deleted: the garbage collector takes its ReplicaSets
	}
	s := &syncer{
		c:   c,
		d:   proto.Clone(cached).(*appsv1.Deployment),
		now: c.clock.Now(),
		log: c.log.With(zap.String("deployment", key)),
	}
	if s.d.ApiVersion == "" || s.d.Kind == "" {
		s.d.ApiVersion, s.d.Kind = "apps/v1", "Deployment"
	}
	err = s.run(ctx)
	switch {
	case errors.Is(err, errStale) || apierrors.IsConflict(err):
		// Our cache was behind a write; look again once it caught up.
		s.log.Debug("sync saw a newer version, retrying", zap.Error(err))
		return controller.Result{Requeue: true}, nil
	case err != nil:
		return controller.Result{}, err
	}
	return controller.Result{RequeueAfter: s.checkAfter}, nil
}

// syncer is one sync of one Deployment.
type syncer struct {
	c   *Controller
	d   *appsv1.Deployment // the working copy: what the last write returned
	b   bounds
	now time.Time
	log *zap.Logger

	// rses are the Deployment's ReplicaSets, replaced by what each write returns.
	rses []*appsv1.ReplicaSet
	// split: newUID (the new ReplicaSet, "" if none) is known and the
	// revisions are in sync.
	split  bool
	newUID string
	// checkAfter is when to sync again to check the progress deadline.
	checkAfter time.Duration
}

// run is Kubernetes' syncDeployment.
func (s *syncer) run(ctx context.Context) error {
	d := s.d
	b, err := boundsOf(d)
	if err != nil {
		s.c.recorder.Eventf(d, events.EventTypeWarning, EventInvalidSpec, "Invalid rolling update bounds: %v", err)
		return controller.Terminal(err)
	}
	s.b = b
	sel, err := controllerutil.Selector(d.GetSpec().GetSelector())
	if err != nil {
		s.c.recorder.Eventf(d, events.EventTypeWarning, EventInvalidSpec, "Invalid selector: %v", err)
		return controller.Terminal(err)
	}
	if sel.Empty() || sel.IsNothing() {
		s.c.recorder.Event(d, events.EventTypeWarning, EventSelectingAll, "This deployment is selecting all pods. A non-empty selector is required.")
		return s.writeStatus(ctx, func(d *appsv1.Deployment) *appsv1.DeploymentStatus {
			st := cloneStatus(d)
			st.ObservedGeneration = max(st.ObservedGeneration, d.GetMetadata().GetGeneration())
			return st
		})
	}
	if s.rses, err = s.claim(ctx, sel); err != nil {
		return err
	}
	if d.GetMetadata().GetDeletionTimestamp() != nil {
		return s.syncStatus(ctx)
	}
	if err := s.writeStatus(ctx, func(d *appsv1.Deployment) *appsv1.DeploymentStatus {
		st := cloneStatus(d)
		pausedCondition(d, st, s.now)
		return st
	}); err != nil {
		return err
	}
	if s.d.GetSpec().GetPaused() {
		return s.scale(ctx)
	}
	if rev, ok, err := rollbackTo(s.d); ok {
		return s.rollback(ctx, rev, err)
	}
	if scaling, err := s.isScalingEvent(ctx); err != nil {
		return err
	} else if scaling {
		return s.scale(ctx)
	}
	if s.d.GetSpec().GetStrategy().GetType() == Recreate {
		return s.rolloutRecreate(ctx)
	}
	return s.rolloutRolling(ctx)
}

// ---------------------------------------------------------------- strategies

// rolloutRolling is one step of a rolling update.
func (s *syncer) rolloutRolling(ctx context.Context) error {
	newRS, old, err := s.newAndOld(ctx, true)
	if err != nil {
		return err
	}
	if steps := planRolling(s.b, stateOf(newRS), states(old)); len(steps) > 0 {
		if err := s.apply(ctx, steps); err != nil {
			return err
		}
		return s.syncRolloutStatus(ctx)
	}
	if complete(s.d, s.d.GetStatus()) {
		if err := s.cleanup(ctx); err != nil {
			return err
		}
	}
	return s.syncRolloutStatus(ctx)
}

// rolloutRecreate is one step of a Recreate rollout: the new ReplicaSet is
// only created once every old pod is gone.
func (s *syncer) rolloutRecreate(ctx context.Context) error {
	newRS, old, err := s.newAndOld(ctx, false)
	if err != nil {
		return err
	}
	var newState *rsState
	if newRS != nil {
		st := stateOf(newRS)
		newState = &st
	}
	phase, steps := planRecreate(s.b, newState, states(old), s.oldPodsRunning(old))
	if phase == recreateScaleUp && newRS == nil {
		if newRS, _, err = s.newAndOld(ctx, true); err != nil {
			return err
		}
		_, steps = planRecreate(s.b, ptr(stateOf(newRS)), states(old), false)
	}
	if err := s.apply(ctx, steps); err != nil {
		return err
	}
	if phase == recreateScaleUp && complete(s.d, s.d.GetStatus()) {
		if err := s.cleanup(ctx); err != nil {
			return err
		}
	}
	return s.syncRolloutStatus(ctx)
}

// oldPodsRunning reports whether a pod of an old ReplicaSet may still run:
// one counted in an old ReplicaSet's status, or one in the pods cache that
// has not finished (being deleted still counts).
func (s *syncer) oldPodsRunning(old []*appsv1.ReplicaSet) bool {
	for _, rs := range old {
		if rs.GetStatus().GetReplicas() > 0 {
			return true
		}
		uid := rs.GetMetadata().GetUid()
		for _, p := range s.c.pods.Store().ByOwner(uid) {
			if controllerutil.ControllerOf(p.GetMetadata()).GetUid() != uid {
				continue
			}
			switch p.GetStatus().GetPhase() {
			case "Succeeded", "Failed":
			default:
				return true
			}
		}
	}
	return false
}

// isScalingEvent reports whether spec.replicas changed since the active
// ReplicaSets were last scaled (their desired-replicas annotation).
func (s *syncer) isScalingEvent(ctx context.Context) (bool, error) {
	newRS, old, err := s.newAndOld(ctx, false)
	if err != nil {
		return false, err
	}
	for _, rs := range append(old, newRS) {
		if rs == nil || rsReplicas(rs) == 0 {
			continue
		}
		if want := intAnnotation(rs.GetMetadata().GetAnnotations(), DesiredReplicasAnnotation); want >= 0 && want != s.b.Replicas {
			return true, nil
		}
	}
	return false, nil
}

// scale applies a change of spec.replicas (and is all a paused Deployment
// does): no new ReplicaSet is created.
func (s *syncer) scale(ctx context.Context) error {
	newRS, old, err := s.newAndOld(ctx, false)
	if err != nil {
		return err
	}
	var newState *rsState
	if newRS != nil {
		newState = ptr(stateOf(newRS))
	}
	rolling := s.d.GetSpec().GetStrategy().GetType() != Recreate
	if err := s.apply(ctx, planScale(s.b, rolling, newState, states(old), s.d.GetStatus().GetReplicas())); err != nil {
		return err
	}
	if s.d.GetSpec().GetPaused() {
		if _, pending, _ := rollbackTo(s.d); !pending {
			if err := s.cleanup(ctx); err != nil {
				return err
			}
		}
	}
	return s.syncStatus(ctx)
}

// ---------------------------------------------------------------- rollback

// rollback performs a legacy (apps/v1beta1) rollback asked for by the
// rollback annotation: it copies the revision's template into the spec and
// removes the annotation; the next sync rolls that template out.
func (s *syncer) rollback(ctx context.Context, rev int64, parseErr error) error {
	if parseErr != nil {
		s.c.recorder.Eventf(s.d, events.EventTypeWarning, EventRollbackInvalid, "Ignoring rollback: %v", parseErr)
		return s.clearRollback(ctx, nil)
	}
	newRS, old, err := s.newAndOld(ctx, true)
	if err != nil {
		return err
	}
	all := append(old, newRS)
	if rev == 0 {
		if rev = deployutil.LastRevision(all); rev == 0 {
			s.c.recorder.Event(s.d, events.EventTypeWarning, EventRollbackRevisionNotFound, "Unable to find last revision.")
			return s.clearRollback(ctx, nil)
		}
	}
	for _, rs := range all {
		if v, err := deployutil.Revision(rs); err != nil || v != rev {
			continue
		}
		if EqualIgnoreHash(s.d.GetSpec().GetTemplate(), rs.GetSpec().GetTemplate()) {
			s.c.recorder.Eventf(s.d, events.EventTypeWarning, EventRollbackTemplateUnchanged,
				"The rollback revision contains the same template as current deployment %q", s.d.GetMetadata().GetName())
			return s.clearRollback(ctx, nil)
		}
		if err := s.clearRollback(ctx, rs); err != nil {
			return err
		}
		s.log.Info("rolled back", zap.Int64("revision", rev), zap.String("replicaset", rs.GetMetadata().GetName()))
		s.c.recorder.Eventf(s.d, events.EventTypeNormal, EventDeploymentRollback, "Rolled back deployment %q to revision %d", s.d.GetMetadata().GetName(), rev)
		return nil
	}
	s.c.recorder.Event(s.d, events.EventTypeWarning, EventRollbackRevisionNotFound, "Unable to find the revision to rollback to.")
	return s.clearRollback(ctx, nil)
}

// clearRollback removes the rollback annotation and, when to is not nil,
// puts to's template (and annotations) into the Deployment.
func (s *syncer) clearRollback(ctx context.Context, to *appsv1.ReplicaSet) error {
	return s.updateDeployment(ctx, func(d *appsv1.Deployment) bool {
		if to != nil {
			d.Metadata.Annotations = annotationsFromRS(d, to)
			d.Spec.Template = deployutil.WithoutHash(to.GetSpec().GetTemplate())
		}
		delete(d.Metadata.Annotations, RollbackToAnnotation)
		return true
	})
}

// ---------------------------------------------------------------- new and old ReplicaSets

// newAndOld returns the new ReplicaSet (the one running the Deployment's
// template; nil if none and !create) and the old ones, bringing revisions
// up to date on the first call (Kubernetes' getAllReplicaSetsAndSyncRevision).
func (s *syncer) newAndOld(ctx context.Context, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	if !s.split {
		newRS, old := findNewRS(s.d, s.rses)
		if newRS != nil {
			if err := s.syncNewRS(ctx, newRS, old); err != nil {
				return nil, nil, err
			}
			s.newUID = newRS.GetMetadata().GetUid()
		}
		s.split = true
	}
	if s.newUID == "" && create {
		_, old := s.current()
		rs, err := s.createNewRS(ctx, old)
		if err != nil {
			return nil, nil, err
		}
		s.newUID = rs.GetMetadata().GetUid()
	}
	newRS, old := s.current()
	return newRS, old, nil
}

// current splits s.rses by newUID.
func (s *syncer) current() (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	var newRS *appsv1.ReplicaSet
	var old []*appsv1.ReplicaSet
	for _, rs := range s.rses {
		if s.newUID != "" && rs.GetMetadata().GetUid() == s.newUID {
			newRS = rs
		} else {
			old = append(old, rs)
		}
	}
	return newRS, old
}

// findNewRS returns the oldest ReplicaSet running d's template, and the others.
func findNewRS(d *appsv1.Deployment, rses []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	sorted := slices.Clone(rses)
	slices.SortStableFunc(sorted, func(a, b *appsv1.ReplicaSet) int { return byAge(stateOf(a), stateOf(b)) })
	var newRS *appsv1.ReplicaSet
	var old []*appsv1.ReplicaSet
	for _, rs := range sorted {
		if newRS == nil && EqualIgnoreHash(rs.GetSpec().GetTemplate(), d.GetSpec().GetTemplate()) {
			newRS = rs
			continue
		}
		old = append(old, rs)
	}
	return newRS, old
}

// syncNewRS brings an existing new ReplicaSet's annotations (revision
// above every old one's) and minReadySeconds up to date, then the
// Deployment's revision annotation to match.
func (s *syncer) syncNewRS(ctx context.Context, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) error {
	ann := cloneMap(newRS.GetMetadata().GetAnnotations())
	changed := setNewRSAnnotations(ann, s.d, maxRevision(old)+1, s.b, false)
	if changed || newRS.GetSpec().GetMinReadySeconds() != s.d.GetSpec().GetMinReadySeconds() {
		next := proto.Clone(newRS).(*appsv1.ReplicaSet)
		next.Metadata.Annotations = ann
		next.Spec.MinReadySeconds = s.d.GetSpec().GetMinReadySeconds()
		updated, err := s.c.rsClient.Update(ctx, next)
		if err != nil {
			return fmt.Errorf("updating replicaset %q: %w", newRS.GetMetadata().GetName(), err)
		}
		s.replace(updated)
		newRS = updated
	}
	if err := s.setRevision(ctx, newRS.GetMetadata().GetAnnotations()[RevisionAnnotation]); err != nil {
		return err
	}
	if hasProgressDeadline(s.d) && getCondition(s.d.GetStatus(), ConditionProgressing) == nil {
		msg := fmt.Sprintf("Found new replica set %q", newRS.GetMetadata().GetName())
		return s.writeStatus(ctx, func(d *appsv1.Deployment) *appsv1.DeploymentStatus {
			st := cloneStatus(d)
			if getCondition(st, ConditionProgressing) == nil {
				setCondition(st, newCondition(ConditionProgressing, "True", ReasonFoundNewReplicaSet, msg, s.now))
			}
			return st
		})
	}
	return nil
}

// createNewRS creates the ReplicaSet for the Deployment's template, named
// after its hash, or finds it made already. A ReplicaSet of that name that
// is not the Deployment's for this template is a hash collision: the
// Deployment's collisionCount goes up, which changes the hash, and the sync
// is retried.
func (s *syncer) createNewRS(ctx context.Context, old []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	d := s.d
	rs := newReplicaSet(d, s.b, maxRevision(old)+1)
	replicas := newRSReplicas(s.b, stateOf(rs), append(states(old), stateOf(rs)))
	rs.Spec.Replicas = &replicas
	name := rs.GetMetadata().GetName()

	created, err := s.c.rsClient.Create(ctx, rs)
	existed := false
	switch {
	case apierrors.IsAlreadyExists(err):
		existing, getErr := s.c.rsClient.Get(ctx, d.GetMetadata().GetNamespace(), name)
		if getErr != nil {
			return nil, getErr
		}
		if controllerutil.ControllerOf(existing.GetMetadata()).GetUid() == d.GetMetadata().GetUid() &&
			EqualIgnoreHash(existing.GetSpec().GetTemplate(), d.GetSpec().GetTemplate()) {
			created, existed = existing, true // ours: our cache was behind
			break
		}
		s.log.Info("hash collision, bumping collisionCount", zap.String("replicaset", name))
		s.c.recorder.Eventf(d, events.EventTypeWarning, EventHashCollision, "Replica set %q exists and is not this deployment's: bumping collisionCount", name)
		used := d.GetStatus().GetCollisionCount()
		if err := s.writeStatus(ctx, func(d *appsv1.Deployment) *appsv1.DeploymentStatus {
			st := cloneStatus(d)
			if st.GetCollisionCount() == used { // else bumped already, by a sync our cache has not seen
				st.CollisionCount = ptr(used + 1)
			}
			return st
		}); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("replicaset %q: hash collision: %w", name, errStale)
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", name, err)
		s.c.recorder.Event(d, events.EventTypeWarning, EventReplicaSetCreateError, msg)
		if hasProgressDeadline(d) {
			_ = s.writeStatus(ctx, func(d *appsv1.Deployment) *appsv1.DeploymentStatus {
				st := cloneStatus(d)
				setCondition(st, newCondition(ConditionProgressing, "False", ReasonReplicaSetCreateError, msg, s.now))
				return st
			})
		}
		return nil, err
	}
	s.rses = append(s.rses, created)
	if !existed {
		s.log.Info("created replicaset", zap.String("replicaset", name), zap.Int32("replicas", replicas))
		if replicas > 0 {
			s.c.recorder.Eventf(d, events.EventTypeNormal, EventScalingReplicaSet, "Scaled up replica set %s to %d", name, replicas)
		}
	}
	if err := s.setRevision(ctx, created.GetMetadata().GetAnnotations()[RevisionAnnotation]); err != nil {
		return nil, err
	}
	if !existed && hasProgressDeadline(s.d) {
		msg := fmt.Sprintf("Created new replica set %q", name)
		if err := s.writeStatus(ctx, func(d *appsv1.Deployment) *appsv1.DeploymentStatus {
			st := cloneStatus(d)
			setCondition(st, newCondition(ConditionProgressing, "True", ReasonNewReplicaSetCreated, msg, s.now))
			return st
		}); err != nil {
			return nil, err
		}
	}
	return created, nil
}

// newReplicaSet is the ReplicaSet (size 0) for d's template at revision:
// named and labelled after the template's hash, controlled by d.
func newReplicaSet(d *appsv1.Deployment, b bounds, revision int64) *appsv1.ReplicaSet {
	m := d.GetMetadata()
	hash := PodTemplateHash(d.GetSpec().GetTemplate(), d.GetStatus().CollisionCount)
	tmpl := &corev1.PodTemplateSpec{}
	if t := d.GetSpec().GetTemplate(); t != nil {
		tmpl = proto.Clone(t).(*corev1.PodTemplateSpec)
	}
	if tmpl.Metadata == nil {
		tmpl.Metadata = &metav1.ObjectMeta{}
	}
	tmpl.Metadata.Labels = withLabel(tmpl.Metadata.Labels, PodTemplateHashLabel, hash)
	sel := &metav1.LabelSelector{}
	if s := d.GetSpec().GetSelector(); s != nil {
		sel = proto.Clone(s).(*metav1.LabelSelector)
	}
	sel.MatchLabels = withLabel(sel.MatchLabels, PodTemplateHashLabel, hash)
	ann := map[string]string{}
	setNewRSAnnotations(ann, d, revision, b, true)
	return &appsv1.ReplicaSet{
		ApiVersion: "apps/v1",
		Kind:       "ReplicaSet",
		Metadata: &metav1.ObjectMeta{
			Name:            m.GetName() + "-" + hash,
			Namespace:       m.GetNamespace(),
			OwnerReferences: []*metav1.OwnerReference{controllerutil.NewControllerRef(d)},
			Labels:          cloneMap(tmpl.Metadata.Labels),
			Annotations:     ann,
		},
		Spec: &appsv1.ReplicaSetSpec{
			Replicas:        ptr(int32(0)),
			MinReadySeconds: d.GetSpec().GetMinReadySeconds(),
			Selector:        sel,
			Template:        tmpl,
		},
	}
}

// ---------------------------------------------------------------- effects

// apply scales ReplicaSets as steps say.
func (s *syncer) apply(ctx context.Context, steps []step) error {
	for _, st := range steps {
		i := slices.IndexFunc(s.rses, func(rs *appsv1.ReplicaSet) bool { return rs.GetMetadata().GetName() == st.Name })
		if i < 0 {
			return fmt.Errorf("replicaset %q: not among the deployment's", st.Name)
		}
		if err := s.scaleRS(ctx, s.rses[i], st.To); err != nil {
			return err
		}
	}
	return nil
}

// scaleRS sets rs's size and replicas annotations, recording an event when
// the size changed.
func (s *syncer) scaleRS(ctx context.Context, rs *appsv1.ReplicaSet, to int32) error {
	from := rsReplicas(rs)
	ann := cloneMap(rs.GetMetadata().GetAnnotations())
	annChanged := setReplicasAnnotations(ann, s.b)
	if from == to && !annChanged {
		return nil
	}
	next := proto.Clone(rs).(*appsv1.ReplicaSet)
	next.Metadata.Annotations = ann
	next.Spec.Replicas = &to
	updated, err := s.c.rsClient.Update(ctx, next)
	if err != nil {
		return fmt.Errorf("scaling replicaset %q to %d: %w", rs.GetMetadata().GetName(), to, err)
	}
	s.replace(updated)
	if from != to {
		dir := "up"
		if to < from {
			dir = "down"
		}
		s.log.Info("scaled replicaset", zap.String("replicaset", rs.GetMetadata().GetName()), zap.Int32("from", from), zap.Int32("to", to))
		s.c.recorder.Eventf(s.d, events.EventTypeNormal, EventScalingReplicaSet, "Scaled %s replica set %s to %d", dir, rs.GetMetadata().GetName(), to)
	}
	return nil
}

// replace puts an updated ReplicaSet in s.rses.
func (s *syncer) replace(rs *appsv1.ReplicaSet) {
	for i, cur := range s.rses {
		if cur.GetMetadata().GetUid() == rs.GetMetadata().GetUid() {
			s.rses[i] = rs
			return
		}
	}
}

// cleanup deletes the old ReplicaSets beyond revisionHistoryLimit.
func (s *syncer) cleanup(ctx context.Context) error {
	limit := s.d.GetSpec().RevisionHistoryLimit
	if limit == nil {
		return nil
	}
	_, old := s.current()
	for _, rs := range historyToDelete(old, *limit) {
		m := rs.GetMetadata()
		_, err := s.c.rsClient.Delete(ctx, &metav1.DeleteRequest{
			Namespace: m.GetNamespace(), Name: m.GetName(),
			Preconditions: &metav1.Preconditions{Uid: m.GetUid()},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting old replicaset %q: %w", m.GetName(), err)
		}
		s.log.Info("deleted old replicaset", zap.String("replicaset", m.GetName()))
	}
	return nil
}

// setRevision sets the Deployment's revision annotation.
func (s *syncer) setRevision(ctx context.Context, rev string) error {
	if rev == "" || s.d.GetMetadata().GetAnnotations()[RevisionAnnotation] == rev {
		return nil
	}
	return s.updateDeployment(ctx, func(d *appsv1.Deployment) bool {
		if d.Metadata.Annotations[RevisionAnnotation] == rev {
			return false
		}
		if d.Metadata.Annotations == nil {
			d.Metadata.Annotations = map[string]string{}
		}
		d.Metadata.Annotations[RevisionAnnotation] = rev
		return true
	})
}

// syncStatus writes the status of a Deployment not rolling out (paused,
// scaling, being deleted): counts and Available, no progress estimate.
func (s *syncer) syncStatus(ctx context.Context) error {
	newRS, old, err := s.newAndOld(ctx, false)
	if err != nil {
		return err
	}
	all := append(old, newRS)
	return s.writeStatus(ctx, func(d *appsv1.Deployment) *appsv1.DeploymentStatus {
		return calculateStatus(d, all, newRS, s.b, s.now)
	})
}

// syncRolloutStatus writes the status of a rollout, with the Progressing
// estimate, and notes when to check the deadline.
func (s *syncer) syncRolloutStatus(ctx context.Context) error {
	newRS, old := s.current()
	all := append(old, newRS)
	return s.writeStatus(ctx, func(d *appsv1.Deployment) *appsv1.DeploymentStatus {
		st, after := rolloutStatus(d, all, newRS, s.b, s.now)
		s.checkAfter = after
		return st
	})
}

// writeStatus writes the status compute returns for the Deployment, if it
// differs. On a conflict it reads the Deployment afresh and computes again,
// unless the spec changed meanwhile (errStale: the new spec's sync follows).
func (s *syncer) writeStatus(ctx context.Context, compute func(*appsv1.Deployment) *appsv1.DeploymentStatus) error {
	return s.retry(ctx, func(cur *appsv1.Deployment) (*appsv1.Deployment, error) {
		st := compute(cur)
		if proto.Equal(st, cur.GetStatus()) {
			return cur, nil
		}
		next := proto.Clone(cur).(*appsv1.Deployment)
		next.Status = st
		return s.c.dClient.UpdateStatus(ctx, next)
	})
}

// updateDeployment writes the Deployment changed by mutate (which reports
// whether it changed anything), retrying on conflict as writeStatus does.
func (s *syncer) updateDeployment(ctx context.Context, mutate func(*appsv1.Deployment) bool) error {
	return s.retry(ctx, func(cur *appsv1.Deployment) (*appsv1.Deployment, error) {
		next := proto.Clone(cur).(*appsv1.Deployment)
		if next.Metadata == nil {
			next.Metadata = &metav1.ObjectMeta{}
		}
		if !mutate(next) {
			return cur, nil
		}
		return s.c.dClient.Update(ctx, next)
	})
}

// retry runs write on the working copy and keeps its result; on a
// conflict it gets the Deployment afresh and, if its spec is the one this
// sync works on, runs write again.
func (s *syncer) retry(ctx context.Context, write func(cur *appsv1.Deployment) (*appsv1.Deployment, error)) error {
	cur := s.d
	var attempt int
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		if attempt++; attempt > 1 {
			m := s.d.GetMetadata()
			fresh, err := s.c.dClient.Get(ctx, m.GetNamespace(), m.GetName())
			if err != nil {
				return err
			}
			if fresh.GetMetadata().GetUid() != m.GetUid() || fresh.GetMetadata().GetGeneration() != m.GetGeneration() {
				return errStale
			}
			cur = fresh
		}
		updated, err := write(cur)
		if err != nil {
			return err
		}
		s.d = updated
		return nil
	})
	return err
}

// ---------------------------------------------------------------- helpers

// stateOf is what the rollout arithmetic needs of rs.
func stateOf(rs *appsv1.ReplicaSet) rsState {
	m := rs.GetMetadata()
	st := rs.GetStatus()
	return rsState{
		Name:        m.GetName(),
		Created:     m.GetCreationTimestamp().AsTime(),
		Replicas:    rsReplicas(rs),
		Current:     st.GetReplicas(),
		Ready:       st.GetReadyReplicas(),
		Available:   st.GetAvailableReplicas(),
		Desired:     intAnnotation(m.GetAnnotations(), DesiredReplicasAnnotation),
		MaxReplicas: intAnnotation(m.GetAnnotations(), MaxReplicasAnnotation),
	}
}

func states(rses []*appsv1.ReplicaSet) []rsState {
	out := make([]rsState, 0, len(rses))
	for _, rs := range rses {
		out = append(out, stateOf(rs))
	}
	return out
}

// rsReplicas is spec.replicas, 1 when unset (the apiserver defaults it).
func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if r := rs.GetSpec().Replicas; r != nil {
		return *r
	}
	return 1
}

func cloneStatus(d *appsv1.Deployment) *appsv1.DeploymentStatus {
	if d.GetStatus() == nil {
		return &appsv1.DeploymentStatus{}
	}
	return proto.Clone(d.Status).(*appsv1.DeploymentStatus)
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ptr[T any](v T) *T { return &v }
