package agent

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/hostaddr"
	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Version is the agent's, reported as nodeInfo.kubeletVersion.
const Version = "skiff-v0.1.0"

// nodeConditionTypes are the conditions the agent posts, in order.
var nodeConditionTypes = []string{"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}

// readyCondition is the node's Ready condition for the runtime status st
// (or the error asking for it): True only while the runtime and its
// network are ready, else False with the runtime's reason in the message,
// worded as the kubelet words it. It is pure but for the time stamps,
// which the caller sets.
func readyCondition(st *runtimeapi.RuntimeStatus, err error) *corev1.NodeCondition {
	notReady := func(msg string) *corev1.NodeCondition {
		return &corev1.NodeCondition{Type: "Ready", Status: "False", Reason: "KubeletNotReady", Message: msg}
	}
	if err != nil {
		return notReady(fmt.Sprintf("container runtime is down: %v", err))
	}
	var problems []string
	for _, typ := range []string{runtimeapi.RuntimeReady, runtimeapi.NetworkReady} {
		var c *runtimeapi.RuntimeCondition
		for _, x := range st.GetConditions() {
			if x.GetType() == typ {
				c = x
			}
		}
		what := "container runtime not ready"
		if typ == runtimeapi.NetworkReady {
			what = "container runtime network not ready"
		}
		switch {
		case c == nil:
			problems = append(problems, fmt.Sprintf("%s: %s condition not reported", what, typ))
		case !c.GetStatus():
			problems = append(problems, fmt.Sprintf("%s: %s=false reason:%s message:%s", what, typ, c.GetReason(), c.GetMessage()))
		}
	}
	if len(problems) > 0 {
		return notReady(strings.Join(problems, "; "))
	}
	return &corev1.NodeCondition{Type: "Ready", Status: "True", Reason: "KubeletReady", Message: "kubelet is posting ready status"}
}

// nodeConditions are the conditions to post at now: ready as computed,
// the pressure conditions True when named in pressure (MemoryPressure,
// from the eviction manager), else False, each keeping its
// lastTransitionTime from old when its status did not change.
func nodeConditions(old []*corev1.NodeCondition, ready *corev1.NodeCondition, now time.Time, pressure ...string) []*corev1.NodeCondition {
	ts := timestamppb.New(now)
	prev := map[string]*corev1.NodeCondition{}
	for _, c := range old {
		prev[c.GetType()] = c
	}
	underPressure := map[string][2]string{
		"MemoryPressure": {"KubeletHasInsufficientMemory", "kubelet has insufficient memory available"},
		"DiskPressure":   {"KubeletHasDiskPressure", "kubelet has disk pressure"},
		"PIDPressure":    {"KubeletHasInsufficientPID", "kubelet has insufficient PID available"},
	}
	noPressure := map[string][2]string{
		"MemoryPressure": {"KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		"DiskPressure":   {"KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		"PIDPressure":    {"KubeletHasSufficientPID", "kubelet has sufficient PID available"},
	}
	var out []*corev1.NodeCondition
	for _, typ := range nodeConditionTypes {
		var c *corev1.NodeCondition
		if typ == "Ready" {
			c = proto.Clone(ready).(*corev1.NodeCondition)
		} else if slices.Contains(pressure, typ) {
			c = &corev1.NodeCondition{Type: typ, Status: "True", Reason: underPressure[typ][0], Message: underPressure[typ][1]}
		} else {
			c = &corev1.NodeCondition{Type: typ, Status: "False", Reason: noPressure[typ][0], Message: noPressure[typ][1]}
		}
		c.LastHeartbeatTime = ts
		if p, ok := prev[typ]; ok && p.GetStatus() == c.GetStatus() && p.GetLastTransitionTime() != nil {
			c.LastTransitionTime = p.GetLastTransitionTime()
		} else {
			c.LastTransitionTime = ts
		}
		out = append(out, c)
	}
	return out
}

// conditionsChanged reports whether the conditions differ in anything but
// their heartbeat.
func conditionsChanged(a, b []*corev1.NodeCondition) bool {
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.GetType() != y.GetType() || x.GetStatus() != y.GetStatus() || x.GetReason() != y.GetReason() || x.GetMessage() != y.GetMessage() {
			return true
		}
	}
	return false
}

// machine is what the agent learns of the host once, at start.
type machine struct {
	cpus     int
	memory   string // "<n>Ki"
	hostname string
	ip       string
	system   systemInfo // status.nodeInfo's (nodeinfo.go)
}

func readMachine(nodeIP, hostname string, files hostFiles) machine {
	m := machine{cpus: runtime.NumCPU(), hostname: hostname, ip: nodeIP, system: readSystemInfo(files)}
	if m.hostname == "" {
		m.hostname, _ = os.Hostname()
	}
	if a, ok := hostaddr.Default(); m.ip == "" && ok {
		m.ip = a.String()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.memory = memTotal(b)
	}
	return m
}

// memTotal reads MemTotal from /proc/meminfo as a quantity ("16318012Ki").
func memTotal(meminfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			if _, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				return f[1] + "Ki"
			}
		}
	}
	return ""
}

// memoryBytes is the machine's memory, 0 if unknown.
func (m machine) memoryBytes() int64 {
	if q, err := quantity.Parse(m.memory); err == nil {
		return q.Value()
	}
	return 0
}

// capacity is the node's capacity: the machine's cpus, memory and the pods
// limit, with the overrides.
func (m machine) capacity(maxPods int, overrides map[string]string) map[string]string {
	c := map[string]string{"cpu": strconv.Itoa(m.cpus), "pods": strconv.Itoa(maxPods)}
	if m.memory != "" {
		c["memory"] = m.memory
	}
	maps.Copy(c, overrides)
	return c
}

