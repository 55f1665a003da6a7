package defaults_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/defaults"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestDaemonSetDefaults(t *testing.T) {
	ds := &appsv1.DaemonSet{
		Metadata: &metav1.ObjectMeta{Name: "agent"},
		Spec: &appsv1.DaemonSetSpec{
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "a", Image: "agent"}}},
			},
		},
	}
	defaults.DaemonSet(ds)
	s := ds.Spec
	checks := []struct {
		name      string
		got, want any
	}{
		{"updateStrategy.type", s.GetUpdateStrategy().GetType(), "RollingUpdate"},
		{"maxUnavailable", s.GetUpdateStrategy().GetRollingUpdate().GetMaxUnavailable().GetIntVal(), int32(1)},
		{"maxSurge is set", s.GetUpdateStrategy().GetRollingUpdate().GetMaxSurge().GetValue() != nil, true},
		{"maxSurge", s.GetUpdateStrategy().GetRollingUpdate().GetMaxSurge().GetIntVal(), int32(0)},
		{"revisionHistoryLimit", s.GetRevisionHistoryLimit(), int32(10)},
		{"template restartPolicy", s.GetTemplate().GetSpec().GetRestartPolicy(), "Always"},
		{"metadata.labels untouched (apps/v1)", len(ds.GetMetadata().GetLabels()), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestDaemonSetDefaultsKeepWhatIsSet(t *testing.T) {
	ds := &appsv1.DaemonSet{Spec: &appsv1.DaemonSetSpec{
		UpdateStrategy: &appsv1.DaemonSetUpdateStrategy{Type: "RollingUpdate", RollingUpdate: &appsv1.RollingUpdateDaemonSet{
			MaxSurge: &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: "10%"}},
		}},
		RevisionHistoryLimit: proto.Int32(3),
	}}
	defaults.DaemonSet(ds)
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru.GetMaxSurge().GetStrVal() != "10%" || ru.GetMaxUnavailable().GetIntVal() != 1 || ds.Spec.GetRevisionHistoryLimit() != 3 {
		t.Errorf("got maxSurge %v maxUnavailable %v limit %d", ru.GetMaxSurge(), ru.GetMaxUnavailable(), ds.Spec.GetRevisionHistoryLimit())
	}

	onDelete := &appsv1.DaemonSet{Spec: &appsv1.DaemonSetSpec{UpdateStrategy: &appsv1.DaemonSetUpdateStrategy{Type: "OnDelete"}}}
	defaults.DaemonSet(onDelete)
	if onDelete.Spec.UpdateStrategy.RollingUpdate != nil {
		t.Error("OnDelete got a rollingUpdate")
	}
	defaults.DaemonSet(nil)
}
