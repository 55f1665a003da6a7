package job

import (
	"fmt"
	"slices"

	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
)

// policyMatch is what a Job's podFailurePolicy says of one failed pod.
type policyMatch struct {
	// action is the matching rule's action ("" when no rule matched).
	action string
	// countFailed says whether the pod counts against backoffLimit
	// (false for Ignore).
	countFailed bool
	// failJob is the Job's failure message for a FailJob match.
	failJob string
}

// matchPodFailurePolicy applies the policy's rules in order to a failed
// pod: the first rule whose onExitCodes matches a terminated container's
// non-zero exit code, or whose onPodConditions matches a condition of the
// pod, decides (Kubernetes' matchPodFailurePolicy). No match counts the
// failure.
func matchPodFailurePolicy(policy *batchv1.PodFailurePolicy, p *corev1.Pod) policyMatch {
	if policy == nil {
		return policyMatch{countFailed: true}
	}
	for i, r := range policy.GetRules() {
		var msg string
		if req := r.GetOnExitCodes(); req != nil {
			c := matchingContainer(req, p)
			if c == nil {
				continue
			}
			msg = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d matching %s rule at index %d",
				c.GetName(), p.GetMetadata().GetNamespace(), p.GetMetadata().GetName(), c.GetState().GetTerminated().GetExitCode(), r.GetAction(), i)
		} else if pats := r.GetOnPodConditions(); len(pats) > 0 {
			ct := matchingCondition(pats, p)
			if ct == "" {
				continue
			}
			msg = fmt.Sprintf("Pod %s/%s has condition %s matching %s rule at index %d",
				p.GetMetadata().GetNamespace(), p.GetMetadata().GetName(), ct, r.GetAction(), i)
		} else {
			continue
		}
		switch r.GetAction() {
		case "FailJob":
			return policyMatch{action: "FailJob", countFailed: true, failJob: msg}
		case "Ignore":
			return policyMatch{action: "Ignore"}
		default: // Count, FailIndex
			return policyMatch{action: r.GetAction(), countFailed: true}
		}
	}
	return policyMatch{countFailed: true}
}

func matchingContainer(req *batchv1.PodFailurePolicyOnExitCodesRequirement, p *corev1.Pod) *corev1.ContainerStatus {
	st := p.GetStatus()
	for _, list := range [][]*corev1.ContainerStatus{st.GetContainerStatuses(), st.GetInitContainerStatuses()} {
		for _, c := range list {
			t := c.GetState().GetTerminated()
			if t == nil || t.GetExitCode() == 0 {
				continue
			}
			if req.ContainerName != nil && *req.ContainerName != c.GetName() {
				continue
			}
			in := slices.Contains(req.GetValues(), t.GetExitCode())
			if req.GetOperator() == "In" && in || req.GetOperator() == "NotIn" && !in {
				return c
			}
		}
	}
	return nil
}

func matchingCondition(pats []*batchv1.PodFailurePolicyOnPodConditionsPattern, p *corev1.Pod) string {
	for _, pat := range pats {
		for _, c := range p.GetStatus().GetConditions() {
			if c.GetType() == pat.GetType() && c.GetStatus() == pat.GetStatus() {
				return c.GetType()
			}
		}
	}
	return ""
}
