package agent

import (
	"time"

	corev1 "skiff.dev/proto/core/v1"
)

// Native sidecars (Kubernetes' KEP-753): an init container with
// restartPolicy Always starts in its turn among the init containers, and
// the next one starts once it has started (its startup probe passed, or it
// runs); it keeps running beside the main containers, is restarted with
// backoff whenever it exits whatever the pod's restartPolicy, has probes
// like a main container, and is stopped after the main containers, the
// last declared first. It does not count in the pod's phase: a Job's pod
// succeeds when its main containers have, and its sidecars are then
// stopped. What to start is decided in decide.go (initActions); this file
// holds the rest of the arithmetic, pure functions over spec and state.

// isSidecar reports whether init container c is a sidecar.
func isSidecar(c *corev1.Container) bool { return c.GetRestartPolicy() == "Always" }

// probedContainers are the containers of p that may have probes: the
// sidecars, then the main containers.
func probedContainers(p *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for _, c := range p.GetSpec().GetInitContainers() {
		if isSidecar(c) {
			out = append(out, c)
		}
	}
	return append(out, p.GetSpec().GetContainers()...)
}

// podInitialized reports whether p is Initialized in sandbox sb: a main
// container was created there, or the init containers are through
// (initActions) and their statuses say so (a sidecar that has since exited
// has not started).
func podInitialized(p *corev1.Pod, rt *podRuntime, sb string, started map[string]bool, statuses []*corev1.ContainerStatus) bool {
	if mainStarted(p, rt, sb) {
		return true
	}
	return initActions(p, rt, sb, nil, started).initialized && len(incompleteInits(p.GetSpec(), statuses)) == 0
}

// incompleteInits names the init containers that keep the pod from being
// Initialized, as Kubernetes' Initialized condition lists them: a regular
// one that has not exited 0, a sidecar that has not started.
func incompleteInits(spec *corev1.PodSpec, statuses []*corev1.ContainerStatus) []string {
	var out []string
	for i, c := range spec.GetInitContainers() {
		if i >= len(statuses) {
			out = append(out, c.GetName())
			continue
		}
		cs := statuses[i]
		if isSidecar(c) {
			if !cs.GetStarted() {
				out = append(out, c.GetName())
			}
			continue
		}
		if t := cs.GetState().GetTerminated(); t == nil || t.GetExitCode() != 0 {
			out = append(out, c.GetName())
		}
	}
	return out
}

// unreadySidecars names the sidecars that are not ready: they count for
// ContainersReady, before the main containers.
func unreadySidecars(spec *corev1.PodSpec, statuses []*corev1.ContainerStatus) []string {
	var out []string
	for i, c := range spec.GetInitContainers() {
		if isSidecar(c) && (i >= len(statuses) || !statuses[i].GetReady()) {
			out = append(out, c.GetName())
		}
	}
	return out
}

// sidecarPhaseCounts is what the sidecars add to the pod phase's counts
// once the pod is initialized (Kubernetes' getPhase): a running sidecar
// keeps the pod Running, one that never ran keeps it Pending; one that
// exited does not count (it is being restarted, or the pod is over).
func sidecarPhaseCounts(spec *corev1.PodSpec, statuses []*corev1.ContainerStatus) (running, waiting int) {
	for i, c := range spec.GetInitContainers() {
		if !isSidecar(c) || i >= len(statuses) {
			continue
		}
		s := statuses[i]
		switch {
		case s.GetState().GetRunning() != nil:
			running++
		case s.GetState().GetWaiting() != nil && s.GetLastState().GetTerminated() == nil:
			waiting++
		}
	}
	return running, waiting
}

// stopOrder groups the running containers of rt in the order the pod
// stops them (Kubernetes' termination ordering): first all that are not
// sidecars, together; then each sidecar alone, the last declared first.
// Without the pod's spec (a pod that is gone) all go together.
func stopOrder(p *corev1.Pod, rt *podRuntime) [][]*containerInfo {
	byName := map[string]*containerInfo{}
	var first []*containerInfo
	sidecars := map[string]bool{}
	if p != nil {
		for _, c := range p.GetSpec().GetInitContainers() {
			sidecars[c.GetName()] = isSidecar(c)
		}
	}
	for _, c := range rt.Containers {
		if !c.running() {
			continue
		}
		if sidecars[c.Name] && byName[c.Name] == nil {
			byName[c.Name] = c
			continue
		}
		first = append(first, c)
	}
	var out [][]*containerInfo
	if len(first) > 0 {
		out = append(out, first)
	}
	inits := p.GetSpec().GetInitContainers()
	for i := len(inits) - 1; i >= 0; i-- {
		if c := byName[inits[i].GetName()]; c != nil {
			out = append(out, []*containerInfo{c})
		}
	}
	return out
}

// graceLeft is what remains of a grace period of grace seconds after
// waited (whole seconds, truncated as the kubelet does); stopContainer
// still gives at least minimumGracePeriod.
func graceLeft(grace int64, waited time.Duration) int64 {
	return max(grace-int64(waited/time.Second), 0)
}
