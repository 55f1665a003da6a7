package agent

import (
	"slices"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "skiff.dev/proto/core/v1"
)

// debugged is specPod with ephemeral containers named names (the first
// targets a).
func debugged(policy string, inits []string, names ...string) *corev1.Pod {
	p := specPod(policy, inits...)
	for i, n := range names {
		ec := &corev1.EphemeralContainer{Name: n, Image: "busybox:1.36", Stdin: true, StdinOnce: true, Tty: true}
		if i == 0 {
			ec.TargetContainerName = "a"
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
	}
	return p
}

// TestEphemeralDecisions: an ephemeral container starts once, in the ready
// sandbox, even while init containers run; never again once it ran, in
// any sandbox; one created but never started is replaced; it is kept from
// garbage collection so that it is not started again.
func TestEphemeralDecisions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		rt     func(p *corev1.Pod) *podRuntime
		start  []int
		remove []string
	}{
		{"new: started", debugged("Always", nil, "dbg"), func(p *corev1.Pod) *podRuntime {
			return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", running, 0, 0), cinfo("b1", "s1", "b", running, 0, 0))
		}, []int{0}, nil},
		{"running: left alone", debugged("Always", nil, "dbg"), func(p *corev1.Pod) *podRuntime {
			return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("d1", "s1", "dbg", running, 0, 0), cinfo("a1", "s1", "a", running, 0, 0), cinfo("b1", "s1", "b", running, 0, 0))
		}, nil, nil},
		{"exited: never restarted, not garbage", debugged("Always", nil, "dbg"), func(p *corev1.Pod) *podRuntime {
			return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("d1", "s1", "dbg", exited, 1, 0), cinfo("a1", "s1", "a", running, 0, 0), cinfo("b1", "s1", "b", running, 0, 0))
		}, nil, nil},
		{"ran in an earlier sandbox: not again", debugged("Always", nil, "dbg"), func(p *corev1.Pod) *podRuntime {
			return runtimeOf(p, []*sandboxInfo{readySB("s2", 1), deadSB("s1", 0)}, cinfo("a2", "s2", "a", running, 0, 1), cinfo("b2", "s2", "b", running, 0, 1), cinfo("d1", "s1", "dbg", exited, 137, 0))
		}, nil, nil},
		{"created, never started: replaced", debugged("Always", nil, "dbg", "two"), func(p *corev1.Pod) *podRuntime {
			return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("d1", "s1", "dbg", created, 0, 0), cinfo("a1", "s1", "a", running, 0, 0), cinfo("b1", "s1", "b", running, 0, 0))
		}, []int{0, 1}, []string{"d1"}},
		{"while an init container runs", debugged("Always", []string{"init"}, "dbg"), func(p *corev1.Pod) *podRuntime {
			return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("i1", "s1", "init", running, 0, 0))
		}, []int{0}, nil},
		{"no sandbox yet: the sandbox first", debugged("Always", nil, "dbg"), func(p *corev1.Pod) *podRuntime {
			return runtimeOf(p, nil)
		}, nil, nil},
		{"finished pod: nothing", debugged("Never", nil, "dbg"), func(p *corev1.Pod) *podRuntime {
			return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", exited, 0, 0), cinfo("b1", "s1", "b", exited, 0, 0))
		}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := computeActions(tc.pod, tc.rt(tc.pod), nil, nil)
			if !slices.Equal(a.EphemeralStart, tc.start) {
				t.Errorf("EphemeralStart %v, want %v", a.EphemeralStart, tc.start)
			}
			if !slices.Equal(a.Remove, tc.remove) {
				t.Errorf("Remove %v, want %v", a.Remove, tc.remove)
			}
			if slices.Contains(a.Start, 2) {
				t.Errorf("Start %v names an ephemeral container", a.Start)
			}
		})
	}
}

