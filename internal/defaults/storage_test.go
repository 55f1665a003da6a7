package defaults_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/defaults"
	corev1 "skiff.dev/proto/core/v1"
	storagev1 "skiff.dev/proto/storage/v1"
)

func TestStorageDefaults(t *testing.T) {
	pv := &corev1.PersistentVolume{}
	defaults.PersistentVolume(pv)
	if pv.Spec.PersistentVolumeReclaimPolicy != "Retain" || pv.Spec.GetVolumeMode() != "Filesystem" || pv.Status.Phase != "Pending" {
		t.Errorf("PersistentVolume defaults: %v", pv)
	}
	pv = &corev1.PersistentVolume{Spec: &corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: "Delete", VolumeMode: ptr("Block")},
		Status: &corev1.PersistentVolumeStatus{Phase: "Bound"}}
	before := proto.Clone(pv)
	defaults.PersistentVolume(pv)
	if !proto.Equal(before, pv) {
		t.Errorf("PersistentVolume: set values changed: %v", pv)
	}

	pvc := &corev1.PersistentVolumeClaim{}
	defaults.PersistentVolumeClaim(pvc)
	if pvc.Spec.GetVolumeMode() != "Filesystem" || pvc.Status.Phase != "Pending" || pvc.Spec.StorageClassName != nil {
		t.Errorf("PersistentVolumeClaim defaults: %v", pvc)
	}

	sc := &storagev1.StorageClass{}
	defaults.StorageClass(sc)
	if sc.GetReclaimPolicy() != "Delete" || sc.GetVolumeBindingMode() != "Immediate" {
		t.Errorf("StorageClass defaults: %v", sc)
	}
	sc = &storagev1.StorageClass{ReclaimPolicy: ptr("Retain"), VolumeBindingMode: ptr("WaitForFirstConsumer")}
	defaults.StorageClass(sc)
	if sc.GetReclaimPolicy() != "Retain" || sc.GetVolumeBindingMode() != "WaitForFirstConsumer" {
		t.Errorf("StorageClass: set values changed: %v", sc)
	}
	defaults.PersistentVolume(nil)
	defaults.PersistentVolumeClaim(nil)
	defaults.StorageClass(nil)
}
