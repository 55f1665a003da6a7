package localpath

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	storagev1 "skiff.dev/proto/storage/v1"
)

func TestVolume(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{
		Metadata: &metav1.ObjectMeta{Namespace: "shop", Name: "data-db-0", Uid: "1234"},
		Spec: &corev1.PersistentVolumeClaimSpec{AccessModes: []string{"ReadWriteOnce"}, StorageClassName: proto.String("local-path"),
			VolumeMode: proto.String("Filesystem"),
			Resources:  &corev1.VolumeResourceRequirements{Requests: map[string]string{"storage": "2Gi"}}},
	}
	class := DefaultClass("local-path")
	class.MountOptions = []string{"noatime"}
	node := &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "node-1",
		Labels:      map[string]string{LabelHostname: "host-1"},
		Annotations: map[string]string{AnnVolumeRoot: "/var/lib/skiff/volumes"}}}

	pv, err := Volume(pvc, class, node)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.PersistentVolume{
		Metadata: &metav1.ObjectMeta{Name: "pvc-1234",
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "skiff.dev/local-path"},
			Finalizers:  []string{"skiff.dev/local-path-volume"}},
		Spec: &corev1.PersistentVolumeSpec{
			Capacity:                      map[string]string{"storage": "2Gi"},
			AccessModes:                   []string{"ReadWriteOnce"},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", ApiVersion: "v1", Namespace: "shop", Name: "data-db-0", Uid: "1234"},
			PersistentVolumeReclaimPolicy: "Delete",
			StorageClassName:              "local-path",
			MountOptions:                  []string{"noatime"},
			VolumeMode:                    proto.String("Filesystem"),
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []*corev1.NodeSelectorTerm{{
				MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{"host-1"}}}}}}},
			Local: &corev1.LocalVolumeSource{Path: "/var/lib/skiff/volumes/pvc-1234_shop_data-db-0"},
		},
	}
	if !proto.Equal(pv, want) {
		t.Errorf("volume:\n got %v\nwant %v", pv, want)
	}

	// Retain from the class; the node's name when it has no hostname label.
	class.ReclaimPolicy = proto.String("Retain")
	delete(node.Metadata.Labels, LabelHostname)
	pv, _ = Volume(pvc, class, node)
	if pv.Spec.PersistentVolumeReclaimPolicy != "Retain" || pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "node-1" {
		t.Errorf("reclaim policy %q, affinity %v", pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.NodeAffinity)
	}

	delete(node.Metadata.Annotations, AnnVolumeRoot)
	if _, err := Volume(pvc, class, node); err == nil || !strings.Contains(err.Error(), `node "node-1" has no annotation skiff.dev/local-volume-root`) {
		t.Errorf("a node without a root: %v", err)
	}
}

func TestDefaultClass(t *testing.T) {
	sc := DefaultClass("local-path")
	want := &storagev1.StorageClass{
		Metadata:          &metav1.ObjectMeta{Name: "local-path", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:       "skiff.dev/local-path",
		ReclaimPolicy:     proto.String("Delete"),
		VolumeBindingMode: proto.String("WaitForFirstConsumer"),
	}
	if !proto.Equal(sc, want) {
		t.Errorf("got %v, want %v", sc, want)
	}
}
