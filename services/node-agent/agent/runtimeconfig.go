package agent

import (
	"fmt"
	"maps"
	"path/filepath"
	"strconv"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/qos"
	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
)

// CFS and shares constants of the kubelet (pkg/kubelet/cm).
const (
	minShares     = 2
	sharesPerCPU  = 1024
	milliCPUToCPU = 1000
	quotaPeriod   = 100000 // 100ms in µs
	minQuota      = 1000
)

// podLogDir is where a pod's container logs go: <root>/<ns>_<name>_<uid>.
func podLogDir(root string, p *corev1.Pod) string {
	m := p.GetMetadata()
	return filepath.Join(root, m.GetNamespace()+"_"+m.GetName()+"_"+m.GetUid())
}

// containerLogPath is a container's log file, relative to the pod's log
// directory: <container>/<restartCount>.log.
func containerLogPath(name string, restartCount int32) string {
	return filepath.Join(name, strconv.Itoa(int(restartCount))+".log")
}

func podLabels(p *corev1.Pod) map[string]string {
	m := p.GetMetadata()
	return map[string]string{labelPodName: m.GetName(), labelPodNamespace: m.GetNamespace(), labelPodUID: m.GetUid()}
}

func gracePeriod(p *corev1.Pod) int64 {
	if g := p.GetMetadata().DeletionGracePeriodSeconds; g != nil {
		return *g
	}
	if g := p.GetSpec().TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return 30
}

// namespaceOptions are the pod's Linux namespaces, as the kubelet's
// namespacesForPod: the node's network, PIDs and IPC with hostNetwork,
// hostPID and hostIPC; with shareProcessNamespace (and not hostPID) one
// PID namespace for the pod, whose first process is the sandbox's pause.
func namespaceOptions(p *corev1.Pod) *runtimeapi.NamespaceOption {
	spec := p.GetSpec()
	ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}
	if spec.GetHostNetwork() {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case spec.GetHostPid():
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case spec.GetShareProcessNamespace():
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if spec.GetHostIpc() {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	return ns
}

// sandboxConfig is the CRI sandbox of pod p: metadata, labels (the pod's
// and the agent's), log directory, hostname, port mappings, namespaces
// and, when cgroupRoot is set, a cgroup parent of the pod's own.
func sandboxConfig(p *corev1.Pod, attempt uint32, logRoot, cgroupRoot string) *runtimeapi.PodSandboxConfig {
	m := p.GetMetadata()
	labels := maps.Clone(m.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, podLabels(p))
	annotations := maps.Clone(m.GetAnnotations())
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: m.GetName(), Namespace: m.GetNamespace(), Uid: m.GetUid(), Attempt: attempt},
		LogDirectory: podLogDir(logRoot, p),
		Labels:       labels,
		Annotations:  annotations,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: namespaceOptions(p)},
		},
	}
	sandboxSecurity(p, cfg.Linux) // securitycontext.go
	if !p.GetSpec().GetHostNetwork() {
		cfg.Hostname = m.GetName()
		if h := p.GetSpec().GetHostname(); h != "" {
			cfg.Hostname = h
		}
	}
	if cgroupRoot != "" {
		cfg.Linux.CgroupParent = filepath.Join(cgroupRoot, "pod"+m.GetUid())
	}
	for _, c := range p.GetSpec().GetContainers() {
		for _, port := range c.GetPorts() {
			cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{
				Protocol: protocol(port.GetProtocol()), ContainerPort: port.GetContainerPort(),
				HostPort: port.GetHostPort(), HostIp: port.GetHostIp(),
			})
		}
	}
	return cfg
}

