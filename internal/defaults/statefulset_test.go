package defaults_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/defaults"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestStatefulSetDefaults(t *testing.T) {
	ss := &appsv1.StatefulSet{
		Metadata: &metav1.ObjectMeta{Name: "web"},
		Spec: &appsv1.StatefulSetSpec{
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}},
				Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "nginx", Image: "nginx"}}},
			},
			VolumeClaimTemplates: []*corev1.PersistentVolumeClaim{{Metadata: &metav1.ObjectMeta{Name: "www"}}, nil},
		},
	}
	defaults.StatefulSet(ss)
	s := ss.Spec
	checks := []struct {
		name      string
		got, want any
	}{
		{"replicas", s.GetReplicas(), int32(1)},
		{"podManagementPolicy", s.PodManagementPolicy, "OrderedReady"},
		{"updateStrategy.type", s.UpdateStrategy.GetType(), "RollingUpdate"},
		{"partition", s.UpdateStrategy.GetRollingUpdate().GetPartition(), int32(0)},
		{"partition set", s.UpdateStrategy.GetRollingUpdate().Partition != nil, true},
		{"maxUnavailable stays unset", s.UpdateStrategy.GetRollingUpdate().GetMaxUnavailable() == nil, true},
		{"revisionHistoryLimit", s.GetRevisionHistoryLimit(), int32(10)},
		{"whenDeleted", s.PersistentVolumeClaimRetentionPolicy.GetWhenDeleted(), "Retain"},
		{"whenScaled", s.PersistentVolumeClaimRetentionPolicy.GetWhenScaled(), "Retain"},
		{"claim volumeMode", s.VolumeClaimTemplates[0].GetSpec().GetVolumeMode(), "Filesystem"},
		{"template restartPolicy", s.Template.Spec.RestartPolicy, "Always"},
		{"template imagePullPolicy", s.Template.Spec.Containers[0].ImagePullPolicy, "Always"},
		{"no labels from the template", len(ss.Metadata.GetLabels()), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	again := proto.Clone(ss).(*appsv1.StatefulSet)
	defaults.StatefulSet(again)
	if !proto.Equal(again, ss) {
		t.Errorf("defaulting twice changed the object:\n%v\n%v", ss, again)
	}
}

func TestStatefulSetDefaultsKeepWhatIsSet(t *testing.T) {
	ss := &appsv1.StatefulSet{Spec: &appsv1.StatefulSetSpec{
		Replicas:                             proto.Int32(0),
		PodManagementPolicy:                  "Parallel",
		RevisionHistoryLimit:                 proto.Int32(2),
		UpdateStrategy:                       &appsv1.StatefulSetUpdateStrategy{Type: "OnDelete"},
		PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: "Delete"},
		VolumeClaimTemplates:                 []*corev1.PersistentVolumeClaim{{Spec: &corev1.PersistentVolumeClaimSpec{VolumeMode: proto.String("Block")}}},
	}}
	defaults.StatefulSet(ss)
	s := ss.Spec
	if s.GetReplicas() != 0 || s.PodManagementPolicy != "Parallel" || s.GetRevisionHistoryLimit() != 2 ||
		s.UpdateStrategy.GetType() != "OnDelete" || s.UpdateStrategy.RollingUpdate != nil ||
		s.PersistentVolumeClaimRetentionPolicy.GetWhenScaled() != "Delete" || s.PersistentVolumeClaimRetentionPolicy.GetWhenDeleted() != "Retain" ||
		s.VolumeClaimTemplates[0].Spec.GetVolumeMode() != "Block" {
		t.Errorf("defaults overwrote set fields: %v", s)
	}
}
