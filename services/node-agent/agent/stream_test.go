package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/node-agent/crienv"
)

// Exec, attach and port-forward on a real containerd, through the real
// apiserver (Pods.Exec -> NodeAgent.Exec -> CRI Exec -> containerd's
// streaming server): output split by stream, exit codes, stdin and its
// end, a terminal and its resize, cancellation killing the command, and a
// TCP connection to the demo server.

// execStream is an exec or attach stream with its output gathered.
type execStream struct {
	s      grpc.BidiStreamingClient[corev1.ExecRequest, corev1.ExecResponse]
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	code   *int32
	err    error
	done   chan struct{}
	more   chan struct{} // poked on each response
}

func startExec(ctx context.Context, pc corev1.PodsClient, attach bool, o *corev1.PodExecOptions, first *corev1.ExecRequest) (*execStream, error) {
	var s grpc.BidiStreamingClient[corev1.ExecRequest, corev1.ExecResponse]
	var err error
	if attach {
		s, err = pc.Attach(ctx)
	} else {
		s, err = pc.Exec(ctx)
	}
	if err != nil {
		return nil, err
	}
	if first == nil {
		first = &corev1.ExecRequest{}
	}
	first.Options = o
	if err := s.Send(first); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	e := &execStream{s: s, done: make(chan struct{}), more: make(chan struct{}, 1)}
	go func() {
		defer close(e.done)
		for {
			m, err := s.Recv()
			e.mu.Lock()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					e.err = apierrors.FromError(err)
				}
				e.mu.Unlock()
				return
			}
			e.stdout.Write(m.GetStdout())
			e.stderr.Write(m.GetStderr())
			if m.ExitCode != nil {
				e.code = m.ExitCode
			}
			e.mu.Unlock()
			select {
			case e.more <- struct{}{}:
			default:
			}
		}
	}()
	return e, nil
}

// untilStdout waits until stdout contains want.
func (e *execStream) untilStdout(t *testing.T, want string) {
	t.Helper()
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		got := e.stdout.String()
		e.mu.Unlock()
		if strings.Contains(got, want) {
			return
		}
		select {
		case <-e.more:
		case <-e.done:
			e.mu.Lock()
			got = e.stdout.String()
			e.mu.Unlock()
			if !strings.Contains(got, want) {
				t.Fatalf("stream ended (%v) with stdout %q, want %q in it", e.err, got, want)
			}
			return
		case <-deadline.C:
			t.Fatalf("stdout %q: no %q after %v", got, want, patience)
		}
	}
}

// wait waits for the stream's end: stdout, stderr, the exit code (-1:
// none) and the error.
func (e *execStream) wait(t *testing.T) (string, string, int32, error) {
	t.Helper()
	select {
	case <-e.done:
	case <-time.After(patience):
		t.Fatal("exec stream did not end")
	}
	code := int32(-1)
	if e.code != nil {
		code = *e.code
	}
	return e.stdout.String(), e.stderr.String(), code, e.err
}

// processesRunning counts the host's processes whose command line is cmd
// (NUL-separated, as /proc/PID/cmdline has it).
func processesRunning(cmd string) int {
	n := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && string(b) == cmd {
			n++
		}
	}
	return n
}

// untilHost re-checks cond every 50 ms (the host's processes have no
// change feed) until it holds or patience runs out.
func untilHost(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("%s: not after %v", what, patience)
		}
	}
}

