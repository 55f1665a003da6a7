package agent

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/node-agent/cri"
)

// The labels and annotations the agent puts on sandboxes and containers,
// with the kubelet's names, so that the pod a runtime object belongs to
// can be found again after a restart (and by crictl users).
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"

	annotationContainerHash   = "io.kubernetes.container.hash"
	annotationRestartCount    = "io.kubernetes.container.restartCount"
	annotationGracePeriod     = "io.kubernetes.pod.terminationGracePeriod"
	annotationContainerIsInit = "skiff.dev/init-container"
)

// sandboxInfo is one sandbox of a pod, as the runtime reports it.
type sandboxInfo struct {
	ID        string
	UID       string
	Attempt   uint32
	Ready     bool
	CreatedAt time.Time
	IP        string // "" on the host network or when stopped
}

// containerInfo is one container of a pod, as the runtime reports it.
type containerInfo struct {
	ID           string
	SandboxID    string
	UID          string
	Name         string
	RestartCount int32
	Hash         string
	GracePeriod  int64 // the pod's terminationGracePeriodSeconds when created (-1: unknown)
	State        runtimeapi.ContainerState
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int32
	Reason       string
	Message      string
	ImageRef     string
	LogPath      string
}

func (c *containerInfo) running() bool { return c.State == runtimeapi.ContainerState_CONTAINER_RUNNING }

// exited reports whether the container ran and ended (or is in a state the
// runtime cannot tell, which the agent treats the same way).
func (c *containerInfo) exited() bool {
	return c.State == runtimeapi.ContainerState_CONTAINER_EXITED || c.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN
}

// podRuntime is what the runtime holds for one pod (one uid, or every uid
// of a namespace/name), newest first.
type podRuntime struct {
	Sandboxes  []*sandboxInfo
	Containers []*containerInfo
}

// forUID returns the part of r that belongs to uid.
func (r *podRuntime) forUID(uid string) *podRuntime {
	out := &podRuntime{}
	for _, s := range r.Sandboxes {
		if s.UID == uid {
			out.Sandboxes = append(out.Sandboxes, s)
		}
	}
	for _, c := range r.Containers {
		if c.UID == uid {
			out.Containers = append(out.Containers, c)
		}
	}
	return out
}

// others returns the part of r that does not belong to uid.
func (r *podRuntime) others(uid string) *podRuntime {
	out := &podRuntime{}
	for _, s := range r.Sandboxes {
		if s.UID != uid {
			out.Sandboxes = append(out.Sandboxes, s)
		}
	}
	for _, c := range r.Containers {
		if c.UID != uid {
			out.Containers = append(out.Containers, c)
		}
	}
	return out
}

func (r *podRuntime) empty() bool { return len(r.Sandboxes) == 0 && len(r.Containers) == 0 }

// newestSandbox is the pod's latest sandbox, or nil.
func (r *podRuntime) newestSandbox() *sandboxInfo {
	if len(r.Sandboxes) == 0 {
		return nil
	}
	return r.Sandboxes[0]
}

// latest returns the newest container named name (in sandbox sandboxID
// when not empty), or nil.
func (r *podRuntime) latest(name, sandboxID string) *containerInfo {
	for _, c := range r.Containers {
		if c.Name == name && (sandboxID == "" || c.SandboxID == sandboxID) {
			return c
		}
	}
	return nil
}

// previous returns the container named name before latest (any sandbox),
// or nil.
func (r *podRuntime) previous(name string) *containerInfo {
	seen := false
	for _, c := range r.Containers {
		if c.Name != name {
			continue
		}
		if seen {
			return c
		}
		seen = true
	}
	return nil
}

// containerHash identifies a container's spec: a change restarts the
// container. It is stored on the container, so it must not change between
// agent versions for the same spec more than needed; it hashes the
// deterministic protobuf encoding.
func containerHash(c *corev1.Container) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	h := fnv.New64a()
	h.Write(b)
	return strconv.FormatUint(h.Sum64(), 16)
}

// observer reads pods' runtime state. Exited containers do not change, so
// their statuses are remembered; running ones are asked for again only
// when the list shows a change of state.
type observer struct {
	rt *cri.Client

	mu        sync.Mutex
	known     map[string]*containerInfo // by container id
	sandboxIP map[string]string         // by sandbox id, for ready sandboxes
}

func newObserver(rt *cri.Client) *observer {
	return &observer{rt: rt, known: map[string]*containerInfo{}, sandboxIP: map[string]string{}}
}