// desiredNode is the Node the agent registers.
func (a *Agent) desiredNode(ready *corev1.NodeCondition) *corev1.Node {
	labels := map[string]string{
		"kubernetes.io/hostname": a.cfg.NodeName,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     runtime.GOARCH,
	}
	maps.Copy(labels, a.cfg.Labels)
	capacity := a.machine.capacity(a.cfg.MaxPods, a.cfg.Capacity)
	var addrs []*corev1.NodeAddress
	if a.machine.ip != "" {
		addrs = append(addrs, &corev1.NodeAddress{Type: "InternalIP", Address: a.machine.ip})
	}
	if a.machine.hostname != "" {
		addrs = append(addrs, &corev1.NodeAddress{Type: "Hostname", Address: a.machine.hostname})
	}
	var taints []*corev1.Taint
	for _, t := range a.cfg.Taints {
		taints = append(taints, proto.Clone(t).(*corev1.Taint))
	}
	return &corev1.Node{
		Metadata: &metav1.ObjectMeta{Name: a.cfg.NodeName, Labels: labels,
			Annotations: map[string]string{AnnLocalVolumeRoot: a.cfg.LocalVolumeRoot}},
		Spec: &corev1.NodeSpec{Taints: taints},
		Status: &corev1.NodeStatus{
			Capacity:        capacity,
			Allocatable:     maps.Clone(capacity),
			Phase:           "Running",
			Conditions:      nodeConditions(nil, ready, a.cfg.Clock.Now()),
			Addresses:       addrs,
			NodeInfo:        nodeSystemInfo(a.machine.system, a.runtimeName, a.runtimeVersion),
			DaemonEndpoints: &corev1.NodeDaemonEndpoints{KubeletEndpoint: &corev1.DaemonEndpoint{Port: a.cfg.Port}},
		},
	}
}

// register creates the Node or, when it exists (the agent restarted),
// adds the agent's labels and annotations and writes its status.
func (a *Agent) register(ctx context.Context) error {
	st, err := a.rt.Status(ctx)
	ready := a.nodeReady(readyCondition(st, err))
	want := a.desiredNode(ready)
	created, err := a.nodes.Create(ctx, want)
	if err == nil {
		a.setNode(created)
		a.log.Info("node registered", zap.String("ip", a.machine.ip))
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering node %q: %w", a.cfg.NodeName, err)
	}
	err = client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		cur, err := a.nodes.Get(ctx, "", a.cfg.NodeName)
		if err != nil {
			return err
		}
		next := proto.Clone(cur).(*corev1.Node)
		if next.Metadata.Labels == nil {
			next.Metadata.Labels = map[string]string{}
		}
		maps.Copy(next.Metadata.Labels, want.Metadata.Labels)
		if next.Metadata.Annotations == nil {
			next.Metadata.Annotations = map[string]string{}
		}
		maps.Copy(next.Metadata.Annotations, want.Metadata.Annotations)
		if !proto.Equal(next.Metadata, cur.Metadata) {
			if next, err = a.nodes.Update(ctx, next); err != nil {
				return err
			}
		}
		status := want.Status
		status.Conditions = nodeConditions(cur.GetStatus().GetConditions(), ready, a.cfg.Clock.Now(), a.pressureConditions()...)
		next.Status = status
		written, err := a.nodes.UpdateStatus(ctx, next)
		if err != nil {
			return err
		}
		a.setNode(written)
		return nil
	})
	if err != nil {
		return fmt.Errorf("updating node %q: %w", a.cfg.NodeName, err)
	}
	a.log.Info("node exists, status updated")
	return nil
}

// setNode records the node as last written.
func (a *Agent) setNode(n *corev1.Node) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nodeUID = n.GetMetadata().GetUid()
	a.nodeConds = n.GetStatus().GetConditions()
	a.nodeReported = a.cfg.Clock.Now()
}

// syncNodeStatus checks the runtime and writes the node's conditions when
// they changed or were last written NodeStatusReportPeriod ago.
func (a *Agent) syncNodeStatus(ctx context.Context) error {
	st, err := a.rt.Status(ctx)
	a.setRuntimeStatus(st, err)
	a.networkChecked()
	ready := a.nodeReady(readyCondition(st, err))
	now := a.cfg.Clock.Now()
	a.mu.Lock()
	reported := a.nodeReported
	a.mu.Unlock()
	// Compare with the Node as it is in the apiserver, not as the agent
	// last wrote it: the node lifecycle controller may have marked it
	// Unknown meanwhile (after a restart of the agent, say), and only the
	// agent sets it back.
	return client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		cur, err := a.nodes.Get(ctx, "", a.cfg.NodeName)
		if apierrors.IsNotFound(err) {
			return a.register(ctx) // deleted under the agent: register again
		}
		if err != nil {
			return err
		}
		next := nodeConditions(cur.GetStatus().GetConditions(), ready, now, a.pressureConditions()...)
		if !conditionsChanged(cur.GetStatus().GetConditions(), next) && now.Sub(reported) < a.cfg.NodeStatusReportPeriod {
			return nil
		}
		n := proto.Clone(cur).(*corev1.Node)
		n.Status.Conditions = next
		written, err := a.nodes.UpdateStatus(ctx, n)
		if err != nil {
			return err
		}
		if ready.GetStatus() != "True" {
			a.log.Info("node not ready", zap.String("message", ready.GetMessage()))
		}
		a.setNode(written)
		return nil
	})
}