func TestStreamsOnContainerd(t *testing.T) {
	ce := crienv.Start(t)
	e := newEnv(t, ce.Conn, nil, func(c *Config) {
		c.PodLogDir = ce.PodLogDir
		c.RelistPeriod = 200 * time.Millisecond
	})
	// The demo image is FROM scratch: an init container gives the app a
	// tar (a copy of /demo, which acts by its name) for cp.
	web := demoPod("web", demo(ce, "app"))
	web.Spec.InitContainers = []*corev1.Container{{Name: "tools", Image: ce.DemoImage("v1"), ImagePullPolicy: "IfNotPresent",
		Command: []string{"/demo", "install", "/demo", "/bin/tar"}, VolumeMounts: []*corev1.VolumeMount{{Name: "bin", MountPath: "/bin"}}}}
	web.Spec.Containers[0].VolumeMounts = []*corev1.VolumeMount{{Name: "bin", MountPath: "/bin"}}
	web.Spec.Volumes = []*corev1.Volume{{Name: "bin", EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	e.create(web)
	e.untilPod("web", "Running", func(p *corev1.Pod) (bool, string) {
		return p.GetStatus().GetPhase() == "Running", p.GetStatus().GetPhase()
	})
	pc := corev1.NewPodsClient(e.api.Conn)
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	execOpts := func(stdin, tty bool, cmd ...string) *corev1.PodExecOptions {
		return &corev1.PodExecOptions{Namespace: "default", Name: "web", Command: cmd, Stdin: stdin, Stdout: true, Stderr: !tty, Tty: tty}
	}

	t.Run("stdout and stderr apart, and the exit code", func(t *testing.T) {
		s, err := startExec(ctx, pc, false, execOpts(false, false, "/demo", "cat", "/etc/hostname", "/missing"), nil)
		if err != nil {
			t.Fatal(err)
		}
		out, errOut, code, err := s.wait(t)
		if err != nil || out != "web\n" || !strings.HasPrefix(errOut, "cat: open /missing: no such file") || code != 1 {
			t.Errorf("stdout %q, stderr %q, code %d, err %v", out, errOut, code, err)
		}
		s, err = startExec(ctx, pc, false, execOpts(false, false, "/demo", "exit", "3"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, code, err := s.wait(t); err != nil || code != 3 {
			t.Errorf("exit 3: code %d, err %v", code, err)
		}
	})

	t.Run("stdin piped and closed", func(t *testing.T) {
		s, err := startExec(ctx, pc, false, execOpts(true, false, "/demo", "cat"), &corev1.ExecRequest{Stdin: []byte("hello ")})
		if err != nil {
			t.Fatal(err)
		}
		s.untilStdout(t, "hello ")
		if err := s.s.Send(&corev1.ExecRequest{Stdin: []byte("world\n"), StdinClose: true}); err != nil {
			t.Fatal(err)
		}
		out, _, code, err := s.wait(t)
		if err != nil || out != "hello world\n" || code != 0 {
			t.Errorf("cat: stdout %q, code %d, err %v", out, code, err)
		}
	})

	t.Run("a terminal and its resize", func(t *testing.T) {
		s, err := startExec(ctx, pc, false, execOpts(true, true, "/demo", "ttysize"), &corev1.ExecRequest{Resize: &corev1.TerminalSize{Width: 100, Height: 30}})
		if err != nil {
			t.Fatal(err)
		}
		s.untilStdout(t, "30x100")
		if err := s.s.Send(&corev1.ExecRequest{Resize: &corev1.TerminalSize{Width: 120, Height: 40}}); err != nil {
			t.Fatal(err)
		}
		s.untilStdout(t, "40x120\r\n")
		// A terminal's end of input is ^D, as at a keyboard.
		if err := s.s.Send(&corev1.ExecRequest{Stdin: []byte{4}}); err != nil {
			t.Fatal(err)
		}
		if _, _, code, err := s.wait(t); err != nil || code != 0 {
			t.Errorf("ttysize: code %d, err %v", code, err)
		}
	})

	t.Run("cancelling the stream kills the command", func(t *testing.T) {
		cmd := "/demo\x00sleep\x003601s\x00"
		sctx, scancel := context.WithCancel(ctx)
		s, err := startExec(sctx, pc, false, execOpts(true, false, "/demo", "sleep", "3601s"), nil)
		if err != nil {
			scancel()
			t.Fatal(err)
		}
		untilHost(t, "the command runs", func() bool { return processesRunning(cmd) == 1 })
		scancel()
		s.wait(t)
		untilHost(t, "the command is gone", func() bool { return processesRunning(cmd) == 0 })
	})

	t.Run("port-forward to the demo server", func(t *testing.T) {
		pf, err := pc.PortForward(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := pf.Send(&corev1.PortForwardRequest{Options: &corev1.PodPortForwardOptions{Namespace: "default", Name: "web", Port: 8080},
			Data: []byte("GET / HTTP/1.0\r\n\r\n"), CloseWrite: true}); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		for {
			m, err := pf.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("port-forward: %v (got %q)", err, got.String())
			}
			got.Write(m.GetData())
		}
		if !strings.HasPrefix(got.String(), "HTTP/1.0 200 OK") || !strings.HasSuffix(got.String(), "demo v1 on web\n") {
			t.Errorf("port-forward answer: %q", got.String())
		}
	})

	t.Run("attach sees the main process's output", func(t *testing.T) {
		actx, acancel := context.WithCancel(ctx)
		defer acancel()
		s, err := startExec(actx, pc, true, &corev1.PodExecOptions{Namespace: "default", Name: "web", Stdout: true, Stderr: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The demo server logs each request on stdout: make one until
		// the attached stream shows it (the attach may not be up yet).
		ip := e.pod("web").GetStatus().GetPodIp()
		deadline := time.Now().Add(patience)
		for {
			if _, _, err := get(ctx, "http://"+ip+":8080/env?attached"); err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			got := s.stdout.String()
			s.mu.Unlock()
			if strings.Contains(got, "/env?attached") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("attach: no request line in %q (%v)", got, s.err)
			}
			select {
			case <-s.more:
			case <-time.After(200 * time.Millisecond):
			}
		}
		acancel()
		s.wait(t)
	})

	skiffctlStory(t, ctx, e)

	t.Run("a container that is not running", func(t *testing.T) {
		s, err := startExec(ctx, pc, false, &corev1.PodExecOptions{Namespace: "default", Name: "web", Container: "nope", Command: []string{"/demo", "true"}, Stdout: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := s.wait(t); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "container nope is not valid for pod web") {
			t.Errorf("exec in a missing container: %v", err)
		}
	})
}
