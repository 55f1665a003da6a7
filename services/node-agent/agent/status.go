package agent

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/qos"
	corev1 "skiff.dev/proto/core/v1"
)

// Waiting reasons of container states, as Kubernetes names them.
const (
	reasonContainerCreating          = "ContainerCreating"
	reasonPodInitializing            = "PodInitializing"
	reasonCrashLoopBackOff           = "CrashLoopBackOff"
	reasonErrImagePull               = "ErrImagePull"
	reasonImagePullBackOff           = "ImagePullBackOff"
	reasonErrImageNeverPull          = "ErrImageNeverPull"
	reasonCreateContainerConfigError = "CreateContainerConfigError"
	reasonCreateContainerError       = "CreateContainerError"
	reasonRunContainerError          = "RunContainerError"
)

// statusInput is what a pod's status is computed from.
type statusInput struct {
	Pod     *corev1.Pod // spec, and the status last written
	Runtime *podRuntime // the pod's uid, newest first, after this sync's actions
	// Waiting are the reasons this sync found for containers not running
	// (ErrImagePull, CrashLoopBackOff...), by container name.
	Waiting map[string]*corev1.ContainerStateWaiting
	// Ready and Started are the readiness and startup probe results by
	// container id (absent: no result yet).
	Ready, Started map[string]bool
	HostIP         string
	RuntimeName    string // the containerID scheme: "containerd"
	Now            time.Time
}

// computeStatus is the pod's status: phase, conditions, addresses and the
// state of each container. It is pure.
func computeStatus(in statusInput) *corev1.PodStatus {
	p, rt := in.Pod, in.Runtime
	old := p.GetStatus()
	spec := p.GetSpec()
	now := timestamppb.New(in.Now)
	st := &corev1.PodStatus{
		HostIp:   in.HostIP,
		PodIp:    old.GetPodIp(),
		QosClass: qos.Of(p),
	}
	if old.GetStartTime() != nil {
		st.StartTime = old.GetStartTime()
	} else {
		st.StartTime = now
	}
	if sb := rt.newestSandbox(); sb != nil && sb.Ready {
		if spec.GetHostNetwork() {
			st.PodIp = in.HostIP
		} else if sb.IP != "" {
			st.PodIp = sb.IP
		}
	}
	if st.PodIp != "" {
		st.PodIps = []*corev1.PodIP{{Ip: st.PodIp}}
	}

	oldStatuses := map[string]*corev1.ContainerStatus{}
	for _, cs := range append(old.GetInitContainerStatuses(), old.GetContainerStatuses()...) {
		oldStatuses[cs.GetName()] = cs
	}
	for _, c := range spec.GetInitContainers() {
		st.InitContainerStatuses = append(st.InitContainerStatuses, containerStatus(in, c, true, reasonPodInitializing, oldStatuses[c.GetName()]))
	}
	initDone := len(spec.GetInitContainers()) == 0
	if s := rt.newestSandbox(); s != nil && !initDone {
		initDone = podInitialized(p, rt, s.ID, in.Started, st.InitContainerStatuses) // sidecar.go
	}
	defaultWaiting := reasonContainerCreating
	if !initDone {
		defaultWaiting = reasonPodInitializing
	}
	for _, c := range spec.GetContainers() {
		st.ContainerStatuses = append(st.ContainerStatuses, containerStatus(in, c, false, defaultWaiting, oldStatuses[c.GetName()]))
	}
	st.EphemeralContainerStatuses = ephemeralStatuses(in) // ephemeral.go

	st.Phase = podPhase(p, rt, st, initDone)
	if ph := old.GetPhase(); ph == "Succeeded" || ph == "Failed" {
		st.Phase = ph // a finished pod never runs again
		st.Reason, st.Message = old.GetReason(), old.GetMessage()
	}

	// Conditions: the ones the agent owns, then any other kept as it was.
	var notInit []string
	if !initDone {
		notInit = incompleteInits(spec, st.InitContainerStatuses)
	}
	notReady := unreadySidecars(spec, st.InitContainerStatuses) // they count for ContainersReady
	for _, cs := range st.ContainerStatuses {
		if !cs.GetReady() {
			notReady = append(notReady, cs.GetName())
		}
	}
	finished := st.Phase == "Succeeded" || st.Phase == "Failed"
	conds := []*corev1.PodCondition{{Type: "PodScheduled", Status: "True"}}
	// PodReadyToStartContainers (Kubernetes' name since 1.29, was
	// PodHasNetwork): the pod's sandbox exists and has its network.
	if s := rt.newestSandbox(); s != nil && s.Ready {
		conds = append(conds, &corev1.PodCondition{Type: podReadyToStartContainers, Status: "True"})
	} else {
		conds = append(conds, &corev1.PodCondition{Type: podReadyToStartContainers, Status: "False"})
	}
	if initDone {
		conds = append(conds, &corev1.PodCondition{Type: "Initialized", Status: "True"})
	} else {
		conds = append(conds, &corev1.PodCondition{Type: "Initialized", Status: "False", Reason: "ContainersNotInitialized",
			Message: fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(notInit, " "))})
	}
	for _, typ := range []string{"ContainersReady", "Ready"} {
		switch {
		case finished:
			conds = append(conds, &corev1.PodCondition{Type: typ, Status: "False", Reason: "PodCompleted"})
		case len(notReady) == 0:
			conds = append(conds, &corev1.PodCondition{Type: typ, Status: "True"})
		default:
			conds = append(conds, &corev1.PodCondition{Type: typ, Status: "False", Reason: "ContainersNotReady",
				Message: fmt.Sprintf("containers with unready status: [%s]", strings.Join(notReady, " "))})
		}
	}
	// Ready also waits for the readiness gates (readinessgates.go).
	conds[len(conds)-1] = withReadinessGates(conds[len(conds)-1], spec.GetReadinessGates(), old.GetConditions())
	oldConds := map[string]*corev1.PodCondition{}
	for _, c := range old.GetConditions() {
		oldConds[c.GetType()] = c
	}
	for _, c := range conds {
		if o, ok := oldConds[c.Type]; ok && o.GetStatus() == c.Status {
			c.LastTransitionTime = o.GetLastTransitionTime()
			if c.Type == "PodScheduled" {
				c.Reason, c.Message = o.GetReason(), o.GetMessage()
			}
		} else {
			c.LastTransitionTime = now
		}
	}
	for _, c := range old.GetConditions() {
		if !ownedCondition[c.GetType()] {
			conds = append(conds, proto.Clone(c).(*corev1.PodCondition))
		}
	}
	st.Conditions = conds
	return st
}

