package persistentvolume

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
)

// syncClaim brings the claim named key one step on: bound, handed to a
// provisioner, waiting, or lost.
func (c *Controller) syncClaim(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := controller.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.Terminal(err)
	}
	pvc, ok := c.claims.Store().GetByName(ns, name)
	if !ok {
		return controller.Result{}, nil // its volume's sync releases the volume
	}
	if pvc.GetMetadata().GetAnnotations()[AnnBindCompleted] == "" {
		err = c.syncUnboundClaim(ctx, pvc)
	} else {
		err = c.syncBoundClaim(ctx, pvc)
	}
	return retryConflict(err)
}

// retryConflict turns a conflict (the cache was behind a write, often our
// own) into a quiet retry: the next sync sees the newer object.
func retryConflict(err error) (controller.Result, error) {
	if apierrors.IsConflict(err) {
		return controller.Result{Requeue: true}, nil
	}
	return controller.Result{}, err
}

func (c *Controller) syncUnboundClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if want := pvc.GetSpec().GetVolumeName(); want != "" {
		return c.syncPreboundClaim(ctx, pvc, want)
	}
	className := ClaimClass(pvc)
	class, classFound := c.classes.Store().GetByName("", className)
	delayBinding := classFound && class.GetVolumeBindingMode() == BindingWaitForFirstConsumer
	// A placed claim of a WaitForFirstConsumer class may take a static
	// volume reachable from the scheduler's node before anything is
	// provisioned for it.
	var node *corev1.Node
	if n := pvc.GetMetadata().GetAnnotations()[AnnSelectedNode]; delayBinding && n != "" {
		node, _ = c.nodes.Store().Get(n) // not cached yet: only pre-bound volumes
	}
	if v := FindMatchingVolume(pvc, c.volumes.Store().List(), delayBinding, node); v != nil {
		return c.bind(ctx, v, pvc)
	}
	switch {
	case className == "":
		c.recorder.Event(pvc, events.EventTypeNormal, "FailedBinding", "no persistent volumes available for this claim and no storage class is set")
	case !classFound:
		c.recorder.Eventf(pvc, events.EventTypeWarning, "ProvisioningFailed", "storageclass.storage.k8s.io %q not found", className)
	case delayBinding && pvc.GetMetadata().GetAnnotations()[AnnSelectedNode] == "":
		c.recorder.Event(pvc, events.EventTypeNormal, "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
	default:
		if err := c.handOff(ctx, pvc, class.GetProvisioner()); err != nil {
			return err
		}
	}
	return c.setClaimPhase(ctx, pvc, ClaimPending, nil)
}

// handOff marks the claim for its class's provisioner, as Kubernetes does
// for external provisioners, and says so.
func (c *Controller) handOff(ctx context.Context, pvc *corev1.PersistentVolumeClaim, provisioner string) error {
	a := pvc.GetMetadata().GetAnnotations()
	if a[AnnStorageProvisioner] != provisioner || a[AnnBetaStorageProvisioner] != provisioner {
		next := proto.Clone(pvc).(*corev1.PersistentVolumeClaim)
		if next.Metadata.Annotations == nil {
			next.Metadata.Annotations = map[string]string{}
		}
		next.Metadata.Annotations[AnnStorageProvisioner] = provisioner
		next.Metadata.Annotations[AnnBetaStorageProvisioner] = provisioner
		if _, err := c.claimClient.Update(ctx, next); err != nil {
			return fmt.Errorf("annotating claim %s/%s for provisioner %s: %w", pvc.Metadata.Namespace, pvc.Metadata.Name, provisioner, err)
		}
	}
	c.recorder.Eventf(pvc, events.EventTypeNormal, "ExternalProvisioning",
		"Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.", provisioner)
	return nil
}

// syncPreboundClaim binds a claim whose spec.volumeName a user set.
func (c *Controller) syncPreboundClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim, volumeName string) error {
	v, ok := c.volumes.Store().Get(volumeName)
	switch {
	case !ok:
		c.recorder.Eventf(pvc, events.EventTypeNormal, "FailedBinding", "volume %q not found", volumeName)
		return c.setClaimPhase(ctx, pvc, ClaimPending, nil)
	case v.GetSpec().GetClaimRef() == nil:
		if why := CheckVolumeSatisfyClaim(v, pvc); why != "" {
			c.recorder.Eventf(pvc, events.EventTypeWarning, "VolumeMismatch", "Cannot bind to requested volume %q: %s", volumeName, why)
			return c.setClaimPhase(ctx, pvc, ClaimPending, nil)
		}
		return c.bind(ctx, v, pvc)
	case IsVolumeBoundToClaim(v, pvc):
		return c.bind(ctx, v, pvc)
	default:
		c.recorder.Eventf(pvc, events.EventTypeWarning, "FailedBinding", "volume %q already bound to a different claim.", volumeName)
		return c.setClaimPhase(ctx, pvc, ClaimPending, nil)
	}
}

