package agent

import (
	"fmt"
	"slices"

	corev1 "skiff.dev/proto/core/v1"
)

// podActions is what one sync of a pod must do, decided by computeActions
// from the pod's spec and what the runtime holds; the executor (sync.go)
// does it. The order of execution is: kill, remove, stop the sandbox,
// create a sandbox, start the init containers, start the containers.
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
	// InitStart are the indexes of the init containers to start, in
	// order: the next one in the pod's initialization, and sidecars to
	// restart.
	InitStart []int
	// Start are the indexes of spec.containers to start.
	Start []int
	// EphemeralStart are the indexes of spec.ephemeralContainers to start
	// (once each: ephemeral.go).
	EphemeralStart []int
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
// rt, what the runtime holds for p's uid (newest first), unhealthy, the
// containers (by id) whose liveness or startup probe failed, with the
// probe's message, and started, those whose startup probe passed. It is
// pure.
func computeActions(p *corev1.Pod, rt *podRuntime, unhealthy map[string]string, started map[string]bool) podActions {
	a := podActions{}
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
			a.InitStart = []int{0}
		} else {
			for i := range spec.GetContainers() {
				a.Start = append(a.Start, i)
			}
		}
		return a
	}
	a.SandboxID = sb.ID

	// Ephemeral containers start in the ready sandbox, initialized or not.
	var never []string
	a.EphemeralStart, never = ephemeralActions(p, rt)
	for _, id := range never {
		a.Remove = appendUnique(a.Remove, id)
	}

	// Init containers, in order: each regular one to completion, each
	// sidecar until started; sidecars are kept running.
	init := initActions(p, rt, sb.ID, unhealthy, started)
	a.InitStart, a.Kill = init.start, init.kill
	for _, id := range init.remove {
		a.Remove = appendUnique(a.Remove, id)
	}
	if !init.initialized {
		return a
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

// initDecision is what initActions decides for the init containers.
type initDecision struct {
	start  []int // init containers to start, in order
	kill   []killAction
	remove []string
	// initialized: the main containers may run (every regular init
	// container completed and every sidecar started, or a main container
	// was already created in this sandbox).
	initialized bool
	// failed: a regular init container failed under restartPolicy Never;
	// the pod is over.
	failed bool
}

// initActions decides the init containers of p in sandbox sb, as the
// kubelet's computeInitContainerActions: it walks them from the last, to
// find the furthest one that ran (completed ones may have been removed);
// the one after it starts when it completed (a regular one) or started (a
// sidecar), and every sidecar before it is kept running: restarted when it
// exited, failed its startup or liveness probe, or its spec changed. Once
// the pod is initialized only the sidecars matter. It is pure.
func initActions(p *corev1.Pod, rt *podRuntime, sb string, unhealthy map[string]string, started map[string]bool) initDecision {
	inits := p.GetSpec().GetInitContainers()
	var d initDecision
	if len(inits) == 0 {
		d.initialized = true
		return d
	}
	d.initialized = mainStarted(p, rt, sb)
	past := d.initialized // the init containers before this one have run
	restart := func(i int, cur *containerInfo, msg string) {
		d.kill = append(d.kill, killAction{ID: cur.ID, Name: cur.Name, Reason: "Killing", Message: msg})
		d.start = append(d.start, i)
	}
	for i := len(inits) - 1; i >= 0; i-- {
		c := inits[i]
		sidecar := isSidecar(c)
		cur := rt.latest(c.GetName(), sb)
		if cur == nil {
			if past && sidecar {
				d.start = append(d.start, i) // removed while it should run
			}
			continue
		}
		if past && !sidecar {
			continue // completed; only sidecars are kept running
		}
		switch {
		case cur.running() && !sidecar:
			// Running to completion: wait.
		case cur.running():
			if c.GetStartupProbe() != nil && !started[cur.ID] {
				if msg, bad := unhealthy[cur.ID]; bad {
					restart(i, cur, msg) // failed its startup probe
				}
				break // not started yet: the next one waits
			}
			if i == len(inits)-1 {
				d.initialized = true
			} else if !past {
				d.start = append(d.start, i+1) // started: the next one's turn
			}
			if cur.Hash != "" && cur.Hash != containerHash(c) {
				restart(i, cur, fmt.Sprintf("Init container %s definition changed, will be restarted", c.GetName()))
			} else if msg, bad := unhealthy[cur.ID]; bad {
				restart(i, cur, msg) // failed its liveness probe
			}
		case cur.exited() && sidecar:
			d.start = append(d.start, i) // with backoff, whatever the pod's restartPolicy
		case cur.exited() && cur.ExitCode != 0:
			if restartPolicy(p) == "Never" {
				return initDecision{failed: true}
			}
			d.start = append(d.start, i)
		case cur.exited():
			if i == len(inits)-1 {
				d.initialized = true
			} else {
				d.start = append(d.start, i+1)
			}
		default:
			// Created but never started (the agent stopped in between, or
			// the start failed): replace it.
			d.remove = append(d.remove, cur.ID)
			d.start = append(d.start, i)
		}
		past = true
	}
	if !past {
		d.start = append(d.start, 0) // none has run: the first
	}
	slices.Reverse(d.start)
	return d
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
// not restart (sidecars do not keep a pod alive: they are then stopped).
func isTerminal(p *corev1.Pod, rt *podRuntime, sb string) bool {
	policy := restartPolicy(p)
	if policy == "Always" {
		return false
	}
	spec := p.GetSpec()
	if len(spec.GetInitContainers()) > 0 && !mainStarted(p, rt, sb) {
		return initActions(p, rt, sb, nil, nil).failed
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
	for _, c := range p.GetSpec().GetEphemeralContainers() {
		names[c.GetName()] = true // kept: it must not run again
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
