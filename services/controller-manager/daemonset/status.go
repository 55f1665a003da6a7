package daemonset

import (
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// Counts are the DaemonSet's status counters (Kubernetes'
// updateDaemonSetStatus): over the nodes that should run a daemon pod, how
// many have one (current), whose oldest pod is ready, available, and runs
// the current template (updated); and how many nodes that should not run
// one have one (misscheduled).
func Counts(s State) *appsv1.DaemonSetStatus {
	st := &appsv1.DaemonSetStatus{}
	minReady := s.DS.GetSpec().GetMinReadySeconds()
	for _, n := range s.Nodes {
		var pods = s.Pods[n.Name]
		var live []*corev1.Pod
		for _, p := range pods {
			if p.GetMetadata().GetDeletionTimestamp() == nil || !terminal(p) {
				live = append(live, p)
			}
		}
		if !n.Fit.ShouldRun {
			if len(live) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(live) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		p := live[0]
		if controllerutil.IsPodReady(p) {
			st.NumberReady++
			if controllerutil.IsPodAvailable(p, minReady, s.Now) {
				st.NumberAvailable++
			}
		}
		if p.GetMetadata().GetLabels()[RevisionLabel] == s.Hash {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	st.ObservedGeneration = s.DS.GetMetadata().GetGeneration()
	return st
}

func terminal(p *corev1.Pod) bool {
	ph := p.GetStatus().GetPhase()
	return ph == "Succeeded" || ph == "Failed"
}
