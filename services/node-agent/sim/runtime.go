package sim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Clock is the source of the runtime's timestamps (a workqueue.FakeClock
// fits).
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Options configure a Runtime.
type Options struct {
	// Subnet gives sandboxes their IPs (default 10.88.0.0/16; .0 and .1 are
	// skipped).
	Subnet string
	// Images are present from the start (no pull needed).
	Images []string
	// Missing images fail to pull, as a registry answering 404 would.
	Missing []string
	// Clock stamps creation, start and finish times (default: wall clock).
	Clock Clock
	// RuntimeName and RuntimeVersion answer Version (default "skiff-sim",
	// "v0.1.0").
	RuntimeName    string
	RuntimeVersion string
	// Usage is what each running container uses (default DefaultUsage):
	// the stats RPCs report it (stats.go). It is called with the runtime
	// locked: it must not call the runtime.
	Usage func(Container) Usage
}

// Runtime is the in-memory runtime. Its methods are safe for concurrent use.
type Runtime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	opts   Options
	clock  Clock
	prefix netip.Prefix

	mu         sync.Mutex
	sandboxes  map[string]*sandbox
	containers map[string]*container
	images     map[string]*image // by normalized reference and by id
	missing    map[string]bool   // normalized references
	nextIP     netip.Addr
	usedIPs    map[netip.Addr]bool
	conditions map[string]*runtimeapi.RuntimeCondition
	faults     map[string]*fault
	latency    map[string]time.Duration
	calls      map[string]int
	onStart    func(Container) (exit bool, code int32)
	exec       func(c Container, cmd []string) ExecResult
	usage      func(Container) Usage
	changed    chan struct{} // closed and replaced on every state change
}

type sandbox struct {
	id        string
	cfg       *runtimeapi.PodSandboxConfig
	handler   string
	state     runtimeapi.PodSandboxState
	createdAt time.Time
	ip        string
}

type container struct {
	id         string
	sandboxID  string
	cfg        *runtimeapi.ContainerConfig
	imageRef   string
	imageID    string
	state      runtimeapi.ContainerState
	createdAt  time.Time
	startedAt  time.Time
	finishedAt time.Time
	exitCode   int32
	reason     string
	message    string
	logPath    string // absolute; "" when the agent gave none
	// cpuNanos is the CPU time used up to cpuAt (stats.go).
	cpuNanos uint64
	cpuAt    time.Time
}

// New returns a runtime; serve it with Start or Serve.
func New(o Options) (*Runtime, error) {
	if o.Subnet == "" {
		o.Subnet = "10.88.0.0/16"
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.RuntimeName == "" {
		o.RuntimeName = "skiff-sim"
	}
	if o.RuntimeVersion == "" {
		o.RuntimeVersion = "v0.1.0"
	}
	if o.Usage == nil {
		o.Usage = DefaultUsage
	}
	prefix, err := netip.ParsePrefix(o.Subnet)
	if err != nil || !prefix.Addr().Is4() {
		return nil, fmt.Errorf("sim: subnet %q: an IPv4 CIDR is needed", o.Subnet)
	}
	prefix = prefix.Masked()
	r := &Runtime{
		opts:       o,
		clock:      o.Clock,
		prefix:     prefix,
		sandboxes:  map[string]*sandbox{},
		containers: map[string]*container{},
		images:     map[string]*image{},
		missing:    map[string]bool{},
		nextIP:     prefix.Addr().Next().Next(),
		usedIPs:    map[netip.Addr]bool{},
		conditions: map[string]*runtimeapi.RuntimeCondition{
			runtimeapi.RuntimeReady: {Type: runtimeapi.RuntimeReady, Status: true},
			runtimeapi.NetworkReady: {Type: runtimeapi.NetworkReady, Status: true},
		},
		faults:  map[string]*fault{},
		latency: map[string]time.Duration{},
		calls:   map[string]int{},
		usage:   o.Usage,
		changed: make(chan struct{}),
	}
	for _, img := range o.Images {
		r.addImageLocked(img)
	}
	for _, img := range o.Missing {
		r.missing[NormalizeImage(img)] = true
	}
	return r, nil
}

func newID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// notifyLocked wakes the waiters of Changed.
func (r *Runtime) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Runtime) allocIPLocked() (string, error) {
	for range 1 << 16 {
		ip := r.nextIP
		r.nextIP = ip.Next()
		if !r.prefix.Contains(r.nextIP) {
			r.nextIP = r.prefix.Addr().Next().Next()
		}
		if r.prefix.Contains(ip) && !r.usedIPs[ip] {
			r.usedIPs[ip] = true
			return ip.String(), nil
		}
	}
	return "", fmt.Errorf("%w: no free address in %s", errExhausted, r.prefix)
}

