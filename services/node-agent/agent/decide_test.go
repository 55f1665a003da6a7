package agent

import (
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

const (
	created = runtimeapi.ContainerState_CONTAINER_CREATED
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// specPod is a pod of containers a and b (and init containers, if any).
func specPod(policy string, inits ...string) *corev1.Pod {
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: "p", Namespace: "ns", Uid: "u"},
		Spec: &corev1.PodSpec{RestartPolicy: policy, Containers: []*corev1.Container{
			{Name: "a", Image: "img:1"}, {Name: "b", Image: "img:1"},
		}},
	}
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, &corev1.Container{Name: n, Image: "img:1"})
	}
	return p
}

// runtimeOf builds a pod's runtime state, newest first as given.
func runtimeOf(p *corev1.Pod, sbs []*sandboxInfo, cs ...*containerInfo) *podRuntime {
	hashes := map[string]string{}
	for _, c := range append(p.GetSpec().GetInitContainers(), p.GetSpec().GetContainers()...) {
		hashes[c.GetName()] = containerHash(c)
	}
	for _, c := range cs {
		if c.Hash == "" {
			c.Hash = hashes[c.Name]
		}
		if c.Hash == "-" {
			c.Hash = "changed"
		}
		c.UID = "u"
	}
	return &podRuntime{Sandboxes: sbs, Containers: cs}
}

func readySB(id string, attempt uint32) *sandboxInfo {
	return &sandboxInfo{ID: id, UID: "u", Attempt: attempt, Ready: true, IP: "10.0.0.2"}
}

func deadSB(id string, attempt uint32) *sandboxInfo {
	return &sandboxInfo{ID: id, UID: "u", Attempt: attempt}
}

func cinfo(id, sb, name string, state runtimeapi.ContainerState, exit int32, restarts int32) *containerInfo {
	return &containerInfo{ID: id, SandboxID: sb, Name: name, State: state, ExitCode: exit, RestartCount: restarts}
}

