package deployutil

import (
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
)

const (
	// RevisionAnnotation numbers a Deployment's pod templates: each
	// ReplicaSet carries the revision of its template, the Deployment the
	// revision of its current one.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// PodTemplateHashLabel is the label that ties a ReplicaSet, its
	// selector and its pods to one pod template of a Deployment.
	PodTemplateHashLabel = "pod-template-hash"
)

// ErrRevisionNotFound is returned by RollbackTemplate when no ReplicaSet of
// the Deployment has the revision asked for.
var ErrRevisionNotFound = errors.New("revision not found")

// Revision is a ReplicaSet's revision annotation (0 when absent).
func Revision(rs *appsv1.ReplicaSet) (int64, error) {
	v, ok := rs.GetMetadata().GetAnnotations()[RevisionAnnotation]
	if !ok || v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("replicaset %q: annotation %s=%q: %w", rs.GetMetadata().GetName(), RevisionAnnotation, v, err)
	}
	return n, nil
}

// LastRevision is the revision before the highest among rses: the one
// "roll back to the previous revision" means (0 if there is none).
// ReplicaSets whose revision annotation is malformed are skipped.
func LastRevision(rses []*appsv1.ReplicaSet) int64 {
	var top, second int64
	for _, rs := range rses {
		v, err := Revision(rs)
		if err != nil {
			continue
		}
		switch {
		case v >= top:
			second, top = top, v
		case v > second:
			second = v
		}
	}
	return second
}

// RollbackTemplate returns the pod template of revision toRevision of d
// (0: the revision before the current one), taken from the ReplicaSet
// carrying it among rses and without its pod-template-hash label: what to
// put in d's spec.template to roll back, as `kubectl rollout undo` does.
// Only ReplicaSets controlled by d count (all of rses when d has no uid).
// The error wraps ErrRevisionNotFound when no ReplicaSet has the revision.
func RollbackTemplate(d *appsv1.Deployment, rses []*appsv1.ReplicaSet, toRevision int64) (*corev1.PodTemplateSpec, error) {
	if toRevision < 0 {
		return nil, fmt.Errorf("revision %d: must not be negative", toRevision)
	}
	uid := d.GetMetadata().GetUid()
	var owned []*appsv1.ReplicaSet
	for _, rs := range rses {
		if uid == "" || controllerUID(rs) == uid {
			owned = append(owned, rs)
		}
	}
	if toRevision == 0 {
		if toRevision = LastRevision(owned); toRevision == 0 {
			return nil, fmt.Errorf("deployment %q: no previous revision: %w", d.GetMetadata().GetName(), ErrRevisionNotFound)
		}
	}
	for _, rs := range owned {
		if v, err := Revision(rs); err == nil && v == toRevision {
			return WithoutHash(rs.GetSpec().GetTemplate()), nil
		}
	}
	return nil, fmt.Errorf("deployment %q: revision %d: %w", d.GetMetadata().GetName(), toRevision, ErrRevisionNotFound)
}

// controllerUID is the uid of rs's controller ownerReference ("" if none).
func controllerUID(rs *appsv1.ReplicaSet) string {
	for _, r := range rs.GetMetadata().GetOwnerReferences() {
		if r.GetController() {
			return r.GetUid()
		}
	}
	return ""
}

// WithoutHash returns a copy of t without the pod-template-hash label.
func WithoutHash(t *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	c := proto.Clone(t).(*corev1.PodTemplateSpec)
	if c == nil {
		c = &corev1.PodTemplateSpec{}
	}
	if c.GetMetadata().GetLabels() != nil {
		delete(c.Metadata.Labels, PodTemplateHashLabel)
	}
	return c
}