func protocol(p string) runtimeapi.Protocol {
	switch p {
	case "UDP":
		return runtimeapi.Protocol_UDP
	case "SCTP":
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}

// containerParams is what a container's CRI config needs beyond its spec.
type containerParams struct {
	ImageRef     string // the image id the runtime returned
	RestartCount int32
	Env          []*runtimeapi.KeyValue
	Mounts       []*runtimeapi.Mount
	Init         bool
	OOMScoreAdj  int64

	// ImageUser is the image's user when asked (needsImageUser).
	ImageUser imageUser
	// SeccompProfileRoot holds Localhost seccomp profiles.
	SeccompProfileRoot string
	// Ephemeral: an ephemeral container's stdinOnce and target (nil for
	// the others).
	Ephemeral *ephemeralOptions
}

// containerConfig is the CRI container for c of pod p.
func containerConfig(p *corev1.Pod, c *corev1.Container, o containerParams) (*runtimeapi.ContainerConfig, error) {
	if err := verifyRunAsNonRoot(p, c, o.ImageUser); err != nil {
		return nil, err
	}
	lsc, err := containerSecurity(p, c, o.ImageUser, o.SeccompProfileRoot)
	if err != nil {
		return nil, err
	}
	res, err := linuxResources(c.GetResources())
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", c.GetName(), err)
	}
	labels := podLabels(p)
	labels[labelContainerName] = c.GetName()
	annotations := map[string]string{
		annotationContainerHash: containerHash(c),
		annotationRestartCount:  strconv.Itoa(int(o.RestartCount)),
		annotationGracePeriod:   strconv.FormatInt(gracePeriod(p), 10),
	}
	if o.Init {
		annotations[annotationContainerIsInit] = "true"
	}
	maps.Copy(annotations, terminationAnnotations(c)) // termination.go
	env := map[string]string{}
	for _, kv := range o.Env {
		env[kv.GetKey()] = string(kv.GetValue())
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.GetName(), Attempt: uint32(o.RestartCount)},
		Image:       &runtimeapi.ImageSpec{Image: o.ImageRef, UserSpecifiedImage: c.GetImage()},
		Command:     expandAll(c.GetCommand(), env),
		Args:        expandAll(c.GetArgs(), env),
		WorkingDir:  c.GetWorkingDir(),
		Envs:        o.Env,
		Mounts:      o.Mounts,
		Labels:      labels,
		Annotations: annotations,
		LogPath:     containerLogPath(c.GetName(), o.RestartCount),
		Stdin:       c.GetStdin(),
		Tty:         c.GetTty(),
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       res,
			SecurityContext: lsc,
		},
	}
	res.OomScoreAdj = o.OOMScoreAdj
	applyEphemeral(cfg, o.Ephemeral) // ephemeral.go
	return cfg, nil
}

// linuxResources turns a container's requests and limits into cgroup
// settings as the kubelet does: cpu shares from the cpu request (the
// limit when no request; 2 without either), a CFS quota from the cpu
// limit over a 100ms period, and the memory limit in bytes.
func linuxResources(r *corev1.ResourceRequirements) (*runtimeapi.LinuxContainerResources, error) {
	parse := func(m map[string]string, name string) (quantity.Quantity, bool, error) {
		s, ok := m[name]
		if !ok || s == "" {
			return quantity.Quantity{}, false, nil
		}
		q, err := quantity.Parse(s)
		if err != nil {
			return q, false, fmt.Errorf("%s %q: %w", name, s, err)
		}
		return q, true, nil
	}
	out := &runtimeapi.LinuxContainerResources{}
	cpuReq, hasReq, err := parse(r.GetRequests(), "cpu")
	if err != nil {
		return nil, err
	}
	cpuLim, hasLim, err := parse(r.GetLimits(), "cpu")
	if err != nil {
		return nil, err
	}
	switch {
	case hasReq:
		out.CpuShares = milliCPUToShares(cpuReq.MilliValue())
	case hasLim:
		out.CpuShares = milliCPUToShares(cpuLim.MilliValue())
	default:
		out.CpuShares = minShares
	}
	if hasLim {
		out.CpuPeriod = quotaPeriod
		out.CpuQuota = milliCPUToQuota(cpuLim.MilliValue(), quotaPeriod)
	}
	mem, hasMem, err := parse(r.GetLimits(), "memory")
	if err != nil {
		return nil, err
	}
	if hasMem {
		out.MemoryLimitInBytes = mem.Value()
	}
	return out, nil
}

func milliCPUToShares(milli int64) int64 {
	if milli == 0 {
		return minShares
	}
	return max(milli*sharesPerCPU/milliCPUToCPU, minShares)
}

func milliCPUToQuota(milli, period int64) int64 {
	if milli == 0 {
		return 0
	}
	return max(milli*period/milliCPUToCPU, minQuota)
}

// oomScoreAdj is the kubelet's OOM score adjustment of container c of pod
// p on a node of memCapacity bytes: -997 for Guaranteed pods, 1000 for
// BestEffort, and for Burstable ones 1000 less the container's share of
// the node's memory in thousandths, kept within [2, 999]. (A runtime
// without CAP_SYS_RESOURCE raises a negative value to its own.)
func oomScoreAdj(p *corev1.Pod, c *corev1.Container, memCapacity int64) int64 {
	switch qos.Of(p) {
	case qos.Guaranteed:
		return -997
	case qos.BestEffort:
		return 1000
	}
	req := int64(0)
	if s, ok := c.GetResources().GetRequests()["memory"]; ok {
		if q, err := quantity.Parse(s); err == nil {
			req = q.Value()
		}
	}
	if memCapacity <= 0 {
		return 999
	}
	return min(max(1000-(1000*req)/memCapacity, 2), 999)
}
