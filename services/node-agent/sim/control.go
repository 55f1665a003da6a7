package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The labels a node agent puts on sandboxes and containers, as the kubelet
// does; Container and Sandbox read the pod's identity from them.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
)

// Sandbox is a snapshot of one sandbox.
type Sandbox struct {
	ID                   string
	Name, Namespace, UID string // from the sandbox metadata
	Attempt              uint32
	State                runtimeapi.PodSandboxState
	IP                   string
	Labels               map[string]string
	LogDirectory         string
	Config               *runtimeapi.PodSandboxConfig
	CreatedAt            time.Time
}

// Ready reports whether the sandbox is SANDBOX_READY.
func (s Sandbox) Ready() bool { return s.State == runtimeapi.PodSandboxState_SANDBOX_READY }

// Container is a snapshot of one container.
type Container struct {
	ID, SandboxID string
	Name          string // metadata name
	Attempt       uint32
	PodName       string // from the sandbox metadata
	PodNamespace  string
	PodUID        string
	State         runtimeapi.ContainerState
	ExitCode      int32
	Image         string
	Labels        map[string]string
	LogPath       string // absolute, "" if the agent set none
	Config        *runtimeapi.ContainerConfig
	CreatedAt     time.Time
	StartedAt     time.Time
	FinishedAt    time.Time
}

// Running reports whether the container is CONTAINER_RUNNING.
func (c Container) Running() bool { return c.State == runtimeapi.ContainerState_CONTAINER_RUNNING }

// Env returns the container's environment as a map.
func (c Container) Env() map[string]string {
	env := map[string]string{}
	for _, kv := range c.Config.GetEnvs() {
		env[kv.GetKey()] = string(kv.GetValue())
	}
	return env
}

// ExecResult is what an ExecSync answers.
type ExecResult struct {
	ExitCode       int32
	Stdout, Stderr []byte
}

func (r *Runtime) snapshotLocked(c *container) Container {
	out := Container{
		ID: c.id, SandboxID: c.sandboxID, Name: c.cfg.GetMetadata().GetName(), Attempt: c.cfg.GetMetadata().GetAttempt(),
		State: c.state, ExitCode: c.exitCode, Image: c.cfg.GetImage().GetImage(), Labels: maps.Clone(c.cfg.GetLabels()),
		LogPath: c.logPath, Config: proto.Clone(c.cfg).(*runtimeapi.ContainerConfig),
		CreatedAt: c.createdAt, StartedAt: c.startedAt, FinishedAt: c.finishedAt,
	}
	if s, ok := r.sandboxes[c.sandboxID]; ok {
		md := s.cfg.GetMetadata()
		out.PodName, out.PodNamespace, out.PodUID = md.GetName(), md.GetNamespace(), md.GetUid()
	}
	return out
}

// Containers lists every container, oldest first.
func (r *Runtime) Containers() []Container {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Container, 0, len(r.containers))
	for _, c := range r.containers {
		out = append(out, r.snapshotLocked(c))
	}
	slices.SortFunc(out, func(a, b Container) int {
		return compareCreated(a.CreatedAt.UnixNano(), b.CreatedAt.UnixNano(), a.ID, b.ID)
	})
	return out
}

// Sandboxes lists every sandbox, oldest first.
func (r *Runtime) Sandboxes() []Sandbox {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Sandbox, 0, len(r.sandboxes))
	for _, s := range r.sandboxes {
		md := s.cfg.GetMetadata()
		out = append(out, Sandbox{
			ID: s.id, Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid(), Attempt: md.GetAttempt(),
			State: s.state, IP: s.ip, Labels: maps.Clone(s.cfg.GetLabels()), LogDirectory: s.cfg.GetLogDirectory(),
			Config: proto.Clone(s.cfg).(*runtimeapi.PodSandboxConfig), CreatedAt: s.createdAt,
		})
	}
	slices.SortFunc(out, func(a, b Sandbox) int {
		return compareCreated(a.CreatedAt.UnixNano(), b.CreatedAt.UnixNano(), a.ID, b.ID)
	})
	return out
}

