package persistentvolume

import (
	"cmp"
	"slices"

	"skiff.dev/internal/labels"
	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
)

// Annotations Kubernetes' volume controllers and scheduler write.
const (
	// AnnBindCompleted on a claim: the binder finished binding it.
	AnnBindCompleted = "pv.kubernetes.io/bind-completed"
	// AnnBoundByController on a claim or volume: the binder, not a user,
	// set its spec.volumeName / spec.claimRef.
	AnnBoundByController = "pv.kubernetes.io/bound-by-controller"
	// AnnSelectedNode on a claim: the node the scheduler chose for the
	// first pod using it (WaitForFirstConsumer classes).
	AnnSelectedNode = "volume.kubernetes.io/selected-node"
	// AnnStorageProvisioner (and the beta one) on a claim: the
	// provisioner expected to make its volume.
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	// AnnDynamicallyProvisioned on a volume: the provisioner that made it.
	AnnDynamicallyProvisioned = "pv.kubernetes.io/provisioned-by"
	// AnnBetaStorageClass is the claim's class before
	// spec.storageClassName existed.
	AnnBetaStorageClass = "volume.beta.kubernetes.io/storage-class"
)

// Volume and claim phases.
const (
	VolumePending   = "Pending"
	VolumeAvailable = "Available"
	VolumeBound     = "Bound"
	VolumeReleased  = "Released"
	VolumeFailed    = "Failed"

	ClaimPending = "Pending"
	ClaimBound   = "Bound"
	ClaimLost    = "Lost"
)

// BindingMode values of a StorageClass.
const (
	BindingImmediate            = "Immediate"
	BindingWaitForFirstConsumer = "WaitForFirstConsumer"
)

// ClaimClass is the class a claim asks for: spec.storageClassName, else the
// beta annotation, else "" (no class).
func ClaimClass(c *corev1.PersistentVolumeClaim) string {
	if n := c.GetSpec().StorageClassName; n != nil {
		return *n
	}
	return c.GetMetadata().GetAnnotations()[AnnBetaStorageClass]
}

// IsVolumeBoundToClaim says whether v's claimRef names c (by namespace and
// name, and by uid when the reference has one).
func IsVolumeBoundToClaim(v *corev1.PersistentVolume, c *corev1.PersistentVolumeClaim) bool {
	ref := v.GetSpec().GetClaimRef()
	m := c.GetMetadata()
	if ref == nil || ref.GetName() != m.GetName() || ref.GetNamespace() != m.GetNamespace() {
		return false
	}
	return ref.GetUid() == "" || ref.GetUid() == m.GetUid()
}

func volumeMode(m *string) string {
	if m == nil || *m == "" {
		return "Filesystem"
	}
	return *m
}

// storageOf parses a storage quantity; a missing or malformed one is zero
// (validation refuses both).
func storageOf(m map[string]string) quantity.Quantity {
	q, err := quantity.Parse(m["storage"])
	if err != nil {
		return quantity.Quantity{}
	}
	return q
}

// FindMatchingVolume returns the volume c should be bound to, or nil:
//   - a volume pre-bound to c (claimRef naming it) that is large enough and
//     of c's volume mode, at once;
//   - else, unless delayBinding without a node (a WaitForFirstConsumer
//     class whose claim the scheduler has not placed yet), the smallest
//     Available volume with no claimRef, not being deleted, of c's class and
//     volume mode, whose labels match c's selector, whose access modes
//     include all of c's and, when node is given, whose node affinity the
//     node satisfies, with at least the requested storage (ties: the first
//     by name).
func FindMatchingVolume(c *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, delayBinding bool, node *corev1.Node) *corev1.PersistentVolume {
	requested := storageOf(c.GetSpec().GetResources().GetRequests())
	class := ClaimClass(c)
	var selector *labels.Selector
	if sel := c.GetSpec().GetSelector(); sel != nil {
		s, err := labels.FromProto(sel)
		if err != nil {
			return nil // validation refuses it; never match on a selector we cannot read
		}
		selector = &s
	}
	var best *corev1.PersistentVolume
	var bestSize quantity.Quantity
	sorted := slices.Clone(volumes)
	slices.SortFunc(sorted, func(a, b *corev1.PersistentVolume) int {
		return cmp.Compare(a.GetMetadata().GetName(), b.GetMetadata().GetName())
	})
	for _, v := range sorted {
		size := storageOf(v.GetSpec().GetCapacity())
		if size.Cmp(requested) < 0 {
			continue
		}
		if volumeMode(v.GetSpec().VolumeMode) != volumeMode(c.GetSpec().VolumeMode) {
			continue
		}
		if v.GetMetadata().GetDeletionTimestamp() != nil {
			continue
		}
		if IsVolumeBoundToClaim(v, c) {
			// Whoever pre-bound it (a user, a provisioner) chose it.
			return v
		}
		if delayBinding && node == nil {
			continue
		}
		if node != nil && !VolumeReachableFrom(v, node) {
			continue
		}
		if v.GetStatus().GetPhase() != VolumeAvailable || v.GetSpec().GetClaimRef() != nil {
			continue
		}
		if selector != nil && !selector.Matches(v.GetMetadata().GetLabels()) {
			continue
		}
		if v.GetSpec().GetStorageClassName() != class {
			continue
		}
		if !ContainsAccessModes(v.GetSpec().GetAccessModes(), c.GetSpec().GetAccessModes()) {
			continue
		}
		if best == nil || size.Cmp(bestSize) < 0 {
			best, bestSize = v, size
		}
	}
	return best
}

// ContainsAccessModes says whether have includes every mode of want.
func ContainsAccessModes(have, want []string) bool {
	for _, m := range want {
		if !slices.Contains(have, m) {
			return false
		}
	}
	return true
}

// CheckVolumeSatisfyClaim says why v cannot serve c (pre-bound by the
// claim's spec.volumeName), or "" when it can: storage, class, access and
// volume modes, as Kubernetes checks.
func CheckVolumeSatisfyClaim(v *corev1.PersistentVolume, c *corev1.PersistentVolumeClaim) string {
	requested := storageOf(c.GetSpec().GetResources().GetRequests())
	if storageOf(v.GetSpec().GetCapacity()).Cmp(requested) < 0 {
		return "requested PV is too small"
	}
	if v.GetSpec().GetStorageClassName() != ClaimClass(c) {
		return "storageClassName does not match"
	}
	if volumeMode(v.GetSpec().VolumeMode) != volumeMode(c.GetSpec().VolumeMode) {
		return "incompatible volumeMode"
	}
	if !ContainsAccessModes(v.GetSpec().GetAccessModes(), c.GetSpec().GetAccessModes()) {
		return "incompatible accessMode"
	}
	return ""
}
