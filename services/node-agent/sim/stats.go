package sim

import (
	"context"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Usage is what a simulated running container uses: a steady CPU rate
// and a working set of memory.
type Usage struct {
	// NanoCores is the CPU rate, in billionths of a core: the container's
	// cumulative usageCoreNanoSeconds grows by NanoCores per second of
	// the runtime's clock while it runs.
	NanoCores uint64
	// WorkingSetBytes is the container's memory working set.
	WorkingSetBytes uint64
}

// DefaultUsage is every running container's usage unless Options.Usage or
// SetUsage says otherwise: 5m of CPU and 8 MiB of memory.
func DefaultUsage(Container) Usage { return Usage{NanoCores: 5_000_000, WorkingSetBytes: 8 << 20} }

// SetUsage sets what running containers use from now on (nil:
// DefaultUsage); the CPU time used so far is kept. fn is called with the
// runtime locked: it must not call the runtime.
func (r *Runtime) SetUsage(fn func(Container) Usage) {
	if fn == nil {
		fn = DefaultUsage
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	for _, c := range r.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			r.accrueLocked(c, now) // the old rate up to now
		}
	}
	r.usage = fn
}

// accrueLocked adds the CPU time a running container used from c.cpuAt
// to now at its current rate.
func (r *Runtime) accrueLocked(c *container, now time.Time) {
	// On the wall clock, as the timestamps the stats carry (not the
	// monotonic one, which drifts from it by parts in 1e8).
	d := time.Duration(now.UnixNano() - c.cpuAt.UnixNano())
	if d <= 0 {
		return
	}
	rate := r.usage(r.snapshotLocked(c)).NanoCores
	// rate (ns of CPU per s) * d (ns) / 1e9, without overflowing.
	hi, lo := bits.Mul64(rate, uint64(d))
	if hi >= uint64(time.Second) {
		c.cpuNanos = ^uint64(0)
	} else {
		q, _ := bits.Div64(hi, lo, uint64(time.Second))
		c.cpuNanos += q
	}
	c.cpuAt = now
}

// containerStatsLocked is a container's stats at now, as containerd
// reports them: CPU and memory for a running container, only its
// attributes otherwise (its cgroup is gone).
func (r *Runtime) containerStatsLocked(c *container, now time.Time) *runtimeapi.ContainerStats {
	st := &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{
		Id: c.id, Metadata: proto.Clone(c.cfg.GetMetadata()).(*runtimeapi.ContainerMetadata),
		Labels: maps.Clone(c.cfg.GetLabels()), Annotations: maps.Clone(c.cfg.GetAnnotations()),
	}}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return st
	}
	r.accrueLocked(c, now)
	ts := now.UnixNano()
	st.Cpu = &runtimeapi.CpuUsage{Timestamp: ts, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: c.cpuNanos}}
	ws := r.usage(r.snapshotLocked(c)).WorkingSetBytes
	st.Memory = &runtimeapi.MemoryUsage{Timestamp: ts, WorkingSetBytes: &runtimeapi.UInt64Value{Value: ws}, UsageBytes: &runtimeapi.UInt64Value{Value: ws}}
	return st
}

// sandboxStatsLocked is a ready sandbox's stats: its containers' (of
// containers, the runtime's, oldest first) and, as its cgroup's, their
// sum (the CPU time of the exited ones too).
func (r *Runtime) sandboxStatsLocked(s *sandbox, containers []*container, now time.Time) *runtimeapi.PodSandboxStats {
	var cpu, mem uint64
	var cs []*runtimeapi.ContainerStats
	for _, c := range containers {
		if c.sandboxID != s.id {
			continue
		}
		st := r.containerStatsLocked(c, now)
		cs = append(cs, st)
		cpu += c.cpuNanos
		mem += st.GetMemory().GetWorkingSetBytes().GetValue()
	}
	ts := now.UnixNano()
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id: s.id, Metadata: proto.Clone(s.cfg.GetMetadata()).(*runtimeapi.PodSandboxMetadata),
			Labels: maps.Clone(s.cfg.GetLabels()), Annotations: maps.Clone(s.cfg.GetAnnotations()),
		},
		Linux: &runtimeapi.LinuxPodSandboxStats{
			Cpu:        &runtimeapi.CpuUsage{Timestamp: ts, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpu}},
			Memory:     &runtimeapi.MemoryUsage{Timestamp: ts, WorkingSetBytes: &runtimeapi.UInt64Value{Value: mem}, UsageBytes: &runtimeapi.UInt64Value{Value: mem}},
			Containers: cs,
		},
	}
}

func (r *Runtime) sortedContainersLocked() []*container {
	out := slices.Collect(maps.Values(r.containers))
	slices.SortFunc(out, func(a, b *container) int {
		return compareCreated(a.createdAt.UnixNano(), b.createdAt.UnixNano(), a.id, b.id)
	})
	return out
}

// ContainerStats implements RuntimeService.
func (r *Runtime) ContainerStats(_ context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[req.GetContainerId()]
	if !ok {
		return nil, fmt.Errorf("%w: failed to find container %q", errNotFound, req.GetContainerId())
	}
	return &runtimeapi.ContainerStatsResponse{Stats: r.containerStatsLocked(c, r.clock.Now())}, nil
}

// ListContainerStats implements RuntimeService: every container that
// matches the filter, oldest first (exited ones without CPU and memory).
func (r *Runtime) ListContainerStats(_ context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	out := &runtimeapi.ListContainerStatsResponse{}
	for _, c := range r.sortedContainersLocked() {
		if (f.GetId() != "" && f.GetId() != c.id) || (f.GetPodSandboxId() != "" && f.GetPodSandboxId() != c.sandboxID) ||
			!matches(c.cfg.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		out.Stats = append(out.Stats, r.containerStatsLocked(c, now))
	}
	return out, nil
}

// PodSandboxStats implements RuntimeService; a sandbox that is not ready
// has none (Unavailable, as containerd answers).
func (r *Runtime) PodSandboxStats(_ context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[req.GetPodSandboxId()]
	if !ok {
		return nil, fmt.Errorf("%w: failed to find sandbox %q", errNotFound, req.GetPodSandboxId())
	}
	if s.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, fmt.Errorf("%w: failed to get pod sandbox stats since sandbox container %q is not in ready state", errUnavailable, s.id)
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: r.sandboxStatsLocked(s, r.sortedContainersLocked(), r.clock.Now())}, nil
}

// ListPodSandboxStats implements RuntimeService: the ready sandboxes that
// match the filter, oldest first (containerd skips the others).
func (r *Runtime) ListPodSandboxStats(_ context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	sbs := slices.Collect(maps.Values(r.sandboxes))
	slices.SortFunc(sbs, func(a, b *sandbox) int {
		return compareCreated(a.createdAt.UnixNano(), b.createdAt.UnixNano(), a.id, b.id)
	})
	containers := r.sortedContainersLocked() // once, not per sandbox
	out := &runtimeapi.ListPodSandboxStatsResponse{}
	for _, s := range sbs {
		if s.state != runtimeapi.PodSandboxState_SANDBOX_READY || (f.GetId() != "" && f.GetId() != s.id) || !matches(s.cfg.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		out.Stats = append(out.Stats, r.sandboxStatsLocked(s, containers, now))
	}
	return out, nil
}