func TestComputeActions(t *testing.T) {
	type want struct {
		killPod, terminal, create bool
		attempt                   uint32
		sandbox                   string
		initStart                 []int
		start                     []int
		kill                      []string
		remove                    []string
	}
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		rt        func(p *corev1.Pod) *podRuntime
		unhealthy map[string]string
		want      want
	}{
		{"new pod: a sandbox and every container", specPod("Always"),
			func(p *corev1.Pod) *podRuntime { return runtimeOf(p, nil) },
			nil, want{create: true, start: []int{0, 1}}},
		{"new pod with init containers: the first init only", specPod("Always", "i1", "i2"),
			func(p *corev1.Pod) *podRuntime { return runtimeOf(p, nil) },
			nil, want{create: true, initStart: []int{0}}},
		{"all running: nothing", specPod("Always"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", running, 0, 0), cinfo("b1", "s1", "b", running, 0, 0))
			}, nil, want{sandbox: "s1"}},
		{"one missing: started", specPod("Always"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", running, 0, 0))
			}, nil, want{sandbox: "s1", start: []int{1}}},
		{"Always restarts an exit 0", specPod("Always"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", exited, 0, 0), cinfo("b1", "s1", "b", running, 0, 0))
			}, nil, want{sandbox: "s1", start: []int{0}}},
		{"OnFailure restarts a failure", specPod("OnFailure"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", exited, 2, 0), cinfo("b1", "s1", "b", exited, 0, 0))
			}, nil, want{sandbox: "s1", start: []int{0}}},
		{"OnFailure, all succeeded: terminal, sandbox stopped", specPod("OnFailure"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", exited, 0, 0), cinfo("b1", "s1", "b", exited, 0, 0))
			}, nil, want{terminal: true, killPod: true}},
		{"Never, all ended: terminal", specPod("Never"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", exited, 1, 0), cinfo("b1", "s1", "b", exited, 0, 0))
			}, nil, want{terminal: true, killPod: true}},
		{"Never, one still running: wait", specPod("Never"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", exited, 1, 0), cinfo("b1", "s1", "b", running, 0, 0))
			}, nil, want{sandbox: "s1"}},
		{"terminal with the sandbox stopped: nothing more", specPod("Never"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{deadSB("s1", 0)}, cinfo("a1", "s1", "a", exited, 0, 0), cinfo("b1", "s1", "b", exited, 0, 0))
			}, nil, want{terminal: true}},
		{"dead sandbox: kill and a new attempt", specPod("Always"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{deadSB("s1", 2)}, cinfo("a1", "s1", "a", running, 0, 0), cinfo("b1", "s1", "b", exited, 137, 0))
			}, nil, want{killPod: true, create: true, attempt: 3, start: []int{0, 1}}},
		{"dead sandbox under Never: terminal", specPod("Never"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{deadSB("s1", 0)}, cinfo("a1", "s1", "a", exited, 137, 0), cinfo("b1", "s1", "b", running, 0, 0))
			}, nil, want{terminal: true, killPod: true}},
		{"liveness failed: killed and restarted", specPod("Always"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", running, 0, 0), cinfo("b1", "s1", "b", running, 0, 0))
			}, map[string]string{"a1": "unhealthy"}, want{sandbox: "s1", kill: []string{"a1"}, start: []int{0}}},
		{"liveness failed under Never: killed only", specPod("Never"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", running, 0, 0), cinfo("b1", "s1", "b", running, 0, 0))
			}, map[string]string{"b1": "unhealthy"}, want{sandbox: "s1", kill: []string{"b1"}}},
		{"spec changed: restarted", specPod("Always"),
			func(p *corev1.Pod) *podRuntime {
				a := cinfo("a1", "s1", "a", running, 0, 0)
				a.Hash = "-"
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, a, cinfo("b1", "s1", "b", running, 0, 0))
			}, nil, want{sandbox: "s1", kill: []string{"a1"}, start: []int{0}}},
		{"created, never started: replaced", specPod("Always"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", created, 0, 0), cinfo("b1", "s1", "b", running, 0, 0))
			}, nil, want{sandbox: "s1", start: []int{0}, remove: []string{"a1"}}},
		{"first init running: wait", specPod("Always", "i1", "i2"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("i11", "s1", "i1", running, 0, 0))
			}, nil, want{sandbox: "s1"}},
		{"first init done: the second", specPod("Always", "i1", "i2"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("i11", "s1", "i1", exited, 0, 0))
			}, nil, want{sandbox: "s1", initStart: []int{1}}},
		{"inits done: the containers", specPod("Always", "i1", "i2"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("i21", "s1", "i2", exited, 0, 0), cinfo("i11", "s1", "i1", exited, 0, 0))
			}, nil, want{sandbox: "s1", start: []int{0, 1}}},
		{"init failed: restarted", specPod("OnFailure", "i1", "i2"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("i21", "s1", "i2", exited, 1, 0), cinfo("i11", "s1", "i1", exited, 0, 0))
			}, nil, want{sandbox: "s1", initStart: []int{1}}},
		{"init failed under Never: terminal", specPod("Never", "i1"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("i11", "s1", "i1", exited, 1, 0))
			}, nil, want{terminal: true, killPod: true}},
		{"inits from an old sandbox do not count in a new one", specPod("Always", "i1"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s2", 1), deadSB("s1", 0)}, cinfo("i11", "s1", "i1", exited, 0, 0))
			}, nil, want{sandbox: "s2", initStart: []int{0}}},
		{"main containers started: init garbage does not matter", specPod("Always", "i1"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)}, cinfo("a1", "s1", "a", running, 0, 0), cinfo("b1", "s1", "b", running, 0, 0))
			}, nil, want{sandbox: "s1"}},
		{"old dead containers beyond the previous: removed", specPod("Always"),
			func(p *corev1.Pod) *podRuntime {
				return runtimeOf(p, []*sandboxInfo{readySB("s1", 0)},
					cinfo("a3", "s1", "a", running, 0, 2), cinfo("a2", "s1", "a", exited, 1, 1), cinfo("a1", "s1", "a", exited, 1, 0),
					cinfo("b1", "s1", "b", running, 0, 0), cinfo("x1", "s1", "x", exited, 0, 0))
			}, nil, want{sandbox: "s1", remove: []string{"a1", "x1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := computeActions(tc.pod, tc.rt(tc.pod), tc.unhealthy, nil)
			var kills []string
			for _, k := range got.Kill {
				kills = append(kills, k.ID)
			}
			w := tc.want
			if got.KillPod != w.killPod || got.Terminal != w.terminal || got.CreateSandbox != w.create || got.Attempt != w.attempt ||
				got.SandboxID != w.sandbox || !slices.Equal(got.InitStart, w.initStart) || !slices.Equal(got.Start, w.start) ||
				!slices.Equal(kills, w.kill) || !slices.Equal(got.Remove, w.remove) {
				t.Errorf("got  %+v kills %v\nwant %+v", got, kills, w)
			}
		})
	}
}

func TestShouldRestartAndPullPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy string
		exit   int32
		want   bool
	}{{"Always", 0, true}, {"Always", 1, true}, {"OnFailure", 0, false}, {"OnFailure", 137, true}, {"Never", 1, false}, {"", 0, true}} {
		if got := shouldRestart(tc.policy, tc.exit); got != tc.want && tc.policy != "" {
			t.Errorf("shouldRestart(%q, %d) = %v", tc.policy, tc.exit, got)
		}
	}
	for image, want := range map[string]string{
		"demo": "Always", "demo:latest": "Always", "demo:v1": "IfNotPresent", "localhost:5000/demo": "Always",
		"localhost:5000/demo:v2": "IfNotPresent", "demo@sha256:abc": "IfNotPresent",
	} {
		if got := pullPolicy(&corev1.Container{Image: image}); got != want {
			t.Errorf("pullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
	if got := pullPolicy(&corev1.Container{Image: "demo", ImagePullPolicy: "Never"}); got != "Never" {
		t.Errorf("an explicit policy is kept: %s", got)
	}
}

func TestBackoff(t *testing.T) {
	b := newBackoff(10*time.Second, 40*time.Second)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	// A first failure is not in backoff; its restart sets 10s.
	if in, _, _ := b.inBackoffSince("x", at(0), at(0)); in {
		t.Fatal("in backoff before any failure")
	}
	steps := []struct {
		restartAt int
		delay     time.Duration
	}{{0, 10 * time.Second}, {10, 20 * time.Second}, {30, 40 * time.Second}, {70, 40 * time.Second}}
	for _, s := range steps {
		if d := b.next("x", at(s.restartAt)); d != s.delay {
			t.Errorf("restart at %ds: delay %v, want %v", s.restartAt, d, s.delay)
		}
	}
	// The container died at 71s: in backoff until 111s.
	if in, d, left := b.inBackoffSince("x", at(71), at(100)); !in || d != 40*time.Second || left != 11*time.Second {
		t.Errorf("at 100s: in=%v delay=%v left=%v", in, d, left)
	}
	if in, _, _ := b.inBackoffSince("x", at(71), at(111)); in {
		t.Error("still in backoff when it ended")
	}
	// Quiet for twice the max: starts over.
	if d := b.next("x", at(70+81)); d != 10*time.Second {
		t.Errorf("after a quiet spell: %v, want 10s", d)
	}
	if in, left := b.inBackoffSinceUpdate("x", at(155)); !in || left != 6*time.Second {
		t.Errorf("since update: %v %v", in, left)
	}
	b.forgetPrefix("x")
	if in, _ := b.inBackoffSinceUpdate("x", at(155)); in {
		t.Error("forgotten id still in backoff")
	}
	b.next("y", at(0))
	b.gc(at(81))
	if _, ok := b.entries["y"]; ok {
		t.Error("gc kept a quiet entry")
	}
}
