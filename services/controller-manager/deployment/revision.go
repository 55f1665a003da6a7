package deployment

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"skiff.dev/internal/deployutil"
	appsv1 "skiff.dev/proto/apps/v1"
)

// Annotations the controller writes and reads, as Kubernetes names them.
const (
	// RevisionAnnotation numbers a Deployment's pod templates: each
	// ReplicaSet carries the revision of its template, the Deployment the
	// revision of its current one. Reading it is deployutil's.
	RevisionAnnotation = deployutil.RevisionAnnotation
	// RevisionHistoryAnnotation lists the earlier revisions of a ReplicaSet
	// whose template came back (by rollback or by an edit).
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is the Deployment's replicas when the
	// ReplicaSet was last scaled.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is replicas+maxSurge when the ReplicaSet was
	// last scaled, the base of proportional scaling.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
	// RollbackToAnnotation is apps/v1beta1's spec.rollbackTo.revision as
	// stored in apps/v1 ("0": the previous revision); the controller rolls
	// back and removes it.
	RollbackToAnnotation = "deprecated.deployment.rollback.to"
	// lastAppliedAnnotation is kubectl apply's; never copied to ReplicaSets.
	lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
)

// maxRevisionHistoryChars bounds the revision-history annotation.
const maxRevisionHistoryChars = 2000

// skipCopy lists the annotations a Deployment does not pass on to its
// ReplicaSets (and a rollback does not take back from one).
func skipCopy(k string) bool {
	switch k {
	case lastAppliedAnnotation, RevisionAnnotation, RevisionHistoryAnnotation,
		DesiredReplicasAnnotation, MaxReplicasAnnotation, RollbackToAnnotation:
		return true
	}
	return false
}

// maxRevision is the highest revision among rses (0 if none has one).
func maxRevision(rses []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rses {
		if v, err := deployutil.Revision(rs); err == nil && v > m {
			m = v
		}
	}
	return m
}

// rollbackTo parses the rollback annotation: ok is false when absent.
func rollbackTo(d *appsv1.Deployment) (rev int64, ok bool, err error) {
	v, ok := d.GetMetadata().GetAnnotations()[RollbackToAnnotation]
	if !ok {
		return 0, false, nil
	}
	rev, err = strconv.ParseInt(v, 10, 64)
	if err == nil && rev < 0 {
		err = errors.New("must not be negative")
	}
	if err != nil {
		return 0, true, fmt.Errorf("annotation %s=%q: not a revision: %w", RollbackToAnnotation, v, err)
	}
	return rev, true, nil
}

// setNewRSAnnotations brings the annotations of the new ReplicaSet up to
// date (Kubernetes' SetNewReplicaSetAnnotations): the Deployment's own
// annotations copied, the revision raised to newRevision if below (keeping
// the older revision in the history annotation: the template came back),
// and, for a ReplicaSet about to be created, the replicas annotations. It
// reports whether ann changed.
func setNewRSAnnotations(ann map[string]string, d *appsv1.Deployment, newRevision int64, b bounds, creating bool) bool {
	changed := copyDeploymentAnnotations(ann, d)
	oldStr, had := ann[RevisionAnnotation]
	old, err := strconv.ParseInt(oldStr, 10, 64)
	if err != nil {
		if had && oldStr != "" {
			return changed // not ours to fix
		}
		old = 0
	}
	if old < newRevision {
		ann[RevisionAnnotation] = strconv.FormatInt(newRevision, 10)
		changed = true
		if had && oldStr != "" {
			ann[RevisionHistoryAnnotation] = appendHistory(ann[RevisionHistoryAnnotation], oldStr)
		}
	}
	if creating && setReplicasAnnotations(ann, b) {
		changed = true
	}
	return changed
}

// appendHistory appends rev to a comma-separated history, dropping the
// oldest entries to stay within maxRevisionHistoryChars.
func appendHistory(history, rev string) string {
	var revs []string
	if history != "" {
		revs = strings.Split(history, ",")
	}
	revs = append(revs, rev)
	for len(revs) > 1 && len(strings.Join(revs, ",")) > maxRevisionHistoryChars {
		revs = revs[1:]
	}
	return strings.Join(revs, ",")
}

// copyDeploymentAnnotations copies d's annotations, but the controller's
// own, into ann; it reports whether ann changed.
func copyDeploymentAnnotations(ann map[string]string, d *appsv1.Deployment) bool {
	changed := false
	for k, v := range d.GetMetadata().GetAnnotations() {
		if skipCopy(k) {
			continue
		}
		if cur, ok := ann[k]; ok && cur == v {
			continue
		}
		ann[k] = v
		changed = true
	}
	return changed
}

// annotationsFromRS is a Deployment's annotations after a rollback to rs:
// rs's annotations but the controller's own, with d's own kept.
func annotationsFromRS(d *appsv1.Deployment, rs *appsv1.ReplicaSet) map[string]string {
	out := map[string]string{}
	for k, v := range d.GetMetadata().GetAnnotations() {
		if skipCopy(k) {
			out[k] = v
		}
	}
	for k, v := range rs.GetMetadata().GetAnnotations() {
		if !skipCopy(k) {
			out[k] = v
		}
	}
	return out
}

// setReplicasAnnotations records the Deployment's replicas and
// replicas+maxSurge on a ReplicaSet being scaled; it reports whether ann changed.
func setReplicasAnnotations(ann map[string]string, b bounds) bool {
	desired := strconv.Itoa(int(b.Replicas))
	maxR := strconv.Itoa(int(b.Replicas + b.MaxSurge))
	if ann[DesiredReplicasAnnotation] == desired && ann[MaxReplicasAnnotation] == maxR {
		return false
	}
	ann[DesiredReplicasAnnotation] = desired
	ann[MaxReplicasAnnotation] = maxR
	return true
}

// intAnnotation parses an int32 annotation; -1 when absent or malformed.
func intAnnotation(ann map[string]string, k string) int32 {
	v, err := strconv.ParseInt(ann[k], 10, 32)
	if err != nil {
		return -1
	}
	return int32(v)
}

// historyToDelete selects the old ReplicaSets to delete to keep at most
// limit of them (Kubernetes' cleanupDeployment): the lowest revisions
// first (ties: the oldest), skipping those being deleted and those that
// still have replicas, in spec or in status, or whose status is behind.
func historyToDelete(old []*appsv1.ReplicaSet, limit int32) []*appsv1.ReplicaSet {
	var alive []*appsv1.ReplicaSet
	for _, rs := range old {
		if rs.GetMetadata().GetDeletionTimestamp() == nil {
			alive = append(alive, rs)
		}
	}
	diff := len(alive) - int(max(limit, 0))
	if diff <= 0 {
		return nil
	}
	slices.SortStableFunc(alive, func(a, b *appsv1.ReplicaSet) int {
		ra, _ := deployutil.Revision(a)
		rb, _ := deployutil.Revision(b)
		if c := cmp.Compare(ra, rb); c != 0 {
			return c
		}
		return byAge(stateOf(a), stateOf(b))
	})
	var out []*appsv1.ReplicaSet
	for _, rs := range alive[:diff] {
		if rs.GetStatus().GetReplicas() != 0 || rsReplicas(rs) != 0 ||
			rs.GetMetadata().GetGeneration() > rs.GetStatus().GetObservedGeneration() {
			continue
		}
		out = append(out, rs)
	}
	return out
}
