package framework

import (
	corev1 "skiff.dev/proto/core/v1"
	storagev1 "skiff.dev/proto/storage/v1"
)

// VolumeLister reads the objects volume binding decides on: claims by
// namespace and name, persistent volumes and storage classes by name. The
// objects returned are shared and must not be modified.
type VolumeLister interface {
	Claim(namespace, name string) (*corev1.PersistentVolumeClaim, bool)
	Volume(name string) (*corev1.PersistentVolume, bool)
	StorageClass(name string) (*storagev1.StorageClass, bool)
}
