package defaults

import (
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// PodAffinityLabelKeys merges each pod (anti-)affinity term's
// matchLabelKeys and mismatchLabelKeys into its labelSelector, as
// Kubernetes' apiserver does when a pod is created: for each key the pod
// has a label of, "key In (value)" (matchLabelKeys) or "key NotIn
// (value)" (mismatchLabelKeys) is added to matchExpressions. Keys the pod
// lacks are ignored; a term without a labelSelector (which matches no
// pod) is left alone. The scheduler then reads the labelSelector only.
func PodAffinityLabelKeys(p *corev1.Pod) {
	a := p.GetSpec().GetAffinity()
	labels := p.GetMetadata().GetLabels()
	for _, pa := range []*corev1.PodAffinity{a.GetPodAffinity(), a.GetPodAntiAffinity()} {
		for _, t := range pa.GetRequiredDuringSchedulingIgnoredDuringExecution() {
			mergeLabelKeys(t, labels)
		}
		for _, w := range pa.GetPreferredDuringSchedulingIgnoredDuringExecution() {
			mergeLabelKeys(w.GetPodAffinityTerm(), labels)
		}
	}
}

func mergeLabelKeys(t *corev1.PodAffinityTerm, labels map[string]string) {
	if t == nil || t.LabelSelector == nil {
		return
	}
	add := func(keys []string, op string) {
		for _, k := range keys {
			if v, ok := labels[k]; ok {
				t.LabelSelector.MatchExpressions = append(t.LabelSelector.MatchExpressions,
					&metav1.LabelSelectorRequirement{Key: k, Operator: op, Values: []string{v}})
			}
		}
	}
	add(t.MatchLabelKeys, "In")
	add(t.MismatchLabelKeys, "NotIn")
}

// Reason and message of the PodScheduled condition of a pod created with
// scheduling gates.
const (
	ReasonSchedulingGated  = "SchedulingGated"
	MessageSchedulingGated = "Scheduling is blocked due to non-empty scheduling gates"
)

// SchedulingGatedCondition gives a pod created with scheduling gates the
// condition PodScheduled=False, reason SchedulingGated, unless it has a
// PodScheduled condition already, as Kubernetes' apiserver does at
// create. The scheduler does not try such a pod until its gates are
// removed.
func SchedulingGatedCondition(p *corev1.Pod) {
	if len(p.GetSpec().GetSchedulingGates()) == 0 {
		return
	}
	if p.Status == nil {
		p.Status = &corev1.PodStatus{}
	}
	for _, c := range p.Status.Conditions {
		if c.GetType() == "PodScheduled" {
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, &corev1.PodCondition{
		Type: "PodScheduled", Status: "False", Reason: ReasonSchedulingGated, Message: MessageSchedulingGated,
	})
}
