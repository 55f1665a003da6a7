package describe

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// spaced collapses the tab writer's alignment: runs of spaces become one.
var spaced = regexp.MustCompile(` +`)

func containsSpaced(got, want string) bool {
	return strings.Contains(spaced.ReplaceAllString(got, " "), spaced.ReplaceAllString(want, " "))
}

func TestDescribePersistentVolume(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	pv := &corev1.PersistentVolume{
		Metadata: &metav1.ObjectMeta{Name: "pvc-1234", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "skiff.dev/local-path"},
			Finalizers: []string{"kubernetes.io/pv-protection", "skiff.dev/local-path-volume"}},
		Spec: &corev1.PersistentVolumeSpec{
			Capacity: map[string]string{"storage": "2Gi"}, AccessModes: []string{"ReadWriteOnce"}, PersistentVolumeReclaimPolicy: "Delete",
			StorageClassName: "local-path", VolumeMode: proto.String("Filesystem"),
			ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data"},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []*corev1.NodeSelectorTerm{{
				MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{"node-1"}}}}}}},
			Local: &corev1.LocalVolumeSource{Path: "/var/lib/skiff/volumes/pvc-1234_default_data"},
		},
		Status: &corev1.PersistentVolumeStatus{Phase: "Bound"},
	}
	var b strings.Builder
	if err := PersistentVolume(&b, pv, nil, t0); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"Name:            pvc-1234\n",
		"Annotations:     pv.kubernetes.io/provisioned-by: skiff.dev/local-path\n",
		"Finalizers:      [kubernetes.io/pv-protection skiff.dev/local-path-volume]\n",
		"StorageClass:    local-path\n",
		"Status:          Bound\n",
		"Claim:           default/data\n",
		"Reclaim Policy:  Delete\n",
		"Access Modes:    RWO\n",
		"VolumeMode:      Filesystem\n",
		"Capacity:        2Gi\n",
		"Node Affinity:   \n  Required Terms:  \n    Term 0:        kubernetes.io/hostname in [node-1]\n",
		"Source:\n  Type:          LocalVolume (a persistent volume backed by local storage on a node)\n  Path:          /var/lib/skiff/volumes/pvc-1234_default_data\n",
		"Events:          <none>\n",
	} {
		if !containsSpaced(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}

	pv.Metadata.DeletionTimestamp = timestamppb.New(t0.Add(-90 * time.Second))
	pv.Spec.Local, pv.Spec.NodeAffinity, pv.Spec.HostPath = nil, nil, &corev1.HostPathVolumeSource{Path: "/srv/data", Type: "DirectoryOrCreate"}
	b.Reset()
	_ = PersistentVolume(&b, pv, nil, t0)
	for _, want := range []string{"Status:          Terminating (lasts 90s)\n", "Node Affinity:   <none>\n",
		"  Type:          HostPath (bare host directory volume)\n  Path:          /srv/data\n  HostPathType:  DirectoryOrCreate\n"} {
		if !containsSpaced(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
}

func TestDescribePersistentVolumeClaim(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	pvc := &corev1.PersistentVolumeClaim{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "data", Finalizers: []string{"kubernetes.io/pvc-protection"},
			Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec: &corev1.PersistentVolumeClaimSpec{AccessModes: []string{"ReadWriteOnce"}, StorageClassName: proto.String("local-path"),
			VolumeName: "pvc-1234", VolumeMode: proto.String("Filesystem"),
			Resources: &corev1.VolumeResourceRequirements{Requests: map[string]string{"storage": "2Gi"}}},
		Status: &corev1.PersistentVolumeClaimStatus{Phase: "Bound", AccessModes: []string{"ReadWriteOnce"}, Capacity: map[string]string{"storage": "2Gi"}},
	}
	uses := func(ns, name, claim string) *corev1.Pod {
		return &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: &corev1.PodSpec{Volumes: []*corev1.Volume{
			{Name: "v", PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}
	}
	pods := []*corev1.Pod{uses("default", "web-1", "data"), uses("default", "web-0", "data"), uses("default", "other", "logs"), uses("shop", "db", "data")}
	events := []*corev1.Event{{InvolvedObject: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "data"}, Type: "Normal", Reason: "ProvisioningSucceeded",
		Message: "Successfully provisioned volume pvc-1234", Source: &corev1.EventSource{Component: "local-path-provisioner-controller"},
		LastTimestamp: timestamppb.New(t0.Add(-time.Minute)), Count: 1}}
	var b strings.Builder
	if err := PersistentVolumeClaim(&b, pvc, pods, events, t0); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"Name:          data\n",
		"Namespace:     default\n",
		"StorageClass:  local-path\n",
		"Status:        Bound\n",
		"Volume:        pvc-1234\n",
		"Finalizers:    [kubernetes.io/pvc-protection]\n",
		"Capacity:      2Gi\n",
		"Access Modes:  RWO\n",
		"VolumeMode:    Filesystem\n",
		"Used By:       web-0\n               web-1\n",
		"Normal  ProvisioningSucceeded  60s   local-path-provisioner-controller  Successfully provisioned volume pvc-1234",
	} {
		if !containsSpaced(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}