func (r *Runtime) releaseIPLocked(s *sandbox) {
	if s.ip == "" {
		return
	}
	if ip, err := netip.ParseAddr(s.ip); err == nil {
		delete(r.usedIPs, ip)
	}
}

func hostNetwork(cfg *runtimeapi.PodSandboxConfig) bool {
	return cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
}

// ---------------------------------------------------------------- RuntimeService

// Version implements RuntimeService.
func (r *Runtime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version: "0.1.0", RuntimeName: r.opts.RuntimeName,
		RuntimeVersion: r.opts.RuntimeVersion, RuntimeApiVersion: "v1",
	}, nil
}

// Status implements RuntimeService.
func (r *Runtime) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &runtimeapi.RuntimeStatus{}
	for _, typ := range []string{runtimeapi.RuntimeReady, runtimeapi.NetworkReady} {
		st.Conditions = append(st.Conditions, proto.Clone(r.conditions[typ]).(*runtimeapi.RuntimeCondition))
	}
	return &runtimeapi.StatusResponse{Status: st}, nil
}

// RunPodSandbox implements RuntimeService.
func (r *Runtime) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	cfg := req.GetConfig()
	md := cfg.GetMetadata()
	if md.GetName() == "" || md.GetUid() == "" || md.GetNamespace() == "" {
		return nil, fmt.Errorf("%w: sandbox config metadata needs name, namespace and uid", errInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sandboxes {
		m := s.cfg.GetMetadata()
		if m.GetName() == md.GetName() && m.GetNamespace() == md.GetNamespace() && m.GetUid() == md.GetUid() && m.GetAttempt() == md.GetAttempt() {
			return nil, fmt.Errorf("%w: failed to reserve sandbox name %q: name is reserved for %q",
				errAlreadyExists, sandboxName(md), s.id)
		}
	}
	if !hostNetwork(cfg) && !r.conditions[runtimeapi.NetworkReady].GetStatus() {
		return nil, fmt.Errorf("%w: failed to setup network for sandbox %q: network is not ready", errUnavailable, sandboxName(md))
	}
	s := &sandbox{
		id: newID(), cfg: proto.Clone(cfg).(*runtimeapi.PodSandboxConfig), handler: req.GetRuntimeHandler(),
		state: runtimeapi.PodSandboxState_SANDBOX_READY, createdAt: r.clock.Now(),
	}
	if !hostNetwork(cfg) {
		ip, err := r.allocIPLocked()
		if err != nil {
			return nil, err
		}
		s.ip = ip
	}
	if dir := cfg.GetLogDirectory(); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: log directory: %v", errInternal, err)
		}
	}
	r.sandboxes[s.id] = s
	r.notifyLocked()
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: s.id}, nil
}

func sandboxName(md *runtimeapi.PodSandboxMetadata) string {
	return fmt.Sprintf("%s_%s_%s_%d", md.GetName(), md.GetNamespace(), md.GetUid(), md.GetAttempt())
}

// StopPodSandbox implements RuntimeService: its containers are stopped, its
// address released.
func (r *Runtime) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return nil, fmt.Errorf("%w: an error occurred when try to find sandbox %q", errNotFound, req.GetPodSandboxId())
	}
	for _, c := range r.containers {
		if c.sandboxID == s.id {
			r.exitLocked(c, 137, "Error")
		}
	}
	if s.state != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		s.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		r.releaseIPLocked(s)
		r.notifyLocked()
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox implements RuntimeService: the sandbox and its
// containers go; removing one that is gone succeeds.
func (r *Runtime) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	if s.state == runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, fmt.Errorf("%w: sandbox container %q is not fully stopped", errFailedPrecondition, s.id)
	}
	for id, c := range r.containers {
		if c.sandboxID == s.id {
			delete(r.containers, id)
		}
	}
	delete(r.sandboxes, s.id)
	r.notifyLocked()
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus implements RuntimeService.
func (r *Runtime) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return nil, fmt.Errorf("%w: an error occurred when try to find sandbox %q: not found", errNotFound, req.GetPodSandboxId())
	}
	st := &runtimeapi.PodSandboxStatus{
		Id: s.id, Metadata: proto.Clone(s.cfg.GetMetadata()).(*runtimeapi.PodSandboxMetadata),
		State: s.state, CreatedAt: s.createdAt.UnixNano(),
		Labels: maps.Clone(s.cfg.GetLabels()), Annotations: maps.Clone(s.cfg.GetAnnotations()),
		RuntimeHandler: s.handler,
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: proto.Clone(s.cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()).(*runtimeapi.NamespaceOption),
		}},
	}
	if s.ip != "" {
		st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: s.ip}
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: st}, nil
}

