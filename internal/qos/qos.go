// Package qos is a pod's quality of service class, computed once for every
// part of Skiff that needs it: the apiserver sets status.qosClass when a
// pod is created, the node agent sizes OOM scores and ranks pods for
// eviction by it, and ResourceQuota's BestEffort and NotBestEffort scopes
// match by it. Pure functions over the pod's spec; no I/O.
//
// It does not decide what a class means for cgroups (the node agent) or
// for quotas (package quota).
package qos

import (
	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
)

// The classes, as Kubernetes names them.
const (
	Guaranteed = "Guaranteed"
	Burstable  = "Burstable"
	BestEffort = "BestEffort"
)

// computeResources are the resources the class is computed from.
var computeResources = [...]string{"cpu", "memory"}

// Of is the pod's class: status.qosClass when set (Kubernetes' GetPodQOS:
// the class is fixed when the pod is created), else Compute.
func Of(p *corev1.Pod) string {
	if c := p.GetStatus().GetQosClass(); c != "" {
		return c
	}
	return Compute(p)
}

// Compute is Kubernetes' ComputePodQOS over the pod's containers and init
// containers (sidecars, init containers with restartPolicy Always, among
// them; ephemeral containers cannot set resources): BestEffort when no
// container sets a cpu or memory request or limit above zero; Guaranteed
// when every container sets cpu and memory limits and the pod's summed
// requests equal its summed limits, resource by resource; Burstable
// otherwise. The pod's overhead does not count, as in Kubernetes. An
// unparsable quantity (validation refuses it) counts as unset.
func Compute(p *corev1.Pod) string {
	var requests, limits [len(computeResources)]quantity.Quantity
	var hasReq, hasLim [len(computeResources)]bool
	guaranteed := true
	spec := p.GetSpec()
	for _, cs := range [][]*corev1.Container{spec.GetContainers(), spec.GetInitContainers()} {
		for _, c := range cs {
			res := c.GetResources()
			limited := 0
			for i, name := range computeResources {
				if q, ok := positive(res.GetRequests()[name]); ok {
					requests[i], _ = requests[i].Add(q)
					hasReq[i] = true
				}
				if q, ok := positive(res.GetLimits()[name]); ok {
					limits[i], _ = limits[i].Add(q)
					hasLim[i] = true
					limited++
				}
			}
			if limited != len(computeResources) {
				guaranteed = false
			}
		}
	}
	anySet := false
	for i := range computeResources {
		anySet = anySet || hasReq[i] || hasLim[i]
		if hasReq[i] && (!hasLim[i] || limits[i].Cmp(requests[i]) != 0) {
			guaranteed = false
		}
		// Kubernetes also asks for as many resources requested as limited.
		if hasReq[i] != hasLim[i] {
			guaranteed = false
		}
	}
	switch {
	case !anySet:
		return BestEffort
	case guaranteed:
		return Guaranteed
	}
	return Burstable
}

// positive parses s and reports whether it is above zero.
func positive(s string) (quantity.Quantity, bool) {
	if s == "" {
		return quantity.Quantity{}, false
	}
	q, err := quantity.Parse(s)
	if err != nil || q.Sign() <= 0 {
		return quantity.Quantity{}, false
	}
	return q, true
}
