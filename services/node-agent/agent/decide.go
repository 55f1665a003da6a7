package agent

import (
	"fmt"

	corev1 "skiff.dev/proto/core/v1"
)

// podActions is what one sync of a pod must do, decided by computeActions
// from the pod's spec and what the runtime holds; the executor (sync.go)
// does it. The order of execution is: kill, remove, stop the sandbox,
// create a sandbox, start the init container, start the containers.
type podActions struct {
	// KillPod stops every container and sandbox of the pod (before a new
	// sandbox, or because the pod is finished).
	KillPod bool
	// Terminal: the pod has finished (Succeeded or Failed); nothing starts
	// again. KillPod is set while something still runs.
	Terminal bool
	// CreateSandbox asks for a new sandbox with Attempt.
	CreateSandbox bool
	Attempt       uint32
	// SandboxID is the ready sandbox to start containers in (when not
	// creating one).
	SandboxID string
	// NextInit is the index of the init container to start, or -1.
	NextInit int
	// Start are the indexes of spec.containers to start.
	Start []int
	// Kill are running containers to stop (unhealthy, or changed spec).
	Kill []killAction
	// Remove are dead containers no longer needed (garbage).
	Remove []string
}

// killAction stops one container.
type killAction struct {
	ID, Name string
	Reason   string // the event's reason: Killing
	Message  string
}

// restartPolicy is the pod's, defaulted.
func restartPolicy(p *corev1.Pod) string {
	if r := p.GetSpec().GetRestartPolicy(); r != "" {
		return r
	}
	return "Always"
}

// shouldRestart says whether a container that exited with code restarts.
func shouldRestart(policy string, exitCode int32) bool {
	switch policy {
	case "Never":
		return false
	case "OnFailure":
		return exitCode != 0
	}
	return true
}

// computeActions decides what to do for pod p (not being deleted), given
// rt, what the runtime holds for p's uid (newest first), and unhealthy,
// the containers (by id) whose liveness or startup probe failed, with the
// probe's message. It is pure.
func computeActions(p *corev1.Pod, rt *podRuntime, unhealthy map[string]string) podActions {
	a := podActions{NextInit: -1}
	policy := restartPolicy(p)
	spec := p.GetSpec()
	sb := rt.newestSandbox()
	a.Remove = garbage(p, rt)

	if sb != nil && isTerminal(p, rt, sb.ID) {
		a.Terminal = true
		a.KillPod = sb.Ready || anyRunning(rt)
		return a
	}

	if sb == nil || !sb.Ready {
		if sb != nil && policy == "Never" && len(rt.Containers) > 0 {
			// The sandbox died under containers that may not restart: the pod
			// is over (its containers show how it ended).
			a.Terminal = true
			a.KillPod = anyRunning(rt)
			return a
		}
		a.KillPod = sb != nil
		a.CreateSandbox = true
		if sb != nil {
			a.Attempt = sb.Attempt + 1
		}
		if len(spec.GetInitContainers()) > 0 {
			a.NextInit = 0
		} else {
			for i := range spec.GetContainers() {
				a.Start = append(a.Start, i)
			}
		}
		return a
	}
	a.SandboxID = sb.ID

	// Init containers, in order, each to completion.
	if inits := spec.GetInitContainers(); len(inits) > 0 && !mainStarted(p, rt, sb.ID) {
		next, done, failed := initProgress(inits, rt, sb.ID)
		switch {
		case failed:
			a.NextInit = next // restarted: Never made the pod terminal above
			return a
		case !done:
			c := rt.latest(inits[next].GetName(), sb.ID)
			if c != nil && c.running() {
				return a // running: wait for it to end
			}
			if c != nil && !c.exited() {
				a.Remove = appendUnique(a.Remove, c.ID) // created, never started
			}
			a.NextInit = next
			return a
		}
	}

	for i, c := range spec.GetContainers() {
		cur := rt.latest(c.GetName(), sb.ID)
		switch {
		case cur == nil:
			a.Start = append(a.Start, i)
		case cur.running():
			if msg, bad := unhealthy[cur.ID]; bad {
				a.Kill = append(a.Kill, killAction{ID: cur.ID, Name: c.GetName(), Reason: "Killing", Message: msg})
				if policy != "Never" {
					a.Start = append(a.Start, i)
				}
			} else if cur.Hash != "" && cur.Hash != containerHash(c) {
				a.Kill = append(a.Kill, killAction{ID: cur.ID, Name: c.GetName(), Reason: "Killing",
					Message: fmt.Sprintf("Container %s definition changed, will be restarted", c.GetName())})
				a.Start = append(a.Start, i)
			}
		case cur.exited():
			if shouldRestart(policy, cur.ExitCode) {
				a.Start = append(a.Start, i)
			}
		default:
			// Created but never started (the agent stopped in between, or
			// the start failed): replace it.
			a.Remove = appendUnique(a.Remove, cur.ID)
			a.Start = append(a.Start, i)
		}
	}
	return a
}

