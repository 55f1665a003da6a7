package agent

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/crienv"
)

// Ephemeral containers on a real containerd, through the real apiserver:
// one targeting the app container sees the app's processes (PID 1 is the
// app's /demo -listen :8080), one without a target has a PID namespace of
// its own (PID 1 is itself); each runs once and is reported in
// ephemeralContainerStatuses, and a finished one is not started again when
// the pod syncs for another. skiffctl debug -i adds one and attaches to it
// (stdin in, its output out), and the ephemeral containers go with the
// pod. The demo image stands in for busybox (no registry is reachable):
// its cat reads /proc/1/cmdline (then /etc/hostname, for a newline: the
// agent's log reader drops a last line without one).
func TestContainerdEphemeralContainers(t *testing.T) {
	ce := crienv.Start(t)
	e := newEnv(t, ce.Conn, nil, func(c *Config) {
		c.PodLogDir = ce.PodLogDir
		c.RelistPeriod = 200 * time.Millisecond
	})
	app := demo(ce, "app")
	app.Command = []string{"/demo", "-listen", ":8080"}
	e.create(demoPod("web", app))
	e.untilRunning("web")
	pc := corev1.NewPodsClient(e.api.Conn)
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()

	peek := func(name, target string) *corev1.EphemeralContainer {
		return &corev1.EphemeralContainer{Name: name, Image: ce.DemoImage("v1"), ImagePullPolicy: "IfNotPresent",
			Command: []string{"/demo", "cat", "/proc/1/cmdline", "/etc/hostname"}, TargetContainerName: target}
	}
	add := func(ec *corev1.EphemeralContainer) {
		t.Helper()
		p, err := e.pods.Get(ctx, "default", "web")
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		if _, err := pc.UpdateEphemeralContainers(ctx, p); err != nil {
			t.Fatalf("adding %s: %v", ec.GetName(), err)
		}
	}
	ended := func(name string) *corev1.ContainerStatus {
		t.Helper()
		var cs *corev1.ContainerStatus
		e.untilPod("web", "ephemeral container "+name+" ended", func(p *corev1.Pod) (bool, string) {
			cs = ephemeralStatusOf(p, name)
			return cs.GetState().GetTerminated() != nil, ephemeralBrief(p)
		})
		return cs
	}
	cmdline := func(name string) string {
		t.Helper()
		out, err := readLogs(ctx, e, &corev1.PodLogOptions{Namespace: "default", Name: "web", Container: name})
		if err != nil {
			t.Fatalf("logs of %s: %v", name, err)
		}
		return strings.ReplaceAll(out, "\x00", " ")
	}

	var peekID string
	t.Run("with a target it sees the target's processes", func(t *testing.T) {
		add(peek("peek", "app"))
		cs := ended("peek")
		if tt := cs.GetState().GetTerminated(); tt.GetExitCode() != 0 || cs.GetRestartCount() != 0 || cs.GetReady() ||
			!strings.HasPrefix(cs.GetContainerId(), "containerd://") || cs.GetImage() != ce.DemoImage("v1") {
			t.Errorf("peek's status: %v", cs)
		}
		peekID = cs.GetContainerId()
		if got := cmdline("peek"); got != "/demo -listen :8080 web\n" {
			t.Errorf("PID 1 seen by peek: %q, want the app's /demo -listen :8080", got)
		}
	})

	t.Run("without a target it has its own; a finished one is not started again", func(t *testing.T) {
		add(peek("alone", ""))
		ended("alone")
		if got := cmdline("alone"); got != "/demo cat /proc/1/cmdline /etc/hostname web\n" {
			t.Errorf("PID 1 seen by alone: %q, want itself", got)
		}
		p := e.pod("web")
		if cs := ephemeralStatusOf(p, "peek"); cs.GetContainerId() != peekID || cs.GetState().GetTerminated() == nil {
			t.Errorf("peek after another sync: %v, want still %s, terminated", cs, peekID)
		}
		if cs := containerStatusOf(p, "app"); cs.GetRestartCount() != 0 || cs.GetState().GetRunning() == nil || p.GetStatus().GetPhase() != "Running" {
			t.Errorf("the app was disturbed: %s", brief(p.GetStatus()))
		}
		n := 0
		list, err := ce.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			LabelSelector: map[string]string{labelPodName: "web", labelContainerName: "peek"}}})
		if err == nil {
			n = len(list.GetContainers())
		}
		if err != nil || n != 1 {
			t.Errorf("runtime containers named peek: %d, %v; want 1", n, err)
		}
	})

	t.Run("skiffctl debug -i attaches", func(t *testing.T) {
		dctx, dcancel := context.WithCancel(ctx)
		defer dcancel()
		out := &lockedBuffer{more: make(chan struct{}, 1)}
		errw := &lockedBuffer{more: make(chan struct{}, 1)}
		inR, inW := io.Pipe()
		done := make(chan int, 1)
		go func() {
			done <- skiffctl(dctx, t, e, inR, out, errw, "debug", "-i", "web", "--image="+ce.DemoImage("v1"),
				"--image-pull-policy=IfNotPresent", "--target=app", "-c", "shell", "--", "/demo", "cat")
		}()
		// stdin is read once attached: the line goes to cat, which echoes it.
		go func() { _, _ = io.WriteString(inW, "hello from stdin\n") }()
		deadline := time.After(patience)
		for !strings.Contains(out.String(), "hello from stdin\n") {
			select {
			case <-out.more:
			case code := <-done:
				t.Fatalf("skiffctl debug ended (%d) before the echo: stdout %q, stderr %q", code, out.String(), errw.String())
			case <-deadline:
				t.Fatalf("no echo: stdout %q, stderr %q", out.String(), errw.String())
			}
		}
		if !strings.HasPrefix(out.String(), `Targeting container "app".`) {
			t.Errorf("stdout %q: no targeting message", out.String())
		}
		inW.Close()
		dcancel()
		<-done
		p := e.untilPod("web", "shell running or ended", func(p *corev1.Pod) (bool, string) {
			s := ephemeralStatusOf(p, "shell").GetState()
			return s.GetRunning() != nil || s.GetTerminated() != nil, ephemeralBrief(p)
		})
		var ec *corev1.EphemeralContainer
		for _, c := range p.GetSpec().GetEphemeralContainers() {
			if c.GetName() == "shell" {
				ec = c
			}
		}
		if ec == nil || !ec.GetStdin() || ec.GetTty() || ec.GetTargetContainerName() != "app" ||
			!proto.Equal(ec.GetSecurityContext().GetCapabilities(), &corev1.Capabilities{Add: []string{"SYS_PTRACE"}}) {
			t.Errorf("the debug container: %v", ec)
		}
	})

	t.Run("they go with the pod", func(t *testing.T) {
		if _, err := e.pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "web"}); err != nil {
			t.Fatal(err)
		}
		e.until("pod web gone", func() (bool, string) { return e.pod("web") == nil, "" })
		list, err := ce.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			LabelSelector: map[string]string{labelPodName: "web"}}})
		if err != nil || len(list.GetContainers()) != 0 {
			t.Errorf("containers left of web: %v, %v", list.GetContainers(), err)
		}
	})
}

func ephemeralStatusOf(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, cs := range p.GetStatus().GetEphemeralContainerStatuses() {
		if cs.GetName() == name {
			return cs
		}
	}
	return nil
}

func ephemeralBrief(p *corev1.Pod) string {
	var b strings.Builder
	for _, cs := range p.GetStatus().GetEphemeralContainerStatuses() {
		s := cs.GetState()
		switch {
		case s.GetRunning() != nil:
			b.WriteString(" [" + cs.GetName() + " running]")
		case s.GetTerminated() != nil:
			b.WriteString(" [" + cs.GetName() + " terminated]")
		default:
			b.WriteString(" [" + cs.GetName() + " waiting " + s.GetWaiting().GetReason() + " " + s.GetWaiting().GetMessage() + "]")
		}
	}
	return b.String()
}
