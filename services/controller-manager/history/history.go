package history

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/labels"
	"skiff.dev/internal/object"
	appsv1 "skiff.dev/proto/apps/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// Client is the typed client of ControllerRevisions.
type Client = *client.Resource[*appsv1.ControllerRevision, *appsv1.ControllerRevisionList]

// History reads an owner's revisions from an informer and writes them
// through the API (Kubernetes' realHistory).
type History struct {
	client    Client
	revisions *informer.Informer[*appsv1.ControllerRevision]
}

// New returns a History over the revisions informer and client.
func New(c Client, revisions *informer.Informer[*appsv1.ControllerRevision]) *History {
	return &History{client: c, revisions: revisions}
}

// List returns the revisions in parent's namespace that selector matches
// and that parent controls or that nobody controls (to adopt), sorted by
// SortControllerRevisions.
func (h *History) List(parent object.Object, selector labels.Selector) []*appsv1.ControllerRevision {
	pm := parent.GetMetadata()
	var out []*appsv1.ControllerRevision
	for _, r := range h.revisions.Store().ByNamespace(pm.GetNamespace()) {
		if !selector.Matches(r.GetMetadata().GetLabels()) {
			continue
		}
		ref := controllerutil.ControllerOf(r.GetMetadata())
		if ref == nil || ref.GetUid() == pm.GetUid() {
			out = append(out, r)
		}
	}
	SortControllerRevisions(out)
	return out
}

// Create creates revision for parent. When the name its hash gives is
// taken by a revision with other data (a hash collision), it increments
// *collisionCount and tries again with the new name, as Kubernetes does;
// the caller persists the count in the owner's status. When the name is
// taken by an equal revision, that revision is returned.
func (h *History) Create(ctx context.Context, parent object.Object, revision *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	if collisionCount == nil {
		return nil, fmt.Errorf("history: collisionCount must not be nil")
	}
	pm := parent.GetMetadata()
	for {
		clone := proto.Clone(revision).(*appsv1.ControllerRevision)
		if clone.Metadata == nil {
			clone.Metadata = &metav1.ObjectMeta{}
		}
		hash := HashControllerRevision(revision, collisionCount)
		clone.Metadata.Name = ControllerRevisionName(pm.GetName(), hash)
		clone.Metadata.Namespace = pm.GetNamespace()
		if clone.Metadata.Labels == nil {
			clone.Metadata.Labels = map[string]string{}
		}
		clone.Metadata.Labels[ControllerRevisionHashLabel] = hash
		created, err := h.client.Create(ctx, clone)
		if err == nil {
			return created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create controllerrevision %s/%s: %w", pm.GetNamespace(), clone.Metadata.Name, err)
		}
		exists, ok := h.revisions.Store().GetByName(pm.GetNamespace(), clone.Metadata.Name)
		if !ok {
			exists, err = h.client.Get(ctx, pm.GetNamespace(), clone.Metadata.Name)
			if err != nil {
				return nil, fmt.Errorf("get controllerrevision %s/%s: %w", pm.GetNamespace(), clone.Metadata.Name, err)
			}
		}
		if EqualRevision(exists, clone) {
			return exists, nil
		}
		*collisionCount++
	}
}

// UpdateRevision sets revision's number to n, retrying conflicts on a fresh
// copy.
func (h *History) UpdateRevision(ctx context.Context, revision *appsv1.ControllerRevision, n int64) (*appsv1.ControllerRevision, error) {
	if revision.GetRevision() == n {
		return revision, nil
	}
	cur := proto.Clone(revision).(*appsv1.ControllerRevision)
	var out *appsv1.ControllerRevision
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		cur.Revision = n
		updated, err := h.client.Update(ctx, cur)
		if err == nil {
			out = updated
			return nil
		}
		if apierrors.IsConflict(err) {
			fresh, gerr := h.client.Get(ctx, cur.GetMetadata().GetNamespace(), cur.GetMetadata().GetName())
			if gerr != nil {
				return gerr
			}
			cur = fresh
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update controllerrevision %s/%s: %w", revision.GetMetadata().GetNamespace(), revision.GetMetadata().GetName(), err)
	}
	return out, nil
}

// Adopt makes parent the controller of an orphan revision.
func (h *History) Adopt(ctx context.Context, parent object.Object, parentKind Kind, revision *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	if controllerutil.ControllerOf(revision.GetMetadata()) != nil {
		return nil, fmt.Errorf("controllerrevision %s/%s already has a controller", revision.GetMetadata().GetNamespace(), revision.GetMetadata().GetName())
	}
	pm := parent.GetMetadata()
	cur := proto.Clone(revision).(*appsv1.ControllerRevision)
	cur.Metadata.OwnerReferences = append(cur.Metadata.OwnerReferences, &metav1.OwnerReference{
		ApiVersion: parentKind.APIVersion, Kind: parentKind.Kind, Name: pm.GetName(), Uid: pm.GetUid(),
		Controller: proto.Bool(true), BlockOwnerDeletion: proto.Bool(true),
	})
	out, err := h.client.Update(ctx, cur)
	if err != nil {
		return nil, fmt.Errorf("adopt controllerrevision %s/%s: %w", cur.Metadata.GetNamespace(), cur.Metadata.GetName(), err)
	}
	return out, nil
}

// Delete deletes revision (gone already is success).
func (h *History) Delete(ctx context.Context, revision *appsv1.ControllerRevision) error {
	m := revision.GetMetadata()
	_, err := h.client.Delete(ctx, &metav1.DeleteRequest{
		Namespace: m.GetNamespace(), Name: m.GetName(),
		Preconditions: &metav1.Preconditions{Uid: m.GetUid()},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete controllerrevision %s/%s: %w", m.GetNamespace(), m.GetName(), err)
	}
	return nil
}

// Truncate deletes the revisions ToTruncate chooses.
func (h *History) Truncate(ctx context.Context, revisions []*appsv1.ControllerRevision, live map[string]bool, limit int32) error {
	for _, r := range ToTruncate(revisions, live, limit) {
		if err := h.Delete(ctx, r); err != nil {
			return err
		}
	}
	return nil
}
