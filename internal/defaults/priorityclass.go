package defaults

import (
	metav1 "skiff.dev/proto/meta/v1"
	schedulingv1 "skiff.dev/proto/scheduling/v1"
)

// Pod priorities and the classes the apiserver creates at bootstrap, as
// Kubernetes' scheduling.k8s.io/v1.
const (
	// PreemptLowerPriority and PreemptNever are the preemption policies.
	PreemptLowerPriority = "PreemptLowerPriority"
	PreemptNever         = "Never"
	// HighestUserDefinablePriority bounds the value of a class whose name
	// does not start with SystemPriorityClassPrefix.
	HighestUserDefinablePriority int32 = 1000000000
	// SystemCriticalPriority is the lowest value of the system classes.
	SystemCriticalPriority = 2 * HighestUserDefinablePriority
	// SystemPriorityClassPrefix is reserved for the system classes.
	SystemPriorityClassPrefix = "system-"
	SystemClusterCritical     = SystemPriorityClassPrefix + "cluster-critical"
	SystemNodeCritical        = SystemPriorityClassPrefix + "node-critical"
)

// PriorityClass defaults a PriorityClass: preemptionPolicy
// PreemptLowerPriority.
func PriorityClass(pc *schedulingv1.PriorityClass) {
	if pc == nil {
		return
	}
	if pc.PreemptionPolicy == nil {
		pc.PreemptionPolicy = ptr(PreemptLowerPriority)
	}
}

// SystemPriorityClasses returns new copies of the classes the apiserver
// creates at bootstrap: system-node-critical (2000001000) and
// system-cluster-critical (2000000000), neither the global default.
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	mk := func(name string, value int32, desc string) *schedulingv1.PriorityClass {
		return &schedulingv1.PriorityClass{
			ApiVersion:       "scheduling.k8s.io/v1",
			Kind:             "PriorityClass",
			Metadata:         &metav1.ObjectMeta{Name: name},
			Value:            value,
			Description:      desc,
			PreemptionPolicy: ptr(PreemptLowerPriority),
		}
	}
	return []*schedulingv1.PriorityClass{
		mk(SystemNodeCritical, SystemCriticalPriority+1000, "Used for system critical pods that must not be moved from their current node."),
		mk(SystemClusterCritical, SystemCriticalPriority, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
	}
}