// initProgress says where p's init containers are in sandbox sb: the next
// one to run (or restart, when failed), or done.
func initProgress(inits []*corev1.Container, rt *podRuntime, sb string) (next int, done, failed bool) {
	for i := len(inits) - 1; i >= 0; i-- {
		c := rt.latest(inits[i].GetName(), sb)
		if c == nil {
			continue
		}
		switch {
		case c.running():
			return i, false, false
		case c.exited() && c.ExitCode == 0:
			if i == len(inits)-1 {
				return 0, true, false
			}
			return i + 1, false, false
		case c.exited():
			return i, false, true
		default: // created, never started
			return i, false, false
		}
	}
	return 0, false, false
}

// mainStarted reports whether any main container was created in sandbox
// sb: the init containers are then past (even if their containers were
// garbage-collected).
func mainStarted(p *corev1.Pod, rt *podRuntime, sb string) bool {
	for _, c := range p.GetSpec().GetContainers() {
		if rt.latest(c.GetName(), sb) != nil {
			return true
		}
	}
	return false
}

// isTerminal reports whether p has finished in sandbox sb: an init
// container failed under Never, or every main container ended and will
// not restart.
func isTerminal(p *corev1.Pod, rt *podRuntime, sb string) bool {
	policy := restartPolicy(p)
	if policy == "Always" {
		return false
	}
	spec := p.GetSpec()
	if inits := spec.GetInitContainers(); len(inits) > 0 && !mainStarted(p, rt, sb) {
		_, _, failed := initProgress(inits, rt, sb)
		return failed && policy == "Never"
	}
	if len(spec.GetContainers()) == 0 {
		return false
	}
	for _, c := range spec.GetContainers() {
		cur := rt.latest(c.GetName(), sb)
		if cur == nil || !cur.exited() || shouldRestart(policy, cur.ExitCode) {
			return false
		}
	}
	return true
}

func anyRunning(rt *podRuntime) bool {
	for _, c := range rt.Containers {
		if c.running() {
			return true
		}
	}
	return false
}

// garbage returns the dead containers of rt to remove: every container of
// a name but the newest two (the current and the previous, whose log and
// last state stay readable), and containers of names no longer in the
// spec, except in the newest sandbox.
func garbage(p *corev1.Pod, rt *podRuntime) []string {
	names := map[string]bool{}
	for _, c := range p.GetSpec().GetInitContainers() {
		names[c.GetName()] = true
	}
	for _, c := range p.GetSpec().GetContainers() {
		names[c.GetName()] = true
	}
	var out []string
	seen := map[string]int{}
	for _, c := range rt.Containers {
		seen[c.Name]++
		if !c.exited() {
			continue
		}
		if seen[c.Name] > 2 || !names[c.Name] {
			out = append(out, c.ID)
		}
	}
	return out
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