// ownedCondition are the types of the pod conditions the agent computes.
// The others (DisruptionTarget, a readiness gate's) belong to whoever
// wrote them.
var ownedCondition = map[string]bool{"PodScheduled": true, podReadyToStartContainers: true, "Initialized": true, "ContainersReady": true, "Ready": true}

// podReadyToStartContainers is the condition type saying the pod's sandbox
// is ready (skiffctl describe's "Sandbox ready").
const podReadyToStartContainers = "PodReadyToStartContainers"

// withOthers returns st with the conditions the agent does not own as
// they are in api (the pod's status in the API), after its own.
func withOthers(st, api *corev1.PodStatus) *corev1.PodStatus {
	var mine, theirs []*corev1.PodCondition
	for _, c := range st.GetConditions() {
		if ownedCondition[c.GetType()] {
			mine = append(mine, c)
		}
	}
	for _, c := range api.GetConditions() {
		if !ownedCondition[c.GetType()] {
			theirs = append(theirs, proto.Clone(c).(*corev1.PodCondition))
		}
	}
	if len(mine)+len(theirs) == len(st.GetConditions()) && slices.EqualFunc(theirs, st.GetConditions()[len(mine):], func(a, b *corev1.PodCondition) bool {
		return proto.Equal(a, b)
	}) {
		return st
	}
	out := proto.Clone(st).(*corev1.PodStatus)
	out.Conditions = append(mine, theirs...)
	return out
}

