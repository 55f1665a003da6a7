package storageclass

import (
	"testing"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	storagev1 "skiff.dev/proto/storage/v1"
)

func TestIsDefaultAndClaimClass(t *testing.T) {
	for _, tc := range []struct {
		ann  map[string]string
		want bool
	}{{nil, false}, {map[string]string{IsDefaultAnnotation: "true"}, true}, {map[string]string{BetaIsDefaultAnnotation: "true"}, true}, {map[string]string{IsDefaultAnnotation: "yes"}, false}} {
		if got := IsDefault(&storagev1.StorageClass{Metadata: &metav1.ObjectMeta{Annotations: tc.ann}}); got != tc.want {
			t.Errorf("IsDefault(%v) = %v", tc.ann, got)
		}
	}
	spec := &corev1.PersistentVolumeClaimSpec{StorageClassName: proto.String("fast")}
	if got := ClaimClass(&corev1.PersistentVolumeClaim{Spec: spec}); got != "fast" {
		t.Errorf("spec class: %q", got)
	}
	beta := &metav1.ObjectMeta{Annotations: map[string]string{BetaClaimAnnotation: "old"}}
	if got := ClaimClass(&corev1.PersistentVolumeClaim{Metadata: beta, Spec: spec}); got != "old" {
		t.Errorf("the beta annotation comes first: %q", got)
	}
	if got := ClaimClass(&corev1.PersistentVolumeClaim{}); got != "" {
		t.Errorf("no class: %q", got)
	}
}
