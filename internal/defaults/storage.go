package defaults

import (
	corev1 "skiff.dev/proto/core/v1"
	storagev1 "skiff.dev/proto/storage/v1"
)

// PersistentVolume defaults a PersistentVolume as Kubernetes does:
// persistentVolumeReclaimPolicy Retain (a volume an administrator made is
// kept when its claim goes), volumeMode Filesystem, and status.phase
// Pending (the binder makes it Available).
func PersistentVolume(pv *corev1.PersistentVolume) {
	if pv == nil {
		return
	}
	if pv.Spec == nil {
		pv.Spec = &corev1.PersistentVolumeSpec{}
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = "Retain"
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = ptr("Filesystem")
	}
	if pv.Status == nil {
		pv.Status = &corev1.PersistentVolumeStatus{}
	}
	if pv.Status.Phase == "" {
		pv.Status.Phase = "Pending"
	}
}

// PersistentVolumeClaim defaults a claim: volumeMode Filesystem and
// status.phase Pending. storageClassName stays unset: the apiserver's
// DefaultStorageClass admission gives it the default class.
func PersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	if pvc == nil {
		return
	}
	if pvc.Spec == nil {
		pvc.Spec = &corev1.PersistentVolumeClaimSpec{}
	}
	if pvc.Spec.VolumeMode == nil {
		pvc.Spec.VolumeMode = ptr("Filesystem")
	}
	if pvc.Status == nil {
		pvc.Status = &corev1.PersistentVolumeClaimStatus{}
	}
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = "Pending"
	}
}

// StorageClass defaults a StorageClass: reclaimPolicy Delete (the volumes
// it provisions go with their claims) and volumeBindingMode Immediate.
func StorageClass(sc *storagev1.StorageClass) {
	if sc == nil {
		return
	}
	if sc.ReclaimPolicy == nil {
		sc.ReclaimPolicy = ptr("Delete")
	}
	if sc.VolumeBindingMode == nil {
		sc.VolumeBindingMode = ptr("Immediate")
	}
}
