package agent

import (
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/ephemeral"
	corev1 "skiff.dev/proto/core/v1"
)

// Ephemeral containers (skiffctl debug), as the kubelet runs them: each
// starts once in the pod's ready sandbox when it appears in the spec
// (even before the init containers are done), through the same path as
// the pod's containers (startContainer, as ephemeral.Container), and is
// never restarted: once the runtime has had it, in any sandbox of the pod,
// it is left as it ended (garbage collection keeps it, so that it is not
// started again). With a targetContainerName it joins the PID namespace of
// that container's running instance (CRI NamespaceMode TARGET), unless the
// pod shares one namespace already (shareProcessNamespace, hostPID). Its
// status is reported in status.ephemeralContainerStatuses; it stops with
// the pod.

// ephemeralActions returns the indexes of p's ephemeral containers to
// start, and the ids of ephemeral containers the runtime created but never
// started (the agent stopped in between, or the start failed), which are
// removed and started again: they never ran. It is pure.
func ephemeralActions(p *corev1.Pod, rt *podRuntime) (start []int, remove []string) {
	for i, ec := range p.GetSpec().GetEphemeralContainers() {
		cur := rt.latest(ec.GetName(), "")
		switch {
		case cur == nil:
			start = append(start, i)
		case !cur.running() && !cur.exited():
			remove = append(remove, cur.ID)
			start = append(start, i)
		}
	}
	return start, remove
}

// ephemeralOptions is what an ephemeral container's CRI config has beyond
// a container's.
type ephemeralOptions struct {
	StdinOnce bool
	// TargetID is the running container whose PID namespace it joins (""
	// for none).
	TargetID string
}

// ephemeralOptionsOf returns the options of the container named name when
// it is one of p's ephemeral containers (nil otherwise), or an error when
// its target is not running, as the kubelet's getTargetID.
func ephemeralOptionsOf(p *corev1.Pod, name string, rt *podRuntime) (*ephemeralOptions, error) {
	ec := ephemeral.Find(p.GetSpec(), name)
	if ec == nil {
		return nil, nil
	}
	o := &ephemeralOptions{StdinOnce: ec.GetStdinOnce()}
	if t := ec.GetTargetContainerName(); t != "" {
		cur := rt.latest(t, "")
		if cur == nil || !cur.running() {
			return nil, fmt.Errorf("unable to find target container %s", t)
		}
		o.TargetID = cur.ID
	}
	return o, nil
}

// applyEphemeral adds o to an ephemeral container's config: stdinOnce, and
// the target's PID namespace where the container would have its own.
func applyEphemeral(cfg *runtimeapi.ContainerConfig, o *ephemeralOptions) {
	if o == nil {
		return
	}
	cfg.StdinOnce = o.StdinOnce
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if o.TargetID != "" && ns != nil && ns.Pid == runtimeapi.NamespaceMode_CONTAINER {
		ns.Pid = runtimeapi.NamespaceMode_TARGET
		ns.TargetId = o.TargetID
	}
}

// ephemeralStatuses are the statuses of p's ephemeral containers, in spec
// order: their state as a container's (ContainerCreating until created),
// never ready, with no started flag (no probe ever runs for them), as the
// kubelet reports them.
func ephemeralStatuses(in statusInput) []*corev1.ContainerStatus {
	ecs := in.Pod.GetSpec().GetEphemeralContainers()
	if len(ecs) == 0 {
		return nil
	}
	old := map[string]*corev1.ContainerStatus{}
	for _, cs := range in.Pod.GetStatus().GetEphemeralContainerStatuses() {
		old[cs.GetName()] = cs
	}
	out := make([]*corev1.ContainerStatus, 0, len(ecs))
	for _, ec := range ecs {
		cs := containerStatus(in, ephemeral.Container(ec), false, reasonContainerCreating, old[ec.GetName()])
		cs.Ready, cs.Started, cs.LastState = false, nil, nil
		out = append(out, cs)
	}
	return out
}