// ListPodSandbox implements RuntimeService.
func (r *Runtime) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.PodSandbox
	for _, s := range r.sandboxes {
		if f.GetId() != "" && f.GetId() != s.id {
			continue
		}
		if f.GetState() != nil && f.GetState().GetState() != s.state {
			continue
		}
		if !matches(s.cfg.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{
			Id: s.id, Metadata: proto.Clone(s.cfg.GetMetadata()).(*runtimeapi.PodSandboxMetadata),
			State: s.state, CreatedAt: s.createdAt.UnixNano(),
			Labels: maps.Clone(s.cfg.GetLabels()), Annotations: maps.Clone(s.cfg.GetAnnotations()),
			RuntimeHandler: s.handler,
		})
	}
	slices.SortFunc(out, func(a, b *runtimeapi.PodSandbox) int { return compareCreated(a.CreatedAt, b.CreatedAt, a.Id, b.Id) })
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

func compareCreated(a, b int64, ida, idb string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case ida < idb:
		return -1
	case ida > idb:
		return 1
	}
	return 0
}

func matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// CreateContainer implements RuntimeService.
func (r *Runtime) CreateContainer(_ context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	cfg := req.GetConfig()
	md := cfg.GetMetadata()
	if md.GetName() == "" {
		return nil, fmt.Errorf("%w: container config must include metadata.name", errInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return nil, fmt.Errorf("%w: failed to get sandbox %q: not found", errNotFound, req.GetPodSandboxId())
	}
	if s.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, fmt.Errorf("%w: failed to create containerd container: sandbox %q is not ready", errFailedPrecondition, s.id)
	}
	for _, c := range r.containers {
		if c.sandboxID == s.id && c.cfg.GetMetadata().GetName() == md.GetName() && c.cfg.GetMetadata().GetAttempt() == md.GetAttempt() {
			return nil, fmt.Errorf("%w: failed to reserve container name \"%s_%d\": name is reserved for %q",
				errAlreadyExists, md.GetName(), md.GetAttempt(), c.id)
		}
	}
	img, ok := r.findImageLocked(cfg.GetImage().GetImage())
	if !ok {
		return nil, fmt.Errorf("%w: failed to get image %q: not found", errNotFound, cfg.GetImage().GetImage())
	}
	c := &container{
		id: newID(), sandboxID: s.id, cfg: proto.Clone(cfg).(*runtimeapi.ContainerConfig),
		imageRef: img.ref(), imageID: img.id,
		state: runtimeapi.ContainerState_CONTAINER_CREATED, createdAt: r.clock.Now(),
	}
	if cfg.GetLogPath() != "" && s.cfg.GetLogDirectory() != "" {
		c.logPath = filepath.Join(s.cfg.GetLogDirectory(), cfg.GetLogPath())
	}
	r.containers[c.id] = c
	r.notifyLocked()
	return &runtimeapi.CreateContainerResponse{ContainerId: c.id}, nil
}

// StartContainer implements RuntimeService: the container runs at once
// (or exits at once, if Options.OnStart says so).
func (r *Runtime) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	r.mu.Lock()
	c, ok := r.containers[req.GetContainerId()]
	if !ok {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: an error occurred when try to find container %q: not found", errNotFound, req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: container %q is in %s state", errFailedPrecondition, c.id, c.state)
	}
	if s := r.sandboxes[c.sandboxID]; s == nil || s.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: sandbox container %q is not running", errFailedPrecondition, c.sandboxID)
	}
	if c.logPath != "" {
		if err := os.MkdirAll(filepath.Dir(c.logPath), 0o755); err != nil {
			r.mu.Unlock()
			return nil, fmt.Errorf("%w: log path: %v", errInternal, err)
		}
		f, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
		if err != nil {
			r.mu.Unlock()
			return nil, fmt.Errorf("%w: log path: %v", errInternal, err)
		}
		f.Close()
	}
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = r.clock.Now()
	c.cpuAt = c.startedAt
	onStart := r.onStart
	snap := r.snapshotLocked(c)
	r.notifyLocked()
	r.mu.Unlock()
	if onStart != nil {
		if exit, code := onStart(snap); exit {
			r.mu.Lock()
			if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
				r.exitLocked(c, code, "")
			}
			r.mu.Unlock()
		}
	}
	return &runtimeapi.StartContainerResponse{}, nil
}

// exitLocked ends c with code (reason: Completed or Error when empty).
func (r *Runtime) exitLocked(c *container, code int32, reason string) {
	switch c.state {
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		code, reason = 0, ""
	}
	if reason == "" {
		reason = "Completed"
		if code != 0 {
			reason = "Error"
		}
	}
	c.finishedAt = r.clock.Now()
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.accrueLocked(c, c.finishedAt)
	}
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.exitCode = code
	c.reason = reason
	r.notifyLocked()
}