func TestEphemeralOptions(t *testing.T) {
	p := debugged("Always", nil, "dbg", "plain")
	rt := runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", running, 0, 0))
	o, err := ephemeralOptionsOf(p, "dbg", rt)
	if err != nil || o == nil || o.TargetID != "a1" || !o.StdinOnce {
		t.Fatalf("dbg: %+v, %v; want target a1, stdinOnce", o, err)
	}
	if o, err := ephemeralOptionsOf(p, "plain", rt); err != nil || o == nil || o.TargetID != "" {
		t.Errorf("plain: %+v, %v", o, err)
	}
	if o, err := ephemeralOptionsOf(p, "a", rt); o != nil || err != nil {
		t.Errorf("a regular container: %+v, %v", o, err)
	}
	stopped := runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", exited, 0, 0))
	if _, err := ephemeralOptionsOf(p, "dbg", stopped); err == nil || err.Error() != "unable to find target container a" {
		t.Errorf("target exited: %v", err)
	}

	// The CRI config: TARGET where the container would have its own PID
	// namespace; the pod's shared one wins.
	for _, tc := range []struct {
		name    string
		share   bool
		hostPID bool
		want    runtimeapi.NamespaceMode
		target  string
	}{
		{"own namespace", false, false, runtimeapi.NamespaceMode_TARGET, "a1"},
		{"shareProcessNamespace", true, false, runtimeapi.NamespaceMode_POD, ""},
		{"hostPID", false, true, runtimeapi.NamespaceMode_NODE, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := debugged("Always", nil, "dbg")
			q.Spec.ShareProcessNamespace, q.Spec.HostPid = &tc.share, tc.hostPID
			cfg, err := containerConfig(q, q.Spec.Containers[0], containerParams{Ephemeral: &ephemeralOptions{StdinOnce: true, TargetID: "a1"}})
			if err != nil {
				t.Fatal(err)
			}
			ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
			if ns.GetPid() != tc.want || ns.GetTargetId() != tc.target || !cfg.GetStdinOnce() {
				t.Errorf("pid %v target %q stdinOnce %v; want %v %q true", ns.GetPid(), ns.GetTargetId(), cfg.GetStdinOnce(), tc.want, tc.target)
			}
		})
	}
}

func TestEphemeralStatuses(t *testing.T) {
	p := debugged("Always", nil, "dbg", "later", "done")
	run := cinfo("d1", "s1", "dbg", running, 0, 0)
	run.StartedAt = t0
	end := cinfo("x1", "s1", "done", exited, 3, 0)
	end.StartedAt, end.FinishedAt = t0, t0.Add(1)
	rt := runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, run, end, cinfo("a1", "s1", "a", running, 0, 0), cinfo("b1", "s1", "b", running, 0, 0))
	st := computeStatus(statusInput{Pod: p, Runtime: rt, Waiting: map[string]*corev1.ContainerStateWaiting{}, RuntimeName: "containerd", Now: t0})
	got := st.GetEphemeralContainerStatuses()
	if len(got) != 3 {
		t.Fatalf("ephemeralContainerStatuses: %v", got)
	}
	var lines []string
	for _, cs := range got {
		lines = append(lines, cs.GetName()+" "+stateOf(cs.GetState())+" "+cs.GetContainerId()+" "+cs.GetImage())
		if cs.GetReady() || cs.Started != nil {
			t.Errorf("%s: ready %v started %v, want false and unset", cs.GetName(), cs.GetReady(), cs.Started)
		}
	}
	want := "dbg running containerd://d1 busybox:1.36\nlater waiting:ContainerCreating  busybox:1.36\ndone terminated:3 containerd://x1 busybox:1.36"
	if s := strings.Join(lines, "\n"); s != want {
		t.Errorf("statuses:\n%s\nwant:\n%s", s, want)
	}
	if st.GetPhase() != "Running" || len(st.GetContainerStatuses()) != 2 {
		t.Errorf("phase %s with %d container statuses: the ephemeral ones count for neither", st.GetPhase(), len(st.GetContainerStatuses()))
	}
}
