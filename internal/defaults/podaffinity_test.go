package defaults_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/defaults"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestPodAffinityLabelKeys(t *testing.T) {
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web", "pod-template-hash": "abc", "tenant": "t1"}},
		Spec: &corev1.PodSpec{Affinity: &corev1.Affinity{
			PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{{
				LabelSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				MatchLabelKeys: []string{"pod-template-hash", "missing"},
				TopologyKey:    "kubernetes.io/hostname",
			}, {
				// No selector: matches no pod, left alone.
				MatchLabelKeys: []string{"pod-template-hash"}, TopologyKey: "kubernetes.io/hostname",
			}}},
			PodAntiAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []*corev1.WeightedPodAffinityTerm{{
				Weight: 1, PodAffinityTerm: &corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{}, MismatchLabelKeys: []string{"tenant"}, TopologyKey: "kubernetes.io/hostname",
				},
			}}},
		}},
	}
	defaults.PodAffinityLabelKeys(p)
	req := p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	want := []*metav1.LabelSelectorRequirement{{Key: "pod-template-hash", Operator: "In", Values: []string{"abc"}}}
	if got := req[0].LabelSelector.MatchExpressions; !equalReqs(got, want) {
		t.Errorf("matchLabelKeys merged as %v, want %v", got, want)
	}
	if req[1].LabelSelector != nil {
		t.Errorf("a term without a selector got one: %v", req[1].LabelSelector)
	}
	pref := p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	want = []*metav1.LabelSelectorRequirement{{Key: "tenant", Operator: "NotIn", Values: []string{"t1"}}}
	if got := pref.LabelSelector.MatchExpressions; !equalReqs(got, want) {
		t.Errorf("mismatchLabelKeys merged as %v, want %v", got, want)
	}
}

func equalReqs(a, b []*metav1.LabelSelectorRequirement) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestSchedulingGatedCondition(t *testing.T) {
	p := &corev1.Pod{Spec: &corev1.PodSpec{SchedulingGates: []*corev1.PodSchedulingGate{{Name: "wait"}}}}
	defaults.SchedulingGatedCondition(p)
	defaults.SchedulingGatedCondition(p)
	cs := p.GetStatus().GetConditions()
	if len(cs) != 1 || cs[0].GetType() != "PodScheduled" || cs[0].GetStatus() != "False" || cs[0].GetReason() != "SchedulingGated" ||
		cs[0].GetMessage() != "Scheduling is blocked due to non-empty scheduling gates" {
		t.Errorf("conditions %v", cs)
	}
	ungated := &corev1.Pod{Spec: &corev1.PodSpec{}}
	defaults.SchedulingGatedCondition(ungated)
	if len(ungated.GetStatus().GetConditions()) != 0 {
		t.Errorf("an ungated pod got %v", ungated.GetStatus().GetConditions())
	}
}