// StopContainer implements RuntimeService: a running container exits with
// 143 (SIGTERM) at once, whatever the timeout.
func (r *Runtime) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[req.GetContainerId()]
	if !ok {
		return nil, fmt.Errorf("%w: an error occurred when try to find container %q: not found", errNotFound, req.GetContainerId())
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.exitLocked(c, 143, "Error")
	} else if c.state == runtimeapi.ContainerState_CONTAINER_CREATED {
		r.exitLocked(c, 0, "")
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

// RemoveContainer implements RuntimeService; removing one that is gone
// succeeds.
func (r *Runtime) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.containers[req.GetContainerId()]; ok {
		delete(r.containers, req.GetContainerId())
		r.notifyLocked()
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// ListContainers implements RuntimeService.
func (r *Runtime) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range r.containers {
		if f.GetId() != "" && f.GetId() != c.id {
			continue
		}
		if f.GetPodSandboxId() != "" && f.GetPodSandboxId() != c.sandboxID {
			continue
		}
		if f.GetState() != nil && f.GetState().GetState() != c.state {
			continue
		}
		if !matches(c.cfg.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		out = append(out, &runtimeapi.Container{
			Id: c.id, PodSandboxId: c.sandboxID,
			Metadata: proto.Clone(c.cfg.GetMetadata()).(*runtimeapi.ContainerMetadata),
			Image:    &runtimeapi.ImageSpec{Image: c.cfg.GetImage().GetImage()}, ImageRef: c.imageRef, ImageId: c.imageID,
			State: c.state, CreatedAt: c.createdAt.UnixNano(),
			Labels: maps.Clone(c.cfg.GetLabels()), Annotations: maps.Clone(c.cfg.GetAnnotations()),
		})
	}
	slices.SortFunc(out, func(a, b *runtimeapi.Container) int { return compareCreated(a.CreatedAt, b.CreatedAt, a.Id, b.Id) })
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

// ContainerStatus implements RuntimeService.
func (r *Runtime) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[req.GetContainerId()]
	if !ok {
		return nil, fmt.Errorf("%w: an error occurred when try to find container %q: not found", errNotFound, req.GetContainerId())
	}
	st := &runtimeapi.ContainerStatus{
		Id: c.id, Metadata: proto.Clone(c.cfg.GetMetadata()).(*runtimeapi.ContainerMetadata),
		State: c.state, CreatedAt: c.createdAt.UnixNano(), ExitCode: c.exitCode,
		Image: &runtimeapi.ImageSpec{Image: c.cfg.GetImage().GetImage()}, ImageRef: c.imageRef, ImageId: c.imageID,
		Reason: c.reason, Message: c.message,
		Labels: maps.Clone(c.cfg.GetLabels()), Annotations: maps.Clone(c.cfg.GetAnnotations()),
		LogPath: c.logPath,
	}
	for _, m := range c.cfg.GetMounts() {
		st.Mounts = append(st.Mounts, proto.Clone(m).(*runtimeapi.Mount))
	}
	if !c.startedAt.IsZero() {
		st.StartedAt = c.startedAt.UnixNano()
	}
	if !c.finishedAt.IsZero() {
		st.FinishedAt = c.finishedAt.UnixNano()
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

// ExecSync implements RuntimeService, answering from Options.Exec.
func (r *Runtime) ExecSync(_ context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	r.mu.Lock()
	c, ok := r.containers[req.GetContainerId()]
	if !ok {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: an error occurred when try to find container %q: not found", errNotFound, req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: container %q is not running", errFailedPrecondition, c.id)
	}
	exec, snap := r.exec, r.snapshotLocked(c)
	r.mu.Unlock()
	res := ExecResult{}
	if exec != nil {
		res = exec(snap, slices.Clone(req.GetCmd()))
	}
	return &runtimeapi.ExecSyncResponse{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode}, nil
}

// UpdateContainerResources implements RuntimeService (recorded, not enforced).
func (r *Runtime) UpdateContainerResources(_ context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[req.GetContainerId()]
	if !ok {
		return nil, fmt.Errorf("%w: container %q: not found", errNotFound, req.GetContainerId())
	}
	if c.cfg.Linux == nil {
		c.cfg.Linux = &runtimeapi.LinuxContainerConfig{}
	}
	c.cfg.Linux.Resources = proto.Clone(req.GetLinux()).(*runtimeapi.LinuxContainerResources)
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// ReopenContainerLog implements RuntimeService (nothing to reopen).
func (r *Runtime) ReopenContainerLog(context.Context, *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

// UpdateRuntimeConfig implements RuntimeService (ignored).
func (r *Runtime) UpdateRuntimeConfig(context.Context, *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}
