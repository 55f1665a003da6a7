package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/crienv"
)

// The story on a real containerd (crienv: its own socket, root and state,
// bridge CNI, the project's pause and demo images): pods run with an IP
// the host reaches, probes restart and gate, crashes back off, missing
// images say so, logs follow, deletion cleans up, and a restarted agent
// adopts what runs. Skipped where containerd cannot run (unless CI=true).

func intPort(p int32) *metav1.IntOrString {
	return &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: p}}
}

// demo is a container of the demo image (its entrypoint serves :8080).
func demo(env *crienv.Env, name string, envVars ...string) *corev1.Container {
	c := &corev1.Container{Name: name, Image: env.DemoImage("v1"), ImagePullPolicy: "IfNotPresent",
		Ports: []*corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	for _, kv := range envVars {
		k, v, _ := strings.Cut(kv, "=")
		c.Env = append(c.Env, &corev1.EnvVar{Name: k, Value: v})
	}
	return c
}

func demoPod(name string, cs ...*corev1.Container) *corev1.Pod {
	p := pod(name, cs...)
	p.Spec.TerminationGracePeriodSeconds = proto.Int64(5)
	return p
}

// get GETs url from the host; a refused connection (the server not bound
// yet) is retried until ctx ends.
func get(ctx context.Context, url string) (int, string, error) {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(b), err
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return 0, "", err
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, "", err
		case <-t.C:
		}
	}
}

