package persistentvolume

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// syncVolume brings the volume named key one step on: Available, Bound,
// Released and reclaimed.
func (c *Controller) syncVolume(ctx context.Context, key string) (controller.Result, error) {
	return retryConflict(c.syncVolumeErr(ctx, key))
}

func (c *Controller) syncVolumeErr(ctx context.Context, key string) error {
	v, ok := c.volumes.Store().Get(key)
	if !ok {
		return nil // its claim's sync marks the claim Lost
	}
	ref := v.GetSpec().GetClaimRef()
	if ref == nil {
		_, err := c.setVolumePhase(ctx, v, VolumeAvailable, "")
		return err
	}
	if ref.GetUid() == "" {
		// Pre-bound by a user to a claim that is not bound yet: the claim's
		// sync binds it.
		_, err := c.setVolumePhase(ctx, v, VolumeAvailable, "")
		c.claimRunner.Enqueue(ref.GetNamespace() + "/" + ref.GetName())
		return err
	}
	pvc, err := c.claimOf(ctx, ref)
	if err != nil {
		return err
	}
	switch {
	case pvc == nil:
		return c.release(ctx, v)
	case pvc.GetSpec().GetVolumeName() == "":
		// Binding in progress (or a provisioned volume waiting for its
		// claim's sync): the claim's sync finishes it.
		c.claimRunner.Enqueue(ref.GetNamespace() + "/" + ref.GetName())
		return nil
	case pvc.GetSpec().GetVolumeName() == v.GetMetadata().GetName():
		_, err := c.setVolumePhase(ctx, v, VolumeBound, "")
		return err
	default:
		// The claim is bound to another volume: undo our binding, or keep
		// a user's pre-binding without its uid.
		next := proto.Clone(v).(*corev1.PersistentVolume)
		if v.GetMetadata().GetAnnotations()[AnnBoundByController] != "" {
			next.Spec.ClaimRef = nil
			delete(next.Metadata.Annotations, AnnBoundByController)
		} else {
			next.Spec.ClaimRef.Uid, next.Spec.ClaimRef.ResourceVersion = "", ""
		}
		if _, err := c.volumeClient.Update(ctx, next); err != nil {
			return fmt.Errorf("unbinding volume %s: %w", key, err)
		}
		return nil
	}
}

// claimOf returns the claim ref names, nil when it is gone (or was
// replaced by another of the same name). A claim missing from the cache is
// looked up in the API before its volume is released.
func (c *Controller) claimOf(ctx context.Context, ref *corev1.ObjectReference) (*corev1.PersistentVolumeClaim, error) {
	pvc, ok := c.claims.Store().GetByName(ref.GetNamespace(), ref.GetName())
	if !ok {
		got, err := c.claimClient.Get(ctx, ref.GetNamespace(), ref.GetName())
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("reading claim %s/%s: %w", ref.GetNamespace(), ref.GetName(), err)
		}
		pvc = got
	}
	if pvc.GetMetadata().GetUid() != ref.GetUid() {
		return nil, nil
	}
	return pvc, nil
}

// release marks a volume whose claim is gone Released and reclaims it by
// its policy.
func (c *Controller) release(ctx context.Context, v *corev1.PersistentVolume) error {
	switch v.GetStatus().GetPhase() {
	case VolumeReleased, VolumeFailed:
	default:
		var err error
		if v, err = c.setVolumePhase(ctx, v, VolumeReleased, ""); err != nil {
			return err
		}
	}
	switch policy := v.GetSpec().GetPersistentVolumeReclaimPolicy(); policy {
	case "Retain", "":
		return nil // kept for the administrator
	case "Delete":
		if v.GetMetadata().GetDeletionTimestamp() != nil {
			return nil
		}
		_, err := c.volumeClient.Delete(ctx, &metav1.DeleteRequest{Name: v.Metadata.Name,
			Preconditions: &metav1.Preconditions{Uid: v.Metadata.Uid}})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			c.log.Debug("deleted released volume")
			return nil
		default:
			c.recorder.Eventf(v, events.EventTypeWarning, "VolumeFailedDelete", "%v", err)
			return fmt.Errorf("deleting released volume %s: %w", v.Metadata.Name, err)
		}
	default: // Recycle: no recycler in Skiff
		if v.GetStatus().GetPhase() != VolumeFailed {
			c.recorder.Event(v, events.EventTypeWarning, "VolumeFailedRecycle", "No recycler plugin found for the volume!")
		}
		_, err := c.setVolumePhase(ctx, v, VolumeFailed, fmt.Sprintf("no volume plugin matched name for the %s reclaim policy", policy))
		return err
	}
}