// observe returns what the runtime holds for namespace/name, every uid.
func (o *observer) observe(ctx context.Context, namespace, name string) (*podRuntime, error) {
	sel := map[string]string{labelPodNamespace: namespace, labelPodName: name}
	sbs, err := o.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing sandboxes: %w", err)
	}
	cs, err := o.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	out := &podRuntime{}
	for _, s := range sbs {
		info := &sandboxInfo{
			ID: s.GetId(), UID: s.GetLabels()[labelPodUID], Attempt: s.GetMetadata().GetAttempt(),
			Ready: s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: time.Unix(0, s.GetCreatedAt()),
		}
		if info.Ready {
			ip, err := o.sandboxAddress(ctx, s.GetId())
			if err != nil && !cri.IsNotFound(err) {
				return nil, fmt.Errorf("sandbox %s status: %w", s.GetId(), err)
			}
			info.IP = ip
		}
		out.Sandboxes = append(out.Sandboxes, info)
	}
	for _, c := range cs {
		info, err := o.container(ctx, c)
		if cri.IsNotFound(err) {
			continue // removed since the list
		}
		if err != nil {
			return nil, fmt.Errorf("container %s status: %w", c.GetId(), err)
		}
		out.Containers = append(out.Containers, info)
	}
	sortNewestFirst(out)
	return out, nil
}

func sortNewestFirst(r *podRuntime) {
	slices.SortStableFunc(r.Sandboxes, func(a, b *sandboxInfo) int {
		if a.Attempt != b.Attempt {
			return int(b.Attempt) - int(a.Attempt)
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	slices.SortStableFunc(r.Containers, func(a, b *containerInfo) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return int(b.RestartCount) - int(a.RestartCount)
	})
}

func (o *observer) sandboxAddress(ctx context.Context, id string) (string, error) {
	o.mu.Lock()
	ip, ok := o.sandboxIP[id]
	o.mu.Unlock()
	if ok {
		return ip, nil
	}
	st, err := o.rt.PodSandboxStatus(ctx, id)
	if err != nil {
		return "", err
	}
	ip = st.GetNetwork().GetIp()
	o.mu.Lock()
	o.sandboxIP[id] = ip
	o.mu.Unlock()
	return ip, nil
}

// container returns the status of a listed container, from memory when
// its state has not changed.
func (o *observer) container(ctx context.Context, c *runtimeapi.Container) (*containerInfo, error) {
	o.mu.Lock()
	k, ok := o.known[c.GetId()]
	o.mu.Unlock()
	if ok && k.State == c.GetState() {
		return k, nil
	}
	st, err := o.rt.ContainerStatus(ctx, c.GetId())
	if err != nil {
		return nil, err
	}
	info := containerInfoOf(st, c.GetPodSandboxId())
	if info.State == runtimeapi.ContainerState_CONTAINER_RUNNING || info.exited() {
		o.mu.Lock()
		o.known[c.GetId()] = info
		o.mu.Unlock()
	}
	return info, nil
}

// forget drops what is remembered of removed containers and sandboxes.
func (o *observer) forget(r *podRuntime) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range r.Containers {
		delete(o.known, c.ID)
	}
	for _, s := range r.Sandboxes {
		delete(o.sandboxIP, s.ID)
	}
}

// forgetSandbox drops a stopped sandbox's address.
func (o *observer) forgetSandbox(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.sandboxIP, id)
}

func containerInfoOf(st *runtimeapi.ContainerStatus, sandboxID string) *containerInfo {
	info := &containerInfo{
		ID: st.GetId(), SandboxID: sandboxID, UID: st.GetLabels()[labelPodUID],
		Name: st.GetLabels()[labelContainerName], Hash: st.GetAnnotations()[annotationContainerHash],
		GracePeriod: -1, State: st.GetState(), CreatedAt: unixNano(st.GetCreatedAt()),
		StartedAt: unixNano(st.GetStartedAt()), FinishedAt: unixNano(st.GetFinishedAt()),
		ExitCode: st.GetExitCode(), Reason: st.GetReason(), Message: terminationMessage(st), // termination.go
		ImageRef: st.GetImageRef(), LogPath: st.GetLogPath(),
	}
	if info.Name == "" {
		info.Name = st.GetMetadata().GetName()
	}
	if n, err := strconv.ParseInt(st.GetAnnotations()[annotationRestartCount], 10, 32); err == nil {
		info.RestartCount = int32(n)
	} else {
		info.RestartCount = int32(st.GetMetadata().GetAttempt())
	}
	if g, err := strconv.ParseInt(st.GetAnnotations()[annotationGracePeriod], 10, 64); err == nil {
		info.GracePeriod = g
	}
	return info
}

func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// retain drops what is remembered of containers and sandboxes not in ids
// (the whole runtime's, from a relist).
func (o *observer) retain(ids map[string]bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id := range o.known {
		if !ids[id] {
			delete(o.known, id)
		}
	}
	for id := range o.sandboxIP {
		if !ids[id] {
			delete(o.sandboxIP, id)
		}
	}
}
