package quota

import (
	"slices"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/qos"
	corev1 "skiff.dev/proto/core/v1"
)

// The scopes of a ResourceQuota (spec.scopes, spec.scopeSelector).
const (
	ScopeTerminating    = "Terminating"
	ScopeNotTerminating = "NotTerminating"
	ScopeBestEffort     = "BestEffort"
	ScopeNotBestEffort  = "NotBestEffort"
	ScopePriorityClass  = "PriorityClass"
)

// Scopes are a quota's scope requirements, as Kubernetes'
// getScopeSelectorsFromQuota: each of spec.scopes with the operator
// Exists, then spec.scopeSelector's expressions. An object falls under the
// quota only when it matches every one.
func Scopes(spec *corev1.ResourceQuotaSpec) []*corev1.ScopedResourceSelectorRequirement {
	out := make([]*corev1.ScopedResourceSelectorRequirement, 0, len(spec.GetScopes())+len(spec.GetScopeSelector().GetMatchExpressions()))
	for _, s := range spec.GetScopes() {
		out = append(out, &corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: "Exists"})
	}
	return append(out, spec.GetScopeSelector().GetMatchExpressions()...)
}

// Matches says whether a quota counts obj, an object of group/resource:
// a quota without scopes counts everything; a scoped one counts only pods,
// and those that match every scope (Kubernetes' evaluators of other
// resources match no scope).
func Matches(spec *corev1.ResourceQuotaSpec, group, resource string, obj proto.Message) bool {
	scopes := Scopes(spec)
	if len(scopes) == 0 {
		return true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || group != "" || resource != "pods" {
		return false
	}
	for _, s := range scopes {
		if !PodMatchesScope(pod, s) {
			return false
		}
	}
	return true
}

// PodMatchesScope is Kubernetes' podMatchesScopeFunc: Terminating is a pod
// with spec.activeDeadlineSeconds (>= 0), BestEffort a pod of that QoS
// class, and PriorityClass compares spec.priorityClassName as a label
// selector on the key PriorityClass, which every pod has (its value empty
// without a class): In and NotIn test the value, Exists a class being set,
// and DoesNotExist never matches. An unknown scope matches nothing.
func PodMatchesScope(p *corev1.Pod, s *corev1.ScopedResourceSelectorRequirement) bool {
	switch s.GetScopeName() {
	case ScopeTerminating:
		return terminating(p)
	case ScopeNotTerminating:
		return !terminating(p)
	case ScopeBestEffort:
		return qos.Of(p) == qos.BestEffort
	case ScopeNotBestEffort:
		return qos.Of(p) != qos.BestEffort
	case ScopePriorityClass:
		class := p.GetSpec().GetPriorityClassName()
		switch s.GetOperator() {
		case "Exists":
			return class != ""
		case "In":
			return slices.Contains(s.GetValues(), class)
		case "NotIn":
			return !slices.Contains(s.GetValues(), class)
		}
	}
	return false
}

func terminating(p *corev1.Pod) bool {
	d := p.GetSpec().ActiveDeadlineSeconds
	return d != nil && *d >= 0
}
