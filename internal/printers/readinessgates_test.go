package printers

import (
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// TestReadinessGatesColumn: -o wide's READINESS GATES is the gates whose
// condition is True over the gates (a missing condition is not True), or
// <none>, as kubectl prints it.
func TestReadinessGatesColumn(t *testing.T) {
	gated := func(conds ...*corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "web", CreationTimestamp: ago(0)},
			Spec:   &corev1.PodSpec{ReadinessGates: []*corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}},
			Status: &corev1.PodStatus{Conditions: conds}}
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{&corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "web"}}, "<none>"},
		{gated(), "0/2"},
		{gated(&corev1.PodCondition{Type: "example.com/lb", Status: "True"}, &corev1.PodCondition{Type: "example.com/dns", Status: "False"}), "1/2"},
		{gated(&corev1.PodCondition{Type: "example.com/lb", Status: "True"}, &corev1.PodCondition{Type: "example.com/dns", Status: "True"}), "2/2"},
	} {
		row := Row(tc.pod, Options{Wide: true, Now: now})
		if got := row[len(row)-1]; got != tc.want {
			t.Errorf("conditions %v: READINESS GATES %q, want %q", tc.pod.GetStatus().GetConditions(), got, tc.want)
		}
	}
	if h := Header(&corev1.Pod{}, Options{Wide: true}); h[len(h)-1] != "READINESS GATES" {
		t.Errorf("wide columns %v", h)
	}
}
