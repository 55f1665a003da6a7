package agent

import (
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "skiff.dev/proto/core/v1"
)

// sidecarPod is a pod of containers a and b with init containers: s1 (a
// sidecar), i1 (a regular one), s2 (a sidecar with a startup probe).
func sidecarPod(policy string) *corev1.Pod {
	p := specPod(policy, "s1", "i1", "s2")
	always := "Always"
	p.Spec.InitContainers[0].RestartPolicy = &always
	p.Spec.InitContainers[2].RestartPolicy = &always
	p.Spec.InitContainers[2].StartupProbe = &corev1.Probe{}
	return p
}

// TestComputeActionsWithSidecars: the order of start, the gate on a
// sidecar's startup, restarts whatever the pod's restartPolicy, and the
// end of a pod whose main containers are done.
func TestComputeActionsWithSidecars(t *testing.T) {
	sb := []*sandboxInfo{readySB("sb", 0)}
	c := func(id, name string, state runtimeapi.ContainerState, exit int32) *containerInfo {
		return cinfo(id, "sb", name, state, exit, 0)
	}
	type want struct {
		killPod, terminal bool
		initStart, start  []int
		kill, remove      []string
	}
	for _, tc := range []struct {
		name      string
		policy    string
		cs        []*containerInfo // newest first
		unhealthy map[string]string
		started   map[string]bool
		want      want
	}{
		{name: "nothing yet: the first sidecar", policy: "Never",
			want: want{initStart: []int{0}}},
		{name: "the sidecar runs (no startup probe): the next init container", policy: "Never",
			cs:   []*containerInfo{c("s1a", "s1", running, 0)},
			want: want{initStart: []int{1}}},
		{name: "the sidecar created, never started: replaced", policy: "Never",
			cs:   []*containerInfo{c("s1a", "s1", created, 0)},
			want: want{initStart: []int{0}, remove: []string{"s1a"}}},
		{name: "a regular init container runs: wait", policy: "Never",
			cs: []*containerInfo{c("i1a", "i1", running, 0), c("s1a", "s1", running, 0)}},
		{name: "it completed: the second sidecar", policy: "Never",
			cs:   []*containerInfo{c("i1a", "i1", exited, 0), c("s1a", "s1", running, 0)},
			want: want{initStart: []int{2}}},
		{name: "the second sidecar runs, its startup probe has not passed: the containers wait", policy: "Never",
			cs: []*containerInfo{c("s2a", "s2", running, 0), c("i1a", "i1", exited, 0), c("s1a", "s1", running, 0)}},
		{name: "its startup probe passed: the containers", policy: "Never",
			cs:      []*containerInfo{c("s2a", "s2", running, 0), c("i1a", "i1", exited, 0), c("s1a", "s1", running, 0)},
			started: map[string]bool{"s2a": true},
			want:    want{start: []int{0, 1}}},
		{name: "its startup probe failed: restarted", policy: "Never",
			cs:        []*containerInfo{c("s2a", "s2", running, 0), c("i1a", "i1", exited, 0), c("s1a", "s1", running, 0)},
			unhealthy: map[string]string{"s2a": "Container s2 failed startup probe, will be restarted"},
			want:      want{initStart: []int{2}, kill: []string{"s2a"}}},
		{name: "a sidecar exited while the next init container runs: restarted, even under Never", policy: "Never",
			cs:   []*containerInfo{c("i1a", "i1", running, 0), c("s1a", "s1", exited, 0)},
			want: want{initStart: []int{0}}},
		{name: "a sidecar exited beside the running containers: restarted alone", policy: "Never",
			cs: []*containerInfo{c("a1", "a", running, 0), c("b1", "b", running, 0), c("s2a", "s2", running, 0),
				c("i1a", "i1", exited, 0), c("s1a", "s1", exited, 1)},
			started: map[string]bool{"s2a": true},
			want:    want{initStart: []int{0}}},
		{name: "a sidecar failed its liveness probe: killed and restarted", policy: "Always",
			cs: []*containerInfo{c("a1", "a", running, 0), c("b1", "b", running, 0), c("s2a", "s2", running, 0),
				c("i1a", "i1", exited, 0), c("s1a", "s1", running, 0)},
			unhealthy: map[string]string{"s1a": "Container s1 failed liveness probe, will be restarted"},
			started:   map[string]bool{"s2a": true},
			want:      want{initStart: []int{0}, kill: []string{"s1a"}}},
		{name: "a sidecar removed after initialization: started again, the init container not", policy: "Always",
			cs:      []*containerInfo{c("a1", "a", running, 0), c("b1", "b", running, 0), c("s2a", "s2", running, 0)},
			started: map[string]bool{"s2a": true},
			want:    want{initStart: []int{0}}},
		{name: "the containers are done under Never: terminal, the sidecars stopped", policy: "Never",
			cs: []*containerInfo{c("a1", "a", exited, 0), c("b1", "b", exited, 0), c("s2a", "s2", running, 0),
				c("i1a", "i1", exited, 0), c("s1a", "s1", running, 0)},
			want: want{terminal: true, killPod: true}},
		{name: "the containers succeeded under OnFailure while a sidecar crashed: terminal, not restarted", policy: "OnFailure",
			cs: []*containerInfo{c("a1", "a", exited, 0), c("b1", "b", exited, 0), c("s2a", "s2", running, 0),
				c("i1a", "i1", exited, 0), c("s1a", "s1", exited, 2)},
			want: want{terminal: true, killPod: true}},
		{name: "a regular init container failed under Never: terminal", policy: "Never",
			cs:   []*containerInfo{c("i1a", "i1", exited, 1), c("s1a", "s1", running, 0)},
			want: want{terminal: true, killPod: true}},
		{name: "it failed under OnFailure: restarted, the sidecar kept", policy: "OnFailure",
			cs:   []*containerInfo{c("i1a", "i1", exited, 1), c("s1a", "s1", running, 0)},
			want: want{initStart: []int{1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sidecarPod(tc.policy)
			got := computeActions(p, runtimeOf(p, sb, tc.cs...), tc.unhealthy, tc.started)
			var kills []string
			for _, k := range got.Kill {
				kills = append(kills, k.ID)
			}
			w := tc.want
			if got.KillPod != w.killPod || got.Terminal != w.terminal || !slices.Equal(got.InitStart, w.initStart) ||
				!slices.Equal(got.Start, w.start) || !slices.Equal(kills, w.kill) || !slices.Equal(got.Remove, w.remove) {
				t.Errorf("got  %+v kills %v\nwant %+v", got, kills, w)
			}
		})
	}
}

func TestInitActionsSidecarSpecChanged(t *testing.T) {
	p := sidecarPod("Always")
	s1 := cinfo("s1a", "sb", "s1", running, 0, 0)
	s1.Hash = "-"
	rt := runtimeOf(p, []*sandboxInfo{readySB("sb", 0)}, cinfo("a1", "sb", "a", running, 0, 0), cinfo("b1", "sb", "b", running, 0, 0),
		cinfo("s2a", "sb", "s2", running, 0, 0), s1)
	d := initActions(p, rt, "sb", nil, map[string]bool{"s2a": true})
	if !d.initialized || !slices.Equal(d.start, []int{0}) || len(d.kill) != 1 || d.kill[0].ID != "s1a" ||
		d.kill[0].Message != "Init container s1 definition changed, will be restarted" {
		t.Errorf("got %+v", d)
	}
}

// TestStopOrder: main containers first (with anything not a sidecar),
// then the sidecars, the last declared first.
func TestStopOrder(t *testing.T) {
	p := sidecarPod("Never")
	rt := runtimeOf(p, []*sandboxInfo{readySB("sb", 0)},
		cinfo("a1", "sb", "a", running, 0, 0), cinfo("b1", "sb", "b", exited, 0, 0), cinfo("s2a", "sb", "s2", running, 0, 0),
		cinfo("x1", "sb", "x", running, 0, 0), cinfo("i1a", "sb", "i1", exited, 0, 0), cinfo("s1a", "sb", "s1", running, 0, 0))
	names := func(groups [][]*containerInfo) string {
		var out []string
		for _, g := range groups {
			var ids []string
			for _, c := range g {
				ids = append(ids, c.ID)
			}
			out = append(out, strings.Join(ids, ","))
		}
		return strings.Join(out, " | ")
	}
	if got, want := names(stopOrder(p, rt)), "a1,x1 | s2a | s1a"; got != want {
		t.Errorf("stopOrder = %s, want %s", got, want)
	}
	if got, want := names(stopOrder(nil, rt)), "a1,s2a,x1,s1a"; got != want {
		t.Errorf("without the pod: %s, want %s", got, want)
	}
	for _, tc := range []struct {
		grace  int64
		waited time.Duration
		want   int64
	}{{30, 0, 30}, {30, 2900 * time.Millisecond, 28}, {30, time.Minute, 0}} {
		if got := graceLeft(tc.grace, tc.waited); got != tc.want {
			t.Errorf("graceLeft(%d, %v) = %d, want %d", tc.grace, tc.waited, got, tc.want)
		}
	}
}

// TestComputeStatusWithSidecars: sidecars' started and ready, the
// Initialized and ContainersReady conditions, and a phase that ignores
// them.
func TestComputeStatusWithSidecars(t *testing.T) {
	started := t0.Add(time.Second)
	run := func(id, name string) *containerInfo {
		c := cinfo(id, "sb", name, running, 0, 0)
		c.StartedAt = started
		return c
	}
	end := func(id, name string, code int32) *containerInfo {
		c := cinfo(id, "sb", name, exited, code, 0)
		c.StartedAt, c.FinishedAt = started, started.Add(time.Second)
		return c
	}
	withReadiness := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.InitContainers[0].ReadinessProbe = &corev1.Probe{}
		return p
	}
	sbs := []*sandboxInfo{readySB("sb", 0)}
	type sidecarWant struct{ state, started, ready string } // s1's and s2's
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		cs       []*containerInfo
		sandbox  []*sandboxInfo
		started  map[string]bool
		ready    map[string]bool
		waiting  map[string]*corev1.ContainerStateWaiting
		phase    string
		conds    map[string]string // type -> status, or status:message
		s1, s2   sidecarWant
		mainWait string
	}{
		{name: "s2 not started yet: Pending, not Initialized", pod: sidecarPod("Always"),
			cs:    []*containerInfo{run("s2a", "s2"), end("i1a", "i1", 0), run("s1a", "s1")},
			phase: "Pending", conds: map[string]string{"Initialized": "False:containers with incomplete status: [s2]", "ContainersReady": "False"},
			s1: sidecarWant{"running", "true", "true"}, s2: sidecarWant{"running", "false", "false"}, mainWait: "waiting:PodInitializing"},
		{name: "all running: Running, Ready", pod: sidecarPod("Always"),
			cs:      []*containerInfo{run("a1", "a"), run("b1", "b"), run("s2a", "s2"), end("i1a", "i1", 0), run("s1a", "s1")},
			started: map[string]bool{"s2a": true},
			phase:   "Running", conds: map[string]string{"Initialized": "True", "ContainersReady": "True", "Ready": "True"},
			s1: sidecarWant{"running", "true", "true"}, s2: sidecarWant{"running", "true", "true"}},
		{name: "a sidecar not ready: the pod is not", pod: withReadiness(sidecarPod("Always")),
			cs:      []*containerInfo{run("a1", "a"), run("b1", "b"), run("s2a", "s2"), end("i1a", "i1", 0), run("s1a", "s1")},
			started: map[string]bool{"s2a": true}, ready: map[string]bool{"s1a": false},
			phase: "Running", conds: map[string]string{"Initialized": "True", "ContainersReady": "False:containers with unready status: [s1]"},
			s1: sidecarWant{"running", "true", "false"}, s2: sidecarWant{"running", "true", "true"}},
		{name: "a sidecar restarting after initialization: still Running and Initialized", pod: sidecarPod("Always"),
			cs:      []*containerInfo{run("a1", "a"), run("b1", "b"), run("s2a", "s2"), end("i1a", "i1", 0), end("s1a", "s1", 1)},
			waiting: map[string]*corev1.ContainerStateWaiting{"s1": {Reason: reasonCrashLoopBackOff}},
			started: map[string]bool{"s2a": true},
			phase:   "Running", conds: map[string]string{"Initialized": "True", "ContainersReady": "False:containers with unready status: [s1]"},
			s1: sidecarWant{"waiting:CrashLoopBackOff", "false", "false"}, s2: sidecarWant{"running", "true", "true"}},
		{name: "Never, the containers done, the sidecars running: Running until they stop", pod: sidecarPod("Never"),
			cs:      []*containerInfo{end("a1", "a", 0), end("b1", "b", 0), run("s2a", "s2"), end("i1a", "i1", 0), run("s1a", "s1")},
			started: map[string]bool{"s2a": true},
			phase:   "Running",
			s1:      sidecarWant{"running", "true", "true"}, s2: sidecarWant{"running", "true", "true"}, mainWait: "terminated:0"},
		{name: "Never, the containers succeeded, the sidecars stopped: Succeeded", pod: sidecarPod("Never"),
			cs:      []*containerInfo{end("s1a", "s1", 143), end("s2a", "s2", 137), end("a1", "a", 0), end("b1", "b", 0), end("i1a", "i1", 0)},
			sandbox: []*sandboxInfo{deadSB("sb", 0)},
			phase:   "Succeeded", conds: map[string]string{"Initialized": "True", "ContainersReady": "False", "Ready": "False"},
			s1: sidecarWant{"terminated:143", "false", "false"}, s2: sidecarWant{"terminated:137", "false", "false"}, mainWait: "terminated:0"},
		{name: "a sidecar that exited 0 is not ready", pod: sidecarPod("Always"),
			cs:      []*containerInfo{run("a1", "a"), run("b1", "b"), run("s2a", "s2"), end("i1a", "i1", 0), end("s1a", "s1", 0)},
			started: map[string]bool{"s2a": true},
			phase:   "Running", conds: map[string]string{"ContainersReady": "False:containers with unready status: [s1]"},
			s1: sidecarWant{"terminated:0", "false", "false"}, s2: sidecarWant{"running", "true", "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sandbox := sbs
			if tc.sandbox != nil {
				sandbox = tc.sandbox
			}
			st := computeStatus(statusInput{
				Pod: tc.pod, Runtime: runtimeOf(tc.pod, sandbox, tc.cs...), Waiting: tc.waiting, Ready: tc.ready, Started: tc.started,
				HostIP: "192.168.1.1", RuntimeName: "containerd", Now: t0,
			})
			if st.GetPhase() != tc.phase {
				t.Errorf("phase %s, want %s", st.GetPhase(), tc.phase)
			}
			for _, c := range st.GetConditions() {
				w, ok := tc.conds[c.GetType()]
				if !ok {
					continue
				}
				got := c.GetStatus()
				if strings.Contains(w, ":") {
					got += ":" + c.GetMessage()
				}
				if got != w {
					t.Errorf("condition %s = %q, want %q", c.GetType(), got, w)
				}
			}
			for i, w := range map[int]sidecarWant{0: tc.s1, 2: tc.s2} {
				cs := st.GetInitContainerStatuses()[i]
				got := sidecarWant{stateOf(cs.GetState()), boolString(cs.GetStarted()), boolString(cs.GetReady())}
				if got != w {
					t.Errorf("%s: %+v, want %+v", cs.GetName(), got, w)
				}
			}
			if i1 := st.GetInitContainerStatuses()[1]; !i1.GetReady() {
				t.Errorf("the completed regular init container is not ready: %v", i1)
			}
			want := tc.mainWait
			if want == "" {
				want = "running"
			}
			if got := stateOf(st.GetContainerStatuses()[0].GetState()); got != want {
				t.Errorf("a: %s, want %s", got, want)
			}
		})
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
