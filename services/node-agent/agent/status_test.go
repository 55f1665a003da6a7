package agent

import (
	"strconv"
	"testing"
	"time"

	corev1 "skiff.dev/proto/core/v1"
)

func TestComputeStatus(t *testing.T) {
	started := t0.Add(time.Second)
	run := func(id, sb, name string, restarts int32) *containerInfo {
		c := cinfo(id, sb, name, running, 0, restarts)
		c.StartedAt = started
		c.ImageRef = "docker.io/library/img@sha256:1"
		return c
	}
	end := func(id, sb, name string, code, restarts int32) *containerInfo {
		c := cinfo(id, sb, name, exited, code, restarts)
		c.StartedAt, c.FinishedAt = started, started.Add(time.Second)
		return c
	}
	withProbe := func(p *corev1.Pod, i int, readiness, startupProbe bool) *corev1.Pod {
		if readiness {
			p.Spec.Containers[i].ReadinessProbe = &corev1.Probe{}
		}
		if startupProbe {
			p.Spec.Containers[i].StartupProbe = &corev1.Probe{}
		}
		return p
	}
	type cwant struct {
		state   string // running, waiting:<reason>, terminated:<code>
		last    string // "", terminated:<code>
		ready   bool
		restart int32
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		rt      func(p *corev1.Pod) *podRuntime
		waiting map[string]*corev1.ContainerStateWaiting
		ready   map[string]bool
		started map[string]bool
		phase   string
		podIP   string
		conds   map[string]string // type -> status
		a, b    cwant
	}{
		{name: "nothing yet: Pending, ContainerCreating", pod: specPod("Always"),
			rt: func(p *corev1.Pod) *podRuntime { return runtimeOf(p, nil) }, phase: "Pending",
			conds: map[string]string{"PodScheduled": "True", "PodReadyToStartContainers": "False", "Initialized": "True", "ContainersReady": "False", "Ready": "False"},
			a:     cwant{state: "waiting:ContainerCreating"}, b: cwant{state: "waiting:ContainerCreating"}},
		{name: "all running: Running and Ready", pod: specPod("Always"),
			rt: func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, run("a1", "s1", "a", 0), run("b1", "s1", "b", 0))
			}, phase: "Running", podIP: "10.0.0.2",
			conds: map[string]string{"PodReadyToStartContainers": "True", "Initialized": "True", "ContainersReady": "True", "Ready": "True"},
			a:     cwant{state: "running", ready: true}, b: cwant{state: "running", ready: true}},
		{name: "one waiting on its image: Pending", pod: specPod("Always"),
			rt: func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, run("a1", "s1", "a", 0))
			}, waiting: map[string]*corev1.ContainerStateWaiting{"b": {Reason: reasonErrImagePull, Message: "nope"}},
			phase: "Pending", podIP: "10.0.0.2", conds: map[string]string{"Ready": "False"},
			a: cwant{state: "running", ready: true}, b: cwant{state: "waiting:ErrImagePull"}},
		{name: "crash loop: Running, waiting with the last termination", pod: specPod("Always"),
			rt: func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, end("a2", "s1", "a", 1, 1), end("a1", "s1", "a", 1, 0), run("b1", "s1", "b", 0))
			}, waiting: map[string]*corev1.ContainerStateWaiting{"a": {Reason: reasonCrashLoopBackOff}},
			phase: "Running", podIP: "10.0.0.2", conds: map[string]string{"Ready": "False", "ContainersReady": "False"},
			a: cwant{state: "waiting:CrashLoopBackOff", last: "terminated:1", restart: 1}, b: cwant{state: "running", ready: true}},
		{name: "restarted: the previous instance is the last state", pod: specPod("Always"),
			rt: func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, run("a2", "s1", "a", 1), end("a1", "s1", "a", 2, 0), run("b1", "s1", "b", 0))
			}, phase: "Running", podIP: "10.0.0.2",
			a: cwant{state: "running", last: "terminated:2", ready: true, restart: 1}, b: cwant{state: "running", ready: true}},
		{name: "readiness not passed yet: not ready", pod: withProbe(specPod("Always"), 0, true, false),
			rt: func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, run("a1", "s1", "a", 0), run("b1", "s1", "b", 0))
			}, phase: "Running", podIP: "10.0.0.2", conds: map[string]string{"ContainersReady": "False", "Ready": "False"},
			a: cwant{state: "running"}, b: cwant{state: "running", ready: true}},
		{name: "readiness passed: ready", pod: withProbe(specPod("Always"), 0, true, false),
			rt: func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, run("a1", "s1", "a", 0), run("b1", "s1", "b", 0))
			}, ready: map[string]bool{"a1": true}, phase: "Running", podIP: "10.0.0.2", conds: map[string]string{"Ready": "True"},
			a: cwant{state: "running", ready: true}, b: cwant{state: "running", ready: true}},
		{name: "startup probe not passed: not ready even with readiness", pod: withProbe(specPod("Always"), 0, true, true),
			rt: func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, run("a1", "s1", "a", 0), run("b1", "s1", "b", 0))
			}, ready: map[string]bool{"a1": true}, phase: "Running", podIP: "10.0.0.2", conds: map[string]string{"Ready": "False"},
			a: cwant{state: "running"}, b: cwant{state: "running", ready: true}},
		{name: "Never, one failed: Failed, PodCompleted", pod: specPod("Never"),
			rt: func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{deadSB("s1", 0)}, end("a1", "s1", "a", 0, 0), end("b1", "s1", "b", 7, 0))
			}, phase: "Failed", conds: map[string]string{"PodReadyToStartContainers": "False", "Ready": "False"},
			a: cwant{state: "terminated:0"}, b: cwant{state: "terminated:7"}},
		{name: "OnFailure, all succeeded: Succeeded", pod: specPod("OnFailure"),
			rt: func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, end("a1", "s1", "a", 0, 0), end("b1", "s1", "b", 0, 0))
			}, phase: "Succeeded", podIP: "10.0.0.2",
			a: cwant{state: "terminated:0"}, b: cwant{state: "terminated:0"}},
		{name: "init running: Pending, PodInitializing", pod: specPod("Always", "i1"),
			rt: func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, run("i1a", "s1", "i1", 0))
			}, phase: "Pending", podIP: "10.0.0.2", conds: map[string]string{"PodReadyToStartContainers": "True", "Initialized": "False"},
			a: cwant{state: "waiting:PodInitializing"}, b: cwant{state: "waiting:PodInitializing"}},
		{name: "init failed under Never: Failed", pod: specPod("Never", "i1"),
			rt: func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{deadSB("s1", 0)}, end("i1a", "s1", "i1", 1, 0))
			}, phase: "Failed", conds: map[string]string{"Initialized": "False"},
			a: cwant{state: "waiting:PodInitializing"}, b: cwant{state: "waiting:PodInitializing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := computeStatus(statusInput{
				Pod: tc.pod, Runtime: tc.rt(tc.pod), Waiting: tc.waiting, Ready: tc.ready, Started: tc.started,
				HostIP: "192.168.1.1", RuntimeName: "containerd", Now: t0,
			})
			if st.GetPhase() != tc.phase || st.GetPodIp() != tc.podIP || st.GetHostIp() != "192.168.1.1" {
				t.Errorf("phase %s podIP %q hostIP %q; want %s %q", st.GetPhase(), st.GetPodIp(), st.GetHostIp(), tc.phase, tc.podIP)
			}
			got := map[string]string{}
			for _, c := range st.GetConditions() {
				got[c.GetType()] = c.GetStatus()
				if !c.GetLastTransitionTime().AsTime().Equal(t0) {
					t.Errorf("condition %s transition %v", c.GetType(), c.GetLastTransitionTime())
				}
			}
			for typ, s := range tc.conds {
				if got[typ] != s {
					t.Errorf("condition %s = %q, want %q", typ, got[typ], s)
				}
			}
			for i, w := range []cwant{tc.a, tc.b} {
				cs := st.GetContainerStatuses()[i]
				if s := stateOf(cs.GetState()); s != w.state {
					t.Errorf("%s state %s, want %s", cs.GetName(), s, w.state)
				}
				if s := stateOf(cs.GetLastState()); s != w.last {
					t.Errorf("%s last state %q, want %q", cs.GetName(), s, w.last)
				}
				if cs.GetReady() != w.ready || cs.GetRestartCount() != w.restart {
					t.Errorf("%s ready %v restarts %d, want %v %d", cs.GetName(), cs.GetReady(), cs.GetRestartCount(), w.ready, w.restart)
				}
			}
		})
	}
}