// containerStatus is one container's status: the newest instance's state
// (or the waiting reason of this sync), the previous instance as the last
// state, and readiness.
func containerStatus(in statusInput, c *corev1.Container, init bool, defaultWaiting string, old *corev1.ContainerStatus) *corev1.ContainerStatus {
	rt := in.Runtime
	name := c.GetName()
	cs := &corev1.ContainerStatus{Name: name, Image: c.GetImage()}
	cur := rt.latest(name, "")
	waiting := in.Waiting[name]
	started := false
	if cur == nil {
		if waiting == nil {
			waiting = &corev1.ContainerStateWaiting{Reason: defaultWaiting}
		}
		cs.State = &corev1.ContainerState{Waiting: proto.Clone(waiting).(*corev1.ContainerStateWaiting)}
		cs.Started = &started
		return cs
	}
	cs.ContainerId = containerID(in.RuntimeName, cur.ID)
	cs.ImageId = cur.ImageRef
	cs.RestartCount = cur.RestartCount
	switch {
	case cur.running():
		cs.State = &corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: timestamp(cur.StartedAt)}}
		if prev := rt.previous(name); prev != nil && prev.exited() {
			cs.LastState = &corev1.ContainerState{Terminated: terminated(in.RuntimeName, prev)}
		}
		started = c.GetStartupProbe() == nil || in.Started[cur.ID]
		switch {
		case !started:
		case c.GetReadinessProbe() == nil:
			cs.Ready = true
		default:
			ready, known := in.Ready[cur.ID]
			if !known {
				// No result yet: a container the agent finds running (it
				// restarted) keeps the readiness it had.
				ready = old.GetContainerId() == cs.ContainerId && old.GetReady()
			}
			cs.Ready = ready
		}
	case cur.exited():
		t := terminated(in.RuntimeName, cur)
		if waiting != nil {
			cs.State = &corev1.ContainerState{Waiting: proto.Clone(waiting).(*corev1.ContainerStateWaiting)}
			cs.LastState = &corev1.ContainerState{Terminated: t}
		} else {
			cs.State = &corev1.ContainerState{Terminated: t}
			if prev := rt.previous(name); prev != nil && prev.exited() {
				cs.LastState = &corev1.ContainerState{Terminated: terminated(in.RuntimeName, prev)}
			}
			cs.Ready = init && !isSidecar(c) && t.GetExitCode() == 0
		}
	default:
		if waiting == nil {
			waiting = &corev1.ContainerStateWaiting{Reason: reasonContainerCreating}
		}
		cs.State = &corev1.ContainerState{Waiting: proto.Clone(waiting).(*corev1.ContainerStateWaiting)}
	}
	cs.Started = &started
	return cs
}

func containerID(runtimeName, id string) string { return runtimeName + "://" + id }

func terminated(runtimeName string, c *containerInfo) *corev1.ContainerStateTerminated {
	reason := c.Reason
	if reason == "" {
		reason = "Completed"
		if c.ExitCode != 0 {
			reason = "Error"
		}
	}
	return &corev1.ContainerStateTerminated{
		ExitCode: c.ExitCode, Reason: reason, Message: c.Message,
		StartedAt: timestamp(c.StartedAt), FinishedAt: timestamp(c.FinishedAt),
		ContainerId: containerID(runtimeName, c.ID),
	}
}

func timestamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// podPhase is Kubernetes' getPhase over the computed container statuses.
func podPhase(p *corev1.Pod, rt *podRuntime, st *corev1.PodStatus, initDone bool) string {
	policy := restartPolicy(p)
	if !initDone {
		if sb := rt.newestSandbox(); sb != nil && policy == "Never" {
			if initActions(p, rt, sb.ID, nil, nil).failed {
				return "Failed"
			}
		}
		return "Pending"
	}
	var running, waiting, stopped, succeeded, failed int
	for _, cs := range st.GetContainerStatuses() {
		s := cs.GetState()
		switch {
		case s.GetRunning() != nil:
			running++
		case s.GetTerminated() != nil:
			stopped++
			if s.GetTerminated().GetExitCode() == 0 {
				succeeded++
			} else {
				failed++
			}
		case s.GetWaiting() != nil && cs.GetLastState().GetTerminated() != nil:
			stopped++
			if cs.GetLastState().GetTerminated().GetExitCode() == 0 {
				succeeded++
			} else {
				failed++
			}
		default:
			waiting++
		}
	}
	r, w := sidecarPhaseCounts(p.GetSpec(), st.GetInitContainerStatuses()) // sidecar.go
	running, waiting = running+r, waiting+w
	switch {
	case waiting > 0:
		return "Pending"
	case running > 0:
		return "Running"
	case stopped > 0:
		switch policy {
		case "Always":
			return "Running"
		case "OnFailure":
			if stopped == succeeded {
				return "Succeeded"
			}
			return "Running"
		default:
			if failed > 0 {
				return "Failed"
			}
			return "Succeeded"
		}
	}
	return "Pending"
}

// podRunning reports whether a status shows the pod started: Running with
// every container running (the pod start latency's end).
func podRunning(st *corev1.PodStatus) bool {
	if st.GetPhase() != "Running" {
		return false
	}
	for _, cs := range st.GetContainerStatuses() {
		if cs.GetState().GetRunning() == nil {
			return false
		}
	}
	return true
}
