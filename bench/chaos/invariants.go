package chaos

import (
	"fmt"
	"sort"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// limits are the Deployment's bounds on its pods during a rollout.
type limits struct {
	app                      string // the pods' app label
	replicas                 int
	maxSurge, maxUnavailable int
	// readyFloor: check that at least replicas - maxUnavailable pods are
	// Ready (off while a node is away: its pods are rightly not ready).
	readyFloor bool
}

// sample is what the sampler read at one moment.
type sample struct {
	pods []*corev1.Pod
	// running is, by pod uid, the nodes whose runtime has a ready sandbox
	// of the pod, one entry per sandbox.
	running map[string][]string
}

// check returns the invariants sample s breaks, one sentence each: never
// more than replicas + maxSurge pods of the app, never fewer than replicas
// - maxUnavailable of them Ready (when readyFloor), no two pods of one
// name, no pod with two controllers, no pod running twice. Pure.
func check(s sample, l limits) []string {
	var out []string
	names := map[string]int{}
	active, ready := 0, 0
	for _, p := range s.pods {
		m := p.GetMetadata()
		names[m.GetNamespace()+"/"+m.GetName()]++
		controllers := 0
		for _, ref := range m.GetOwnerReferences() {
			if ref.GetController() {
				controllers++
			}
		}
		if controllers > 1 {
			out = append(out, fmt.Sprintf("pod %s/%s has %d controller owners", m.GetNamespace(), m.GetName(), controllers))
		}
		if m.GetLabels()["app"] != l.app || !controllerutil.IsPodActive(p) {
			continue
		}
		active++
		if controllerutil.IsPodReady(p) {
			ready++
		}
	}
	if maxPods := l.replicas + l.maxSurge; active > maxPods {
		out = append(out, fmt.Sprintf("%d pods of %s, more than replicas + maxSurge = %d", active, l.app, maxPods))
	}
	if minReady := l.replicas - l.maxUnavailable; l.readyFloor && ready < minReady {
		out = append(out, fmt.Sprintf("%d pods of %s Ready, fewer than replicas - maxUnavailable = %d", ready, l.app, minReady))
	}
	for name, n := range names {
		if n > 1 {
			out = append(out, fmt.Sprintf("%d pods named %s", n, name))
		}
	}
	for uid, nodes := range s.running {
		if len(nodes) > 1 {
			sort.Strings(nodes)
			out = append(out, fmt.Sprintf("pod uid %s runs %d times, on %v", uid, len(nodes), nodes))
		}
	}
	sort.Strings(out)
	return out
}

// converged says whether the Deployment and its pods are where they are
// asked to be: every replica updated, ready and available for the current
// generation, and exactly replicas active pods, all Ready.
func converged(d *appsv1.Deployment, pods []*corev1.Pod, app string) (bool, string) {
	want := d.GetSpec().GetReplicas()
	st := d.GetStatus()
	active, ready := 0, 0
	for _, p := range pods {
		if p.GetMetadata().GetLabels()["app"] == app && controllerutil.IsPodActive(p) {
			active++
			if controllerutil.IsPodReady(p) {
				ready++
			}
		}
	}
	why := fmt.Sprintf("generation %d observed %d; replicas %d updated %d ready %d available %d of %d; %d active pods, %d ready",
		d.GetMetadata().GetGeneration(), st.GetObservedGeneration(), st.GetReplicas(), st.GetUpdatedReplicas(),
		st.GetReadyReplicas(), st.GetAvailableReplicas(), want, active, ready)
	ok := st.GetObservedGeneration() >= d.GetMetadata().GetGeneration() && st.GetReplicas() == want &&
		st.GetUpdatedReplicas() == want && st.GetReadyReplicas() == want && st.GetAvailableReplicas() == want &&
		active == int(want) && ready == int(want)
	return ok, why
}
