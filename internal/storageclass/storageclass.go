// Package storageclass reads what Kubernetes' storage helpers read of
// StorageClasses and claims: which class is the default, and which class
// a claim asks for.
package storageclass

import (
	corev1 "skiff.dev/proto/core/v1"
	storagev1 "skiff.dev/proto/storage/v1"
)

const (
	// IsDefaultAnnotation "true" marks the cluster's default class.
	IsDefaultAnnotation = "storageclass.kubernetes.io/is-default-class"
	// BetaIsDefaultAnnotation is its older name, still honoured.
	BetaIsDefaultAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
	// BetaClaimAnnotation is a claim's class before spec.storageClassName
	// existed.
	BetaClaimAnnotation = "volume.beta.kubernetes.io/storage-class"
)

// IsDefault says whether sc is marked as the default class.
func IsDefault(sc *storagev1.StorageClass) bool {
	a := sc.GetMetadata().GetAnnotations()
	return a[IsDefaultAnnotation] == "true" || a[BetaIsDefaultAnnotation] == "true"
}

// ClaimClass is the class a claim asks for: the beta annotation's if set,
// else spec.storageClassName ("" for none), as Kubernetes'
// GetPersistentVolumeClaimClass.
func ClaimClass(c *corev1.PersistentVolumeClaim) string {
	if v, ok := c.GetMetadata().GetAnnotations()[BetaClaimAnnotation]; ok {
		return v
	}
	return c.GetSpec().GetStorageClassName()
}
