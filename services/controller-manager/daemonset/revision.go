package daemonset

import (
	"bytes"
	"context"
	"fmt"
	"maps"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/labels"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/deployment"
	"skiff.dev/services/controller-manager/history"
)

var dsKind = history.Kind{APIVersion: "apps/v1", Kind: "DaemonSet"}

// errCollision asks for a requeue after the collision count was raised.
var errCollision = fmt.Errorf("controllerrevision name collision")

// constructHistory is Kubernetes' step of that name: the revision of ds's
// current template (found among its revisions by equal data, renumbered
// to the newest if it is an old one come back, else created) and its other
// revisions. Orphan revisions the selector matches are adopted.
func (c *Controller) constructHistory(ctx context.Context, ds *appsv1.DaemonSet, sel labels.Selector) (cur *appsv1.ControllerRevision, old []*appsv1.ControllerRevision, err error) {
	revs := c.history.List(ds, sel)
	for i, r := range revs {
		if controllerutil.ControllerOf(r.GetMetadata()) == nil {
			if revs[i], err = c.history.Adopt(ctx, ds, dsKind, r); err != nil {
				return nil, nil, err
			}
		}
	}
	patch, err := history.TemplatePatch(ds.GetSpec().GetTemplate())
	if err != nil {
		return nil, nil, err
	}
	var matches []*appsv1.ControllerRevision
	for _, r := range revs {
		if bytes.Equal(r.GetData(), patch) {
			matches = append(matches, r)
		} else {
			old = append(old, r)
		}
	}
	// The current template's number is one past the newest other one.
	next := history.NextRevision(old)
	if len(matches) > 0 {
		// Duplicates (two writers, or a lost response): keep the newest.
		cur = matches[len(matches)-1]
		for _, d := range matches[:len(matches)-1] {
			if err := c.history.Delete(ctx, d); err != nil {
				return nil, nil, err
			}
		}
		if cur.GetRevision() < next {
			if cur, err = c.history.UpdateRevision(ctx, cur, next); err != nil {
				return nil, nil, err
			}
		}
		return cur, old, nil
	}
	cur, err = c.snapshot(ctx, ds, patch, next)
	return cur, old, err
}

// snapshot creates the revision <ds>-<template hash> of ds's template. A
// revision of that name with other data is a hash collision: the
// DaemonSet's status.collisionCount is raised (the next sync hashes anew)
// and errCollision returned.
func (c *Controller) snapshot(ctx context.Context, ds *appsv1.DaemonSet, patch []byte, revision int64) (*appsv1.ControllerRevision, error) {
	dm := ds.GetMetadata()
	var collisions *int32
	if st := ds.GetStatus(); st != nil {
		collisions = st.CollisionCount
	}
	hash := deployment.PodTemplateHash(ds.GetSpec().GetTemplate(), collisions)
	lbls := maps.Clone(ds.GetSpec().GetTemplate().GetMetadata().GetLabels())
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[RevisionLabel] = hash
	cr := &appsv1.ControllerRevision{
		ApiVersion: "apps/v1", Kind: "ControllerRevision",
		Metadata: &metav1.ObjectMeta{
			Name: dm.GetName() + "-" + hash, Namespace: dm.GetNamespace(),
			Labels: lbls, Annotations: maps.Clone(dm.GetAnnotations()),
			OwnerReferences: []*metav1.OwnerReference{{
				ApiVersion: dsKind.APIVersion, Kind: dsKind.Kind, Name: dm.GetName(), Uid: dm.GetUid(),
				Controller: proto.Bool(true), BlockOwnerDeletion: proto.Bool(true),
			}},
		},
		Data:     patch,
		Revision: revision,
	}
	created, err := c.crClient.Create(ctx, cr)
	if err == nil {
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create controllerrevision %s/%s: %w", dm.GetNamespace(), cr.Metadata.Name, err)
	}
	exists, err := c.crClient.Get(ctx, dm.GetNamespace(), cr.Metadata.Name)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(exists.GetData(), patch) && controllerutil.ControllerOf(exists.GetMetadata()).GetUid() == dm.GetUid() {
		return exists, nil
	}
	err = client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		fresh, err := c.dsClient.Get(ctx, dm.GetNamespace(), dm.GetName())
		if err != nil {
			return err
		}
		if fresh.Status == nil {
			fresh.Status = &appsv1.DaemonSetStatus{}
		}
		n := fresh.Status.GetCollisionCount() + 1
		fresh.Status.CollisionCount = &n
		_, err = c.dsClient.UpdateStatus(ctx, fresh)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("raise collisionCount of daemonset %s/%s: %w", dm.GetNamespace(), dm.GetName(), err)
	}
	return nil, errCollision
}

// cleanupHistory deletes the oldest revisions beyond revisionHistoryLimit,
// never the current one nor one a pod still runs.
func (c *Controller) cleanupHistory(ctx context.Context, ds *appsv1.DaemonSet, cur *appsv1.ControllerRevision, old []*appsv1.ControllerRevision, pods []*corev1.Pod) error {
	limit := int32(10)
	if l := ds.GetSpec().RevisionHistoryLimit; l != nil {
		limit = *l
	}
	if len(old) <= int(limit) {
		return nil
	}
	running := map[string]bool{}
	for _, p := range pods {
		running[p.GetMetadata().GetLabels()[RevisionLabel]] = true
	}
	live := map[string]bool{cur.GetMetadata().GetName(): true}
	for _, r := range old {
		if running[r.GetMetadata().GetLabels()[RevisionLabel]] {
			live[r.GetMetadata().GetName()] = true
		}
	}
	return c.history.Truncate(ctx, old, live, limit)
}