func (c *Controller) syncBoundClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	name := pvc.GetSpec().GetVolumeName()
	if name == "" {
		c.recorder.Event(pvc, events.EventTypeWarning, "ClaimLost", "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
		return c.setClaimPhase(ctx, pvc, ClaimLost, nil)
	}
	v, ok := c.volumes.Store().Get(name)
	if !ok {
		// The cache may lag a volume made a moment ago: ask the API.
		got, err := c.volumeClient.Get(ctx, "", name)
		switch {
		case apierrors.IsNotFound(err):
			if pvc.GetStatus().GetPhase() != ClaimLost {
				c.recorder.Event(pvc, events.EventTypeWarning, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
			}
			return c.setClaimPhase(ctx, pvc, ClaimLost, nil)
		case err != nil:
			return fmt.Errorf("reading volume %s of claim %s: %w", name, informer.Key(pvc), err)
		}
		v = got
	}
	ref := v.GetSpec().GetClaimRef()
	if ref == nil || IsVolumeBoundToClaim(v, pvc) {
		return c.bind(ctx, v, pvc) // finish or repair the volume's side
	}
	c.recorder.Event(pvc, events.EventTypeWarning, "ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly")
	return c.setClaimPhase(ctx, pvc, ClaimLost, nil)
}

// bind binds v and pvc, each write only when something changes: the
// volume's claimRef, its phase, the claim's volumeName and annotations,
// and its status.
func (c *Controller) bind(ctx context.Context, v *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) error {
	var err error
	if v, err = c.bindVolumeToClaim(ctx, v, pvc); err != nil {
		return err
	}
	if v, err = c.setVolumePhase(ctx, v, VolumeBound, ""); err != nil {
		return err
	}
	if pvc, err = c.bindClaimToVolume(ctx, pvc, v); err != nil {
		return err
	}
	return c.setClaimPhase(ctx, pvc, ClaimBound, v)
}

func (c *Controller) bindVolumeToClaim(ctx context.Context, v *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolume, error) {
	m := pvc.GetMetadata()
	want := &corev1.ObjectReference{Kind: "PersistentVolumeClaim", ApiVersion: "v1", Namespace: m.GetNamespace(), Name: m.GetName(), Uid: m.GetUid()}
	ref := v.GetSpec().GetClaimRef()
	if ref != nil && ref.GetUid() == m.GetUid() && ref.GetKind() != "" {
		return v, nil
	}
	next := proto.Clone(v).(*corev1.PersistentVolume)
	want.ResourceVersion = m.GetResourceVersion()
	next.Spec.ClaimRef = want
	if !IsVolumeBoundToClaim(v, pvc) {
		// Bound by us, not pre-bound by a user.
		if next.Metadata.Annotations == nil {
			next.Metadata.Annotations = map[string]string{}
		}
		next.Metadata.Annotations[AnnBoundByController] = "yes"
	}
	out, err := c.volumeClient.Update(ctx, next)
	if err != nil {
		return nil, fmt.Errorf("binding volume %s to claim %s: %w", v.Metadata.Name, informer.Key(pvc), err)
	}
	return out, nil
}

func (c *Controller) bindClaimToVolume(ctx context.Context, pvc *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	a := pvc.GetMetadata().GetAnnotations()
	if pvc.GetSpec().GetVolumeName() == v.GetMetadata().GetName() && a[AnnBindCompleted] == "yes" {
		return pvc, nil
	}
	next := proto.Clone(pvc).(*corev1.PersistentVolumeClaim)
	if next.Metadata.Annotations == nil {
		next.Metadata.Annotations = map[string]string{}
	}
	if next.Spec.VolumeName != v.Metadata.Name {
		next.Spec.VolumeName = v.Metadata.Name
		next.Metadata.Annotations[AnnBoundByController] = "yes"
	}
	next.Metadata.Annotations[AnnBindCompleted] = "yes"
	out, err := c.claimClient.Update(ctx, next)
	if err != nil {
		return nil, fmt.Errorf("binding claim %s to volume %s: %w", informer.Key(pvc), v.Metadata.Name, err)
	}
	c.log.Debug("bound")
	return out, nil
}

// setClaimPhase writes the claim's phase and, for Bound, the volume's
// capacity and access modes; nothing when they are already so.
func (c *Controller) setClaimPhase(ctx context.Context, pvc *corev1.PersistentVolumeClaim, phase string, v *corev1.PersistentVolume) error {
	st := pvc.GetStatus()
	var modes []string
	var capacity map[string]string
	if v != nil {
		modes, capacity = v.GetSpec().GetAccessModes(), v.GetSpec().GetCapacity()
	} else if phase == ClaimLost {
		modes, capacity = st.GetAccessModes(), st.GetCapacity()
	}
	if st.GetPhase() == phase && slices.Equal(st.GetAccessModes(), modes) && maps.Equal(st.GetCapacity(), capacity) {
		return nil
	}
	next := proto.Clone(pvc).(*corev1.PersistentVolumeClaim)
	if next.Status == nil {
		next.Status = &corev1.PersistentVolumeClaimStatus{}
	}
	next.Status.Phase = phase
	next.Status.AccessModes = slices.Clone(modes)
	next.Status.Capacity = maps.Clone(capacity)
	if _, err := c.claimClient.UpdateStatus(ctx, next); err != nil {
		return fmt.Errorf("claim %s phase %s: %w", informer.Key(pvc), phase, err)
	}
	return nil
}

// setVolumePhase writes the volume's phase (and message), with the time of
// the change as Kubernetes' lastPhaseTransitionTime.
func (c *Controller) setVolumePhase(ctx context.Context, v *corev1.PersistentVolume, phase, message string) (*corev1.PersistentVolume, error) {
	if v.GetStatus().GetPhase() == phase && v.GetStatus().GetMessage() == message {
		return v, nil
	}
	next := proto.Clone(v).(*corev1.PersistentVolume)
	if next.Status == nil {
		next.Status = &corev1.PersistentVolumeStatus{}
	}
	if next.Status.Phase != phase {
		next.Status.LastPhaseTransitionTime = timestamppb.New(c.clock.Now())
	}
	next.Status.Phase, next.Status.Message = phase, message
	out, err := c.volumeClient.UpdateStatus(ctx, next)
	if err != nil {
		return nil, fmt.Errorf("volume %s phase %s: %w", v.Metadata.Name, phase, err)
	}
	return out, nil
}