func TestContainerd(t *testing.T) {
	ce := crienv.Start(t)
	e := newEnv(t, ce.Conn, nil, func(c *Config) {
		c.PodLogDir = ce.PodLogDir
		c.RelistPeriod = 200 * time.Millisecond
		c.CrashLoopBackOff, c.CrashLoopBackOffMax = time.Second, 8*time.Second
	})
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	// Every condition is also re-checked on a timer: the runtime has no
	// change feed here.

	// Several pods at once, each for one part of the story.
	web := demoPod("web", func() *corev1.Container {
		c := demo(ce, "app", "READY_AFTER=2s")
		c.ReadinessProbe = &corev1.Probe{HttpGet: &corev1.HTTPGetAction{Path: "/ready", Port: intPort(8080)}, PeriodSeconds: 1}
		c.LivenessProbe = &corev1.Probe{HttpGet: &corev1.HTTPGetAction{Path: "/healthz", Port: &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: "http"}}},
			PeriodSeconds: 1, FailureThreshold: 2}
		return c
	}())
	crash := demoPod("crash", demo(ce, "app", "EXIT_AFTER=100ms", "EXIT_CODE=3"))
	missing := demoPod("missing", &corev1.Container{Name: "app", Image: "skiff.local/missing:v1", ImagePullPolicy: "IfNotPresent"})
	execd := demoPod("execd", func() *corev1.Container {
		c := demo(ce, "app")
		c.LivenessProbe = &corev1.Probe{Exec: &corev1.ExecAction{Command: []string{"/demo", "test-file", "/tmp/alive"}}, PeriodSeconds: 1, FailureThreshold: 1}
		c.StartupProbe = &corev1.Probe{Exec: &corev1.ExecAction{Command: []string{"/demo", "true"}}, PeriodSeconds: 1}
		return c
	}())
	execd.Spec.InitContainers = []*corev1.Container{{Name: "init", Image: ce.DemoImage("v1"), ImagePullPolicy: "IfNotPresent",
		Command: []string{"/demo", "write", "/work/alive", "yes"}, VolumeMounts: []*corev1.VolumeMount{{Name: "work", MountPath: "/work"}}}}
	execd.Spec.Containers[0].VolumeMounts = []*corev1.VolumeMount{{Name: "work", MountPath: "/tmp"}}
	execd.Spec.Volumes = []*corev1.Volume{{Name: "work", EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	// Every waiting state of the pods' "app" containers, in the order the
	// watch delivers them: the story of the crashes and pulls.
	var mu sync.Mutex
	waited := map[string][]*corev1.ContainerStateWaiting{}
	e.podInf.AddHandler(informer.Handler[*corev1.Pod]{OnUpdate: func(_, p *corev1.Pod) {
		if w := containerStatusOf(p, "app").GetState().GetWaiting(); w != nil {
			mu.Lock()
			waited[p.GetMetadata().GetName()] = append(waited[p.GetMetadata().GetName()], w)
			mu.Unlock()
		}
	}})
	history := func(pod string) []*corev1.ContainerStateWaiting {
		mu.Lock()
		defer mu.Unlock()
		return waited[pod]
	}
	for _, p := range []*corev1.Pod{web, crash, missing, execd} {
		e.create(p)
	}

	t.Run("a pod gets Running with an IP the host reaches", func(t *testing.T) {
		got := e.untilPod("web", "Running, not ready before READY_AFTER", func(p *corev1.Pod) (bool, string) {
			return p.GetStatus().GetPhase() == "Running" && p.GetStatus().GetPodIp() != "" && condition(p, "Ready") == "False", ""
		})
		ip, err := netip.ParseAddr(got.GetStatus().GetPodIp())
		if err != nil || !ce.Subnet.Contains(ip) {
			t.Fatalf("pod IP %q not in %v", got.GetStatus().GetPodIp(), ce.Subnet)
		}
		if !strings.HasPrefix(containerStatusOf(got, "app").GetContainerId(), "containerd://") {
			t.Errorf("containerID %q", containerStatusOf(got, "app").GetContainerId())
		}
		code, body, err := get(ctx, fmt.Sprintf("http://%s:8080/", ip))
		if err != nil || code != 200 || body != "demo v1 on web\n" {
			t.Fatalf("GET / from the host: %d %q %v", code, body, err)
		}
	})

	t.Run("containerd reports a running container's CPU and memory", func(t *testing.T) {
		uid := e.untilRunning("web").GetMetadata().GetUid()
		e.mu.Lock()
		a := e.agent
		e.mu.Unlock()
		snap, err := a.readStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p := snap.pods[uid]
		if p == nil || p.containers["app"] == nil {
			t.Fatalf("stats of web's app: none (pods %v)", snap.pods)
		}
		app := p.containers["app"]
		if !app.cpu.hasTotal || app.cpu.coreNanos == 0 || app.memory.workingSet == 0 {
			t.Errorf("web's app: cpu %+v, memory %+v; want a CPU time and a working set above zero", app.cpu, app.memory)
		}
		// containerd 1.6 has no stats for a sandbox without a cgroup
		// parent (Config.CgroupRoot empty, as here): then none.
		if snap.podsErr == nil && (!p.cpu.hasTotal || p.cpu.coreNanos < app.cpu.coreNanos || p.memory.workingSet == 0) {
			t.Errorf("web's pod cgroup: cpu %+v, memory %+v; want at least its container's", p.cpu, p.memory)
		}
	})

	t.Run("a readiness probe gates Ready", func(t *testing.T) {
		// READY_AFTER=2s: /ready failed at first (above), then passes.
		got := e.untilRunning("web")
		if cs := containerStatusOf(got, "app"); cs.GetRestartCount() != 0 {
			t.Errorf("restarted before its liveness probe failed: %v", cs)
		}
	})

	t.Run("a failing liveness probe restarts the container", func(t *testing.T) {
		before := e.pod("web")
		id := containerStatusOf(before, "app").GetContainerId()
		if code, _, err := get(ctx, fmt.Sprintf("http://%s:8080/fail", before.GetStatus().GetPodIp())); err != nil || code != 200 {
			t.Fatalf("GET /fail: %d %v", code, err)
		}
		got := e.untilPod("web", "restarted by its liveness probe", func(p *corev1.Pod) (bool, string) {
			cs := containerStatusOf(p, "app")
			return cs.GetRestartCount() >= 1 && cs.GetContainerId() != id && cs.GetState().GetRunning() != nil, ""
		})
		if ls := containerStatusOf(got, "app").GetLastState().GetTerminated(); ls.GetContainerId() != id {
			t.Errorf("last state %v", ls)
		}
	})

	t.Run("exec probes and init containers", func(t *testing.T) {
		got := e.untilRunning("execd")
		if cs := containerStatusOf(got, "init"); cs.GetState().GetTerminated().GetExitCode() != 0 {
			t.Fatalf("init: %v", cs)
		}
		if cs := containerStatusOf(got, "app"); cs.GetRestartCount() != 0 || !cs.GetStarted() {
			t.Fatalf("app: %v (the init container's file should keep it alive)", cs)
		}
	})

	t.Run("a container that exits is restarted with growing backoff", func(t *testing.T) {
		e.untilPod("crash", "3 restarts with back-offs of 1s, 2s and 4s", func(p *corev1.Pod) (bool, string) {
			cs := containerStatusOf(p, "app")
			backOffs := map[string]bool{}
			for _, w := range history("crash") {
				if w.GetReason() == reasonCrashLoopBackOff {
					backOffs[strings.Fields(w.GetMessage())[1]] = true
				}
			}
			return cs.GetRestartCount() >= 3 && backOffs["1s"] && backOffs["2s"] && backOffs["4s"] && cs.GetLastState().GetTerminated().GetExitCode() == 3,
				fmt.Sprintf("back-offs seen %v", backOffs)
		})
	})

	t.Run("a missing image gives ErrImagePull then ImagePullBackOff", func(t *testing.T) {
		e.untilPod("missing", "ErrImagePull, then ImagePullBackOff", func(p *corev1.Pod) (bool, string) {
			var reasons []string
			for _, w := range history("missing") {
				if len(reasons) == 0 && w.GetReason() == reasonErrImagePull {
					if !strings.HasPrefix(w.GetMessage(), `Failed to pull image "skiff.local/missing:v1": failed to pull and unpack image`) {
						return false, fmt.Sprintf("ErrImagePull message %q", w.GetMessage())
					}
					reasons = append(reasons, w.GetReason())
				}
				if len(reasons) == 1 && w.GetReason() == reasonImagePullBackOff && w.GetMessage() == `Back-off pulling image "skiff.local/missing:v1"` {
					return true, ""
				}
			}
			return false, fmt.Sprintf("seen %v", reasons)
		})
	})

	t.Run("logs stream with follow through the apiserver", func(t *testing.T) {
		p := e.pod("web")
		s, err := corev1.NewPodsClient(e.api.Conn).Logs(ctx, &corev1.PodLogOptions{Namespace: "default", Name: "web", Follow: true})
		if err != nil {
			t.Fatal(err)
		}
		marker := fmt.Sprintf("/?marker=%d", time.Now().UnixNano())
		if code, _, err := get(ctx, fmt.Sprintf("http://%s:8080%s", p.GetStatus().GetPodIp(), marker)); err != nil || code != 200 {
			t.Fatalf("GET: %d %v", code, err)
		}
		var got strings.Builder
		for !strings.Contains(got.String(), marker) {
			chunk, err := s.Recv()
			if err != nil {
				t.Fatalf("follow: %v after %q", err, got.String())
			}
			got.Write(chunk.GetData())
		}
	})

	t.Run("an agent restarted while a pod runs keeps the same container", func(t *testing.T) {
		before := e.untilRunning("execd")
		e.stopAgent()
		e.startAgent()
		e.until("agent ready", func() (bool, string) {
			err := e.agent.Ready()
			return err == nil, fmt.Sprint(err)
		})
		e.until("the pod synced by the new agent", func() (bool, string) {
			return e.agent.synced(before.GetMetadata().GetUid()), ""
		})
		after := e.untilRunning("execd")
		b, a := containerStatusOf(before, "app"), containerStatusOf(after, "app")
		if a.GetContainerId() != b.GetContainerId() || a.GetRestartCount() != 0 {
			t.Errorf("after the restart: %v, before: %v", a, b)
		}
	})

	t.Run("delete removes the sandbox and the containers", func(t *testing.T) {
		p := e.pod("web")
		uid := p.GetMetadata().GetUid()
		if _, err := e.pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "web"}); err != nil {
			t.Fatal(err)
		}
		e.until("pod web gone", func() (bool, string) { return e.pod("web") == nil, "" })
		sel := map[string]string{labelPodUID: uid}
		sbs, err := ce.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
		if err != nil || len(sbs.GetItems()) != 0 {
			t.Errorf("sandboxes left: %v %v", sbs.GetItems(), err)
		}
		cs, err := ce.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
		if err != nil || len(cs.GetContainers()) != 0 {
			t.Errorf("containers left: %v %v", cs.GetContainers(), err)
		}
	})
}
