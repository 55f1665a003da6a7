package protection

import (
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestClaimInUse(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "data"}}
	pod := func(ns, node, phase string, claims ...string) *corev1.Pod {
		p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: &corev1.PodSpec{NodeName: node},
			Status: &corev1.PodStatus{Phase: phase}}
		for _, c := range claims {
			p.Spec.Volumes = append(p.Spec.Volumes, &corev1.Volume{Name: c, PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}})
		}
		p.Spec.Volumes = append(p.Spec.Volumes, &corev1.Volume{Name: "tmp", EmptyDir: &corev1.EmptyDirVolumeSource{}})
		return p
	}
	cases := []struct {
		name string
		pods []*corev1.Pod
		want bool
	}{
		{"no pods", nil, false},
		{"a running pod", []*corev1.Pod{pod("default", "n1", "Running", "data")}, true},
		{"a pending scheduled pod", []*corev1.Pod{pod("default", "n1", "Pending", "other", "data")}, true},
		{"an unscheduled pod", []*corev1.Pod{pod("default", "", "Pending", "data")}, false},
		{"a finished pod", []*corev1.Pod{pod("default", "n1", "Succeeded", "data"), pod("default", "n1", "Failed", "data")}, false},
		{"another claim", []*corev1.Pod{pod("default", "n1", "Running", "logs")}, false},
		{"the same name in another namespace", []*corev1.Pod{pod("other", "n1", "Running", "data")}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ClaimInUse(claim, c.pods); got != c.want {
				t.Errorf("ClaimInUse = %v, want %v", got, c.want)
			}
		})
	}
}

func TestVolumeInUse(t *testing.T) {
	for phase, want := range map[string]bool{"Bound": true, "Available": false, "Released": false, "Pending": false, "Failed": false} {
		if got := VolumeInUse(&corev1.PersistentVolume{Status: &corev1.PersistentVolumeStatus{Phase: phase}}); got != want {
			t.Errorf("%s: VolumeInUse = %v, want %v", phase, got, want)
		}
	}
}