// ContainerOf returns the newest container named name of the pod
// namespace/pod (any uid).
func (r *Runtime) ContainerOf(namespace, pod, name string) (Container, bool) {
	var found Container
	ok := false
	for _, c := range r.Containers() {
		if c.PodNamespace == namespace && c.PodName == pod && c.Name == name {
			found, ok = c, true
		}
	}
	return found, ok
}

// Changed returns a channel closed at the next change of the runtime's
// sandboxes or containers, for tests that wait on the runtime.
func (r *Runtime) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Exit makes a running container exit with code, as if its process ended
// (reason Completed for 0, Error otherwise).
func (r *Runtime) Exit(id string, code int32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return fmt.Errorf("sim: container %q: %w", id, errNotFound)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("sim: container %q is %s, not running", id, c.state)
	}
	r.exitLocked(c, code, "")
	return nil
}

// SetOnStart sets what happens when a container starts: when fn says
// exit, the container exits at once with code (a crash-looping program).
// nil: containers keep running.
func (r *Runtime) SetOnStart(fn func(Container) (exit bool, code int32)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onStart = fn
}

// SetExec sets how ExecSync answers (nil: exit 0, no output).
func (r *Runtime) SetExec(fn func(c Container, cmd []string) ExecResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exec = fn
}

// SetImageMissing declares an image missing from its registry (its pulls
// fail with not found) or, with missing false, available again. An image
// already pulled stays.
func (r *Runtime) SetImageMissing(ref string, missing bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if missing {
		r.missing[NormalizeImage(ref)] = true
	} else {
		delete(r.missing, NormalizeImage(ref))
	}
}

// HasImage reports whether ref has been pulled (or was present).
func (r *Runtime) HasImage(ref string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.findImageLocked(ref)
	return ok
}

// SetCondition sets a runtime condition (runtimeapi.RuntimeReady or
// runtimeapi.NetworkReady) that Status reports. While NetworkReady is
// false, RunPodSandbox fails for pods not on the host network.
func (r *Runtime) SetCondition(typ string, ok bool, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conditions[typ] = &runtimeapi.RuntimeCondition{Type: typ, Status: ok, Reason: reason, Message: message}
}

// WriteLog appends a line to a container's log file in the CRI format
// ("<RFC3339Nano> <stream> F <text>"), stamped with the runtime's clock.
func (r *Runtime) WriteLog(id, stream, line string) error {
	r.mu.Lock()
	c, ok := r.containers[id]
	var path string
	if ok {
		path = c.logPath
	}
	now := r.clock.Now()
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("sim: container %q: %w", id, errNotFound)
	}
	if path == "" {
		return fmt.Errorf("sim: container %q has no log path", id)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	defer f.Close()
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(line, "\n"), "\n") {
		fmt.Fprintf(&b, "%s %s F %s\n", now.UTC().Format(time.RFC3339Nano), stream, l)
	}
	_, err = f.WriteString(b.String())
	return err
}

// fault is a failure injected into the next calls of an operation.
type fault struct {
	n   int
	err error
}

// ErrInjected is the default error of FailNext.
var ErrInjected = errors.New("injected failure")

// FailNext makes the next n calls of op (a CRI method name, such as
// "RunPodSandbox" or "PullImage") fail with err (ErrInjected, code
// Unavailable, when nil). Errors wrapping the package's categories keep
// their gRPC code: see Code.
func (r *Runtime) FailNext(op string, n int, err error) {
	if err == nil {
		err = fmt.Errorf("%w: %s", errUnavailable, ErrInjected)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[op] = &fault{n: n, err: err}
}

// SetLatency makes every call of op take at least d longer (0 removes it).
func (r *Runtime) SetLatency(op string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d <= 0 {
		delete(r.latency, op)
	} else {
		r.latency[op] = d
	}
}

// Calls returns how many calls of op the runtime received (failed ones too).
func (r *Runtime) Calls(op string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[op]
}

// before runs before each call of op: it counts the call, waits the
// latency set for op and returns the injected error, if any.
func (r *Runtime) before(ctx context.Context, op string) error {
	r.mu.Lock()
	r.calls[op]++
	d := r.latency[op]
	var err error
	if f := r.faults[op]; f != nil && f.n > 0 {
		f.n--
		err = f.err
	}
	r.mu.Unlock()
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	return err
}
