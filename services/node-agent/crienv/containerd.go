package crienv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// process is the containerd child of an Env.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once Wait returned
	err    error         // Wait's result, set before exited closes
}

// startContainerd starts containerd on l's config with its output appended
// to l's log file. containerd gets SIGKILL if this process dies
// (Pdeathsig), so a killed test leaves no daemon; it runs in its own
// process group so that a terminal's ^C reaches the test first.
func startContainerd(l layout) (*process, error) {
	logf, err := os.OpenFile(l.log(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("containerd", "--config", l.config())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("crienv: starting containerd: %w", err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM, then SIGKILL after grace, and waits for the exit.
func (p *process) stop(grace time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// dialCRI connects to the CRI socket. gRPC's reconnect backoff starts at
// 10 ms instead of 1 s so that the first calls, made while containerd is
// still creating its socket, do not wait a second.
func dialCRI(socket string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 500 * time.Millisecond},
			MinConnectTimeout: 5 * time.Second,
		}),
	)
}

// waitReady returns once the CRI answers Version and Status says the
// runtime and the network are ready. It gives up when ctx ends or
// containerd exits.
//
// gRPC's WaitForReady covers the wait for the socket. The retries below
// cover the moment after it during which containerd's CRI plugin answers
// "server is not initialized yet" and loads the CNI config: the CRI has no
// way to wait for that, so this polls every 20 ms, bounded by ctx.
func waitReady(ctx context.Context, rt runtimeapi.RuntimeServiceClient, p *process) (*runtimeapi.VersionResponse, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	var lastErr error
	for {
		v, err := rt.Version(ctx, &runtimeapi.VersionRequest{}, grpc.WaitForReady(true))
		if err == nil {
			st, serr := rt.Status(ctx, &runtimeapi.StatusRequest{})
			if serr == nil {
				if notReady := notReadyConditions(st.GetStatus()); notReady == "" {
					return v, nil
				} else {
					err = errors.New(notReady)
				}
			} else {
				err = serr
			}
		}
		lastErr = err
		select {
		case <-p.exited:
			return nil, fmt.Errorf("crienv: containerd exited while starting (%v)", p.err)
		case <-ctx.Done():
			return nil, fmt.Errorf("crienv: containerd's CRI not ready: %v (last: %v)", ctx.Err(), lastErr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// notReadyConditions names the RuntimeReady and NetworkReady conditions
// that are not true, with their reasons; "" when both are.
func notReadyConditions(st *runtimeapi.RuntimeStatus) string {
	var out string
	for _, want := range []string{runtimeapi.RuntimeReady, runtimeapi.NetworkReady} {
		found := false
		for _, c := range st.GetConditions() {
			if c.GetType() != want {
				continue
			}
			found = true
			if !c.GetStatus() {
				out += fmt.Sprintf("%s=false (%s: %s) ", want, c.GetReason(), c.GetMessage())
			}
		}
		if !found {
			out += want + " missing "
		}
	}
	return out
}