func stateOf(s *corev1.ContainerState) string {
	switch {
	case s.GetRunning() != nil:
		return "running"
	case s.GetWaiting() != nil:
		return "waiting:" + s.GetWaiting().GetReason()
	case s.GetTerminated() != nil:
		return "terminated:" + strconv.Itoa(int(s.GetTerminated().GetExitCode()))
	}
	return ""
}

func TestComputeStatusKeepsTransitionTimesAndFinishedPhases(t *testing.T) {
	p := specPod("Always")
	rt := runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", running, 0, 0), cinfo("b1", "s1", "b", running, 0, 0))
	first := computeStatus(statusInput{Pod: p, Runtime: rt, RuntimeName: "containerd", Now: t0})
	p.Status = first
	later := computeStatus(statusInput{Pod: p, Runtime: rt, RuntimeName: "containerd", Now: t0.Add(time.Minute)})
	for _, c := range later.GetConditions() {
		if !c.GetLastTransitionTime().AsTime().Equal(t0) {
			t.Errorf("condition %s moved its transition time", c.GetType())
		}
	}
	if !later.GetStartTime().AsTime().Equal(t0) {
		t.Errorf("startTime moved")
	}
	// A pod once Succeeded stays so, whatever the runtime shows.
	p.Status = &corev1.PodStatus{Phase: "Succeeded"}
	if st := computeStatus(statusInput{Pod: p, Runtime: rt, RuntimeName: "containerd", Now: t0}); st.GetPhase() != "Succeeded" {
		t.Errorf("phase %s", st.GetPhase())
	}
	// A restarted agent without readiness results keeps the readiness the
	// same container had.
	p = withReadiness(specPod("Always"))
	rt = runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", running, 0, 0), cinfo("b1", "s1", "b", running, 0, 0))
	p.Status = &corev1.PodStatus{ContainerStatuses: []*corev1.ContainerStatus{{Name: "a", ContainerId: "containerd://a1", Ready: true}}}
	if st := computeStatus(statusInput{Pod: p, Runtime: rt, RuntimeName: "containerd", Now: t0}); !st.GetContainerStatuses()[0].GetReady() {
		t.Errorf("readiness lost across a restart")
	}
}

func withReadiness(p *corev1.Pod) *corev1.Pod {
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
	return p
}
