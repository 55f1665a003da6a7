package sim_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/workqueue"
	"skiff.dev/services/node-agent/cri"
	"skiff.dev/services/node-agent/sim"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"))
}

// start serves a runtime and returns a CRI client of it.
func start(t *testing.T, o sim.Options) (*sim.Server, *cri.Client, *prometheus.Registry) {
	t.Helper()
	s, err := sim.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := cri.Dial(s.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	reg := prometheus.NewRegistry()
	return s, cri.New(conn, cri.Options{Metrics: cri.NewMetrics(reg), Timeout: 10 * time.Second}), reg
}

func sandboxConfig(name, uid, logDir string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
		Labels:       map[string]string{sim.LabelPodName: name, sim.LabelPodNamespace: "default", sim.LabelPodUID: uid},
		LogDirectory: logDir,
	}
}

func containerConfig(name, image string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Labels:   map[string]string{sim.LabelContainerName: name},
		LogPath:  name + "/0.log",
		Envs:     []*runtimeapi.KeyValue{{Key: "A", Value: []byte("1")}},
	}
}

func TestPodLifecycle(t *testing.T) {
	s, rt, reg := start(t, sim.Options{Subnet: "10.9.0.0/24"})
	ctx := context.Background()

	v, err := rt.Version(ctx)
	if err != nil || v.GetRuntimeName() != "skiff-sim" || v.GetRuntimeApiVersion() != "v1" {
		t.Fatalf("Version = %v, %v", v, err)
	}
	st, err := rt.Status(ctx)
	if err != nil || len(st.GetConditions()) != 2 || !st.GetConditions()[0].GetStatus() || !st.GetConditions()[1].GetStatus() {
		t.Fatalf("Status = %v, %v", st, err)
	}

	logDir := filepath.Join(t.TempDir(), "default_web_u1")
	sbCfg := sandboxConfig("web", "u1", logDir)
	sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunPodSandbox(ctx, sbCfg, ""); status.Code(err) != codes.AlreadyExists {
		t.Errorf("a second sandbox of the same name and attempt: %v, want AlreadyExists", err)
	}
	sst, err := rt.PodSandboxStatus(ctx, sb)
	if err != nil || sst.GetNetwork().GetIp() != "10.9.0.2" || sst.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("PodSandboxStatus = %v, %v; want READY with 10.9.0.2", sst, err)
	}

	// An image must be pulled before a container uses it.
	if _, err := rt.CreateContainer(ctx, sb, containerConfig("app", "demo:v1"), sbCfg); !cri.IsNotFound(err) {
		t.Fatalf("create with an image not pulled: %v, want NotFound", err)
	}
	if img, err := rt.ImageStatus(ctx, "demo:v1"); err != nil || img != nil {
		t.Fatalf("ImageStatus of an absent image = %v, %v; want nil, nil", img, err)
	}
	ref, err := rt.PullImage(ctx, "demo:v1", sbCfg)
	if err != nil || !strings.HasPrefix(ref, "sha256:") {
		t.Fatalf("PullImage = %q, %v", ref, err)
	}
	if img, err := rt.ImageStatus(ctx, "docker.io/library/demo:v1"); err != nil || img.GetId() != ref {
		t.Fatalf("ImageStatus by its full name = %v, %v", img, err)
	}

	id, err := rt.CreateContainer(ctx, sb, containerConfig("app", "demo:v1"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.CreateContainer(ctx, sb, containerConfig("app", "demo:v1"), sbCfg); status.Code(err) != codes.AlreadyExists {
		t.Errorf("a second container of the same name and attempt: %v, want AlreadyExists", err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	cs, err := rt.ContainerStatus(ctx, id)
	if err != nil || cs.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || cs.GetStartedAt() == 0 ||
		cs.GetLogPath() != filepath.Join(logDir, "app/0.log") || !strings.Contains(cs.GetImageRef(), "@sha256:") {
		t.Fatalf("ContainerStatus = %v, %v", cs, err)
	}
	if c, ok := s.ContainerOf("default", "web", "app"); !ok || !c.Running() || c.PodUID != "u1" || c.Env()["A"] != "1" {
		t.Fatalf("ContainerOf = %+v, %v", c, ok)
	}

	// Logs are written in the CRI format where the agent asked.
	if err := s.WriteLog(id, "stdout", "hello\nworld"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(cs.GetLogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^\S+Z stdout F hello\n\S+Z stdout F world\n$`).Match(b) {
		t.Errorf("log file:\n%s", b)
	}

	// The test makes it exit.
	if err := s.Exit(id, 3); err != nil {
		t.Fatal(err)
	}
	cs, _ = rt.ContainerStatus(ctx, id)
	if cs.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || cs.GetExitCode() != 3 || cs.GetReason() != "Error" || cs.GetFinishedAt() == 0 {
		t.Fatalf("after Exit: %v", cs)
	}

	// Filters.
	running := &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
	if l, _ := rt.ListContainers(ctx, running); len(l) != 0 {
		t.Errorf("running containers: %v", l)
	}
	if l, _ := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{sim.LabelContainerName: "app"}}); len(l) != 1 {
		t.Errorf("containers labelled app: %v", l)
	}
	if l, _ := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{sim.LabelPodUID: "u2"}}); len(l) != 0 {
		t.Errorf("sandboxes of another uid: %v", l)
	}

	// A ready sandbox cannot be removed; stopped, it goes with its containers.
	if err := rt.RemovePodSandbox(ctx, sb); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("remove of a ready sandbox: %v", err)
	}
	if err := rt.StopPodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if err := rt.RemovePodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if err := rt.RemovePodSandbox(ctx, sb); err != nil {
		t.Errorf("a second remove: %v, want success", err)
	}
	if len(s.Containers()) != 0 || len(s.Sandboxes()) != 0 {
		t.Errorf("left: %v %v", s.Containers(), s.Sandboxes())
	}
	if got := counter(t, reg, "kubelet_runtime_operations_errors_total", "create_container"); got != 2 {
		t.Errorf("create_container errors = %v, want 2", got)
	}
}

// counter reads a counter of reg by its operation_type label.
func counter(t *testing.T, reg *prometheus.Registry, name, op string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation_type" && l.GetValue() == op {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{operation_type=%q}", name, op)
	return 0
}

func TestMissingImageFailsLikeARegistry404(t *testing.T) {
	s, rt, _ := start(t, sim.Options{Missing: []string{"nope:v1"}})
	ctx := context.Background()
	_, err := rt.PullImage(ctx, "nope:v1", nil)
	if !cri.IsNotFound(err) {
		t.Fatalf("pull = %v, want NotFound", err)
	}
	want := `failed to pull and unpack image "docker.io/library/nope:v1": failed to resolve reference "docker.io/library/nope:v1": docker.io/library/nope:v1: not found`
	if cri.Message(err) != want {
		t.Errorf("message\n%s\nwant\n%s", cri.Message(err), want)
	}
	s.SetImageMissing("nope:v1", false)
	if _, err := rt.PullImage(ctx, "nope:v1", nil); err != nil {
		t.Fatalf("pull once available: %v", err)
	}
}

func TestFaultsOnStartExecAndConditions(t *testing.T) {
	s, rt, _ := start(t, sim.Options{Images: []string{"demo:v1"}})
	ctx := context.Background()

	s.FailNext("RunPodSandbox", 1, nil)
	cfg := sandboxConfig("p", "u", "")
	if _, err := rt.RunPodSandbox(ctx, cfg, ""); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("first RunPodSandbox = %v, want the injected failure", err)
	}
	sb, err := rt.RunPodSandbox(ctx, cfg, "")
	if err != nil {
		t.Fatalf("second RunPodSandbox: %v", err)
	}
	if n := s.Calls("RunPodSandbox"); n != 2 {
		t.Errorf("calls = %d, want 2", n)
	}

	// A program that exits at once, with 1.
	s.SetOnStart(func(c sim.Container) (bool, int32) { return c.Name == "crash", 1 })
	id, err := rt.CreateContainer(ctx, sb, containerConfig("crash", "demo:v1"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if cs, _ := rt.ContainerStatus(ctx, id); cs.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || cs.GetExitCode() != 1 {
		t.Fatalf("crash: %v", cs)
	}

	// Exec answers from the test.
	s.SetExec(func(c sim.Container, cmd []string) sim.ExecResult {
		if cmd[0] == "fail" {
			return sim.ExecResult{ExitCode: 1, Stderr: []byte("no")}
		}
		return sim.ExecResult{Stdout: []byte("ok")}
	})
	app, _ := rt.CreateContainer(ctx, sb, containerConfig("app", "demo:v1"), cfg)
	if _, err := rt.ExecSync(ctx, app, []string{"true"}, time.Second); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("exec in a container not started: %v", err)
	}
	_ = rt.StartContainer(ctx, app)
	if r, err := rt.ExecSync(ctx, app, []string{"fail"}, time.Second); err != nil || r.GetExitCode() != 1 {
		t.Errorf("exec fail = %v, %v", r, err)
	}
	if r, err := rt.ExecSync(ctx, app, []string{"true"}, time.Second); err != nil || string(r.GetStdout()) != "ok" {
		t.Errorf("exec true = %v, %v", r, err)
	}
	if err := rt.StopContainer(ctx, app, 5); err != nil {
		t.Fatal(err)
	}
	if cs, _ := rt.ContainerStatus(ctx, app); cs.GetExitCode() != 143 {
		t.Errorf("stopped: %v", cs)
	}

	// No network: sandboxes fail, the host network still works.
	s.SetCondition(runtimeapi.NetworkReady, false, "NetworkPluginNotReady", "cni config uninitialized")
	st, _ := rt.Status(ctx)
	if c := st.GetConditions()[1]; c.GetStatus() || c.GetReason() != "NetworkPluginNotReady" {
		t.Errorf("network condition = %v", c)
	}
	if _, err := rt.RunPodSandbox(ctx, sandboxConfig("q", "u", ""), ""); err == nil {
		t.Error("a sandbox without network started")
	}
	host := sandboxConfig("h", "u", "")
	host.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
	}}
	if _, err := rt.RunPodSandbox(ctx, host, ""); err != nil {
		t.Errorf("host network sandbox: %v", err)
	}
}

func TestNormalizeImage(t *testing.T) {
	for in, want := range map[string]string{
		"demo":                      "docker.io/library/demo:latest",
		"demo:v1":                   "docker.io/library/demo:v1",
		"x/y":                       "docker.io/x/y:latest",
		"localhost:5000/a:1":        "localhost:5000/a:1",
		"localhost/a":               "localhost/a:latest",
		"registry.io/p/q:2":         "registry.io/p/q:2",
		"registry:5000/p":           "registry:5000/p:latest",
		"demo@sha256:abc":           "docker.io/library/demo@sha256:abc",
		"docker.io/library/demo:v2": "docker.io/library/demo:v2",
	} {
		if got := sim.NormalizeImage(in); got != want {
			t.Errorf("NormalizeImage(%q) = %q, want %q", in, got, want)
		}
	}
}

// The stats RPCs report a steady CPU rate and working set per running
// container, on the runtime's clock: a container's usageCoreNanoSeconds
// grows by its NanoCores per second, an exited one's stops growing and
// loses its CPU and memory figures, and a sandbox's are its containers'
// sum.
func TestStats(t *testing.T) {
	clock := workqueue.NewFakeClock(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
	s, rt, _ := start(t, sim.Options{Clock: clock, Images: []string{"demo:v1"}, Usage: func(c sim.Container) sim.Usage {
		if c.Name == "big" {
			return sim.Usage{NanoCores: 250_000_000, WorkingSetBytes: 64 << 20}
		}
		return sim.DefaultUsage(c)
	}})
	ctx := context.Background()
	sbCfg := sandboxConfig("web", "u1", "")
	sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, name := range []string{"big", "small"} {
		id, err := rt.CreateContainer(ctx, sb, containerConfig(name, "demo:v1"), sbCfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		ids[name] = id
	}
	type fig struct{ cpu, mem uint64 }
	read := func() (map[string]fig, fig) {
		t.Helper()
		cs, err := rt.ListContainerStats(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]fig{}
		for _, st := range cs {
			if st.GetCpu().GetTimestamp() != 0 && st.GetCpu().GetTimestamp() != clock.Now().UnixNano() {
				t.Errorf("%s: cpu timestamp %d, want the runtime's clock %d", st.GetAttributes().GetMetadata().GetName(), st.GetCpu().GetTimestamp(), clock.Now().UnixNano())
			}
			got[st.GetAttributes().GetMetadata().GetName()] = fig{st.GetCpu().GetUsageCoreNanoSeconds().GetValue(), st.GetMemory().GetWorkingSetBytes().GetValue()}
		}
		ps, err := rt.ListPodSandboxStats(ctx, nil)
		if err != nil || len(ps) != 1 || ps[0].GetAttributes().GetMetadata().GetUid() != "u1" || len(ps[0].GetLinux().GetContainers()) != 2 {
			t.Fatalf("ListPodSandboxStats = %v, %v; want the one sandbox with its two containers", ps, err)
		}
		l := ps[0].GetLinux()
		return got, fig{l.GetCpu().GetUsageCoreNanoSeconds().GetValue(), l.GetMemory().GetWorkingSetBytes().GetValue()}
	}
	steps := []struct {
		name       string
		do         func()
		containers map[string]fig
		pod        fig
	}{
		{"at start", func() {}, map[string]fig{"big": {0, 64 << 20}, "small": {0, 8 << 20}}, fig{0, 72 << 20}},
		{"2s later", func() { clock.Step(2 * time.Second) },
			map[string]fig{"big": {500_000_000, 64 << 20}, "small": {10_000_000, 8 << 20}}, fig{510_000_000, 72 << 20}},
		{"small exits, 1s later", func() {
			if err := s.Exit(ids["small"], 0); err != nil {
				t.Fatal(err)
			}
			clock.Step(time.Second)
		}, map[string]fig{"big": {750_000_000, 64 << 20}, "small": {0, 0}}, fig{760_000_000, 64 << 20}},
		{"big doubles its rate, 1s later", func() {
			s.SetUsage(func(sim.Container) sim.Usage { return sim.Usage{NanoCores: 500_000_000, WorkingSetBytes: 1 << 20} })
			clock.Step(time.Second)
		}, map[string]fig{"big": {1_250_000_000, 1 << 20}, "small": {0, 0}}, fig{1_260_000_000, 1 << 20}},
	}
	for _, step := range steps {
		step.do()
		got, pod := read()
		for name, want := range step.containers {
			if got[name] != want {
				t.Errorf("%s: container %s: cpu %d ns, memory %d; want %d, %d", step.name, name, got[name].cpu, got[name].mem, want.cpu, want.mem)
			}
		}
		if pod != step.pod {
			t.Errorf("%s: sandbox: cpu %d ns, memory %d; want %d, %d", step.name, pod.cpu, pod.mem, step.pod.cpu, step.pod.mem)
		}
	}
	if err := rt.StopPodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if ps, err := rt.ListPodSandboxStats(ctx, nil); err != nil || len(ps) != 0 {
		t.Errorf("ListPodSandboxStats after the sandbox stopped = %v, %v; want none", ps, err)
	}
}
