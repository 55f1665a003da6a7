package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/events"
	"skiff.dev/internal/podresources"
	"skiff.dev/internal/qos"
	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
)

// The node agent's eviction manager, after the kubelet's
// (pkg/kubelet/eviction): every EvictionMonitoringInterval it compares the
// node's memory.available (capacity less the machine's working set) with
// the --eviction-hard thresholds. While a threshold is met, and for
// EvictionPressureTransitionPeriod after, the node reports
// MemoryPressure=True (the node lifecycle controller then taints it
// node.kubernetes.io/memory-pressure:NoSchedule) and BestEffort pods are
// refused at admission; while it is met, one pod is evicted per interval,
// the first in the kubelet's rankMemoryPressure order. An evicted pod's
// containers are stopped and it ends Failed, reason Evicted, with the
// kubelet's message, a DisruptionTarget condition and an Evicted event.
//
// The decisions (parseThresholds, observe, rankMemoryPressure,
// evictionMessage, admitUnderPressure) are pure; evictionManager.synchronize
// applies them.

// Eviction defaults, the kubelet's.
const (
	SignalMemoryAvailable                   = "memory.available"
	DefaultEvictionHard                     = "memory.available<100Mi"
	DefaultEvictionMonitoringInterval       = 10 * time.Second
	DefaultEvictionPressureTransitionPeriod = 5 * time.Minute
)

// Words of the kubelet's eviction manager.
const (
	reasonEvicted              = "Evicted"
	reasonTerminationByKubelet = "TerminationByKubelet"
	conditionDisruptionTarget  = "DisruptionTarget"
	taintMemoryPressure        = "node.kubernetes.io/memory-pressure"
	// immediateEvictionGracePeriod is a hard eviction's grace period (s).
	immediateEvictionGracePeriod = 1
	// systemCriticalPriority: pods at or above it are never evicted (nor
	// refused), as the kubelet's IsCriticalPod.
	systemCriticalPriority = 2000000000
)

// kubeletSignals are the kubelet's eviction signals; only
// memory.available is implemented.
var kubeletSignals = []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available",
	"imagefs.inodesFree", "containerfs.available", "containerfs.inodesFree", "pid.available", "allocatableMemory.available"}

// Threshold is one hard eviction threshold: signal < quantity, or signal <
// percentage of the capacity.
type Threshold struct {
	Signal     string
	Quantity   *quantity.Quantity // nil: Percentage
	Percentage float64            // of the capacity, in [0, 1]
}

func (t Threshold) String() string {
	if t.Quantity != nil {
		return t.Signal + "<" + t.Quantity.String()
	}
	return t.Signal + "<" + strconv.FormatFloat(t.Percentage*100, 'f', -1, 64) + "%"
}

// value is the threshold in bytes for a capacity, as a quantity.
func (t Threshold) value(capacity int64) quantity.Quantity {
	if t.Quantity != nil {
		return *t.Quantity
	}
	q, _ := quantity.NewQuantity(int64(float64(capacity)*t.Percentage), quantity.BinarySI)
	return q
}

// ParseEvictionHard parses --eviction-hard in the kubelet's syntax:
// "memory.available<100Mi,memory.available<10%". Empty: no thresholds.
func ParseEvictionHard(s string) ([]Threshold, error) {
	var out []Threshold
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		signal, value, ok := strings.Cut(part, "<")
		if !ok {
			return nil, fmt.Errorf("invalid eviction threshold %q: want signal<value, the only operator is <", part)
		}
		if !slices.Contains(kubeletSignals, signal) {
			return nil, fmt.Errorf("unsupported eviction signal %v", signal)
		}
		if signal != SignalMemoryAvailable {
			return nil, fmt.Errorf("eviction signal %s is not supported by Skiff (only %s)", signal, SignalMemoryAvailable)
		}
		t := Threshold{Signal: signal}
		if pct, ok := strings.CutSuffix(value, "%"); ok {
			f, err := strconv.ParseFloat(pct, 64)
			if err != nil || f < 0 || f > 100 {
				return nil, fmt.Errorf("invalid eviction threshold %s: percentage must be between 0%% and 100%%", part)
			}
			t.Percentage = f / 100
		} else {
			q, err := quantity.Parse(value)
			if err != nil {
				return nil, fmt.Errorf("invalid eviction threshold %s: %w", part, err)
			}
			if q.Sign() < 0 {
				return nil, fmt.Errorf("eviction threshold %v cannot be negative: %s", signal, q.String())
			}
			t.Quantity = &q
		}
		out = append(out, t)
	}
	return out, nil
}

// memoryObservation is what one check reads: the node's memory capacity
// and working set (bytes), and the pods' usage by uid.
type memoryObservation struct {
	capacity, workingSet int64
	pods                 map[string]*podStats
}

func (o memoryObservation) available() int64 { return o.capacity - o.workingSet }

// thresholdsMet returns the thresholds o crosses (available below value).
func thresholdsMet(ts []Threshold, o memoryObservation) []Threshold {
	var met []Threshold
	avail := o.available()
	for _, t := range ts {
		v := t.value(o.capacity)
		if v.Value() > avail {
			met = append(met, t)
		}
	}
	return met
}

// podMemoryUsage is a pod's working set: its pod cgroup's, else the sum
// of its containers'. ok is false without stats.
func podMemoryUsage(s *podStats) (int64, bool) {
	if s == nil {
		return 0, false
	}
	if s.memory.ok {
		return int64(s.memory.workingSet), true
	}
	var sum int64
	found := false
	for _, c := range s.containers {
		if c.memory.ok {
			sum += int64(c.memory.workingSet)
			found = true
		}
	}
	return sum, found
}

// podMemoryRequest is the pod's memory request in bytes, as Kubernetes'
// PodRequests counts it (sidecars, init containers and overhead; package
// podresources).
func podMemoryRequest(p *corev1.Pod) int64 {
	req, _ := podresources.Requests(p.GetSpec())
	if m, ok := req["memory"]; ok {
		return m.Value()
	}
	return 0
}

func podPriority(p *corev1.Pod) int32 { return p.GetSpec().GetPriority() }

// rankMemoryPressure orders pods for eviction as the kubelet does:
// orderedBy(exceedMemoryRequests, priority, memory). Pods without stats
// come first; then those using more memory than they request; then lower
// priority first; then the larger usage above the request first. The sort
// is stable: equal pods keep their order.
func rankMemoryPressure(pods []*corev1.Pod, stats map[string]*podStats) {
	usage := func(p *corev1.Pod) (int64, bool) { return podMemoryUsage(stats[p.GetMetadata().GetUid()]) }
	cmpBool := func(a, b bool) int { // true first
		switch {
		case a == b:
			return 0
		case a:
			return -1
		}
		return 1
	}
	slices.SortStableFunc(pods, func(p1, p2 *corev1.Pod) int {
		u1, ok1 := usage(p1)
		u2, ok2 := usage(p2)
		if !ok1 || !ok2 {
			return cmpBool(!ok1, !ok2)
		}
		r1, r2 := podMemoryRequest(p1), podMemoryRequest(p2)
		if c := cmpBool(u1 > r1, u2 > r2); c != 0 {
			return c
		}
		if a, b := podPriority(p1), podPriority(p2); a != b {
			if a < b {
				return -1
			}
			return 1
		}
		switch d1, d2 := u1-r1, u2-r2; {
		case d1 > d2:
			return -1
		case d1 < d2:
			return 1
		}
		return 0
	})
}

// binary renders bytes as the kubelet's messages do (a BinarySI quantity).
func binary(n int64) string {
	q, _ := quantity.NewQuantity(n, quantity.BinarySI)
	return q.String()
}

// evictionMessage is the kubelet's message for a pod evicted under memory
// pressure: the threshold met, and each container using more than it
// requests.
func evictionMessage(p *corev1.Pod, s *podStats, met Threshold, o memoryObservation) string {
	var b strings.Builder
	b.WriteString("The node was low on resource: memory. ")
	v := met.value(o.capacity)
	fmt.Fprintf(&b, "Threshold quantity: %s, available: %s. ", v.String(), binary(o.available()))
	if s == nil {
		return b.String()
	}
	for _, c := range p.GetSpec().GetContainers() {
		cs := s.containers[c.GetName()]
		if cs == nil || !cs.memory.ok {
			continue
		}
		request := quantity.Quantity{}
		if r, ok := c.GetResources().GetRequests()["memory"]; ok {
			if q, err := quantity.Parse(r); err == nil {
				request = q
			}
		}
		if int64(cs.memory.workingSet) > request.Value() {
			fmt.Fprintf(&b, "Container %s was using %s, request is %s, has larger consumption of memory. ", c.GetName(), binary(int64(cs.memory.workingSet)), request.String())
		}
	}
	return b.String()
}

// critical reports whether a pod is never evicted nor refused: a
// system-critical priority, as the kubelet's IsCriticalPod.
func critical(p *corev1.Pod) bool { return podPriority(p) >= systemCriticalPriority }

// admitUnderPressure is the kubelet's eviction admit handler while the
// node has MemoryPressure: BestEffort pods are refused unless they
// tolerate the memory-pressure taint; the others, and critical pods, are
// admitted. It returns the refusal's message, "" to admit.
func admitUnderPressure(p *corev1.Pod) string {
	if critical(p) || qos.Of(p) != qos.BestEffort {
		return ""
	}
	for _, t := range p.GetSpec().GetTolerations() {
		if (t.GetEffect() == "" || t.GetEffect() == "NoSchedule") &&
			((t.GetKey() == "" && t.GetOperator() == "Exists") ||
				(t.GetKey() == taintMemoryPressure && (t.GetOperator() == "Exists" || t.GetValue() == ""))) {
			return ""
		}
	}
	return "The node had condition: [MemoryPressure]. "
}

// evictionManager holds what the checks remember: when a threshold was
// last met (for the pressure transition period).
type evictionManager struct {
	a          *Agent
	thresholds []Threshold
	interval   time.Duration
	transition time.Duration
	observe    func(ctx context.Context) (memoryObservation, error)

	mu       sync.Mutex
	lastMet  time.Time // zero: never
	pressure bool
}

func newEvictionManager(a *Agent) *evictionManager {
	m := &evictionManager{a: a, thresholds: a.cfg.EvictionHard, interval: a.cfg.EvictionMonitoringInterval,
		transition: a.cfg.EvictionPressureTransitionPeriod, observe: a.cfg.evictionObserve}
	if m.observe == nil {
		m.observe = a.observeMemory
	}
	return m
}

// observeMemory reads the runtime's and the machine's stats.
func (a *Agent) observeMemory(ctx context.Context) (memoryObservation, error) {
	snap, err := a.readStats(ctx)
	if err != nil {
		return memoryObservation{}, err
	}
	if snap.nodeErr != nil {
		return memoryObservation{}, snap.nodeErr
	}
	capacity := a.machine.memoryBytes()
	if capacity <= 0 {
		// Without it every pod would look like a threshold crossed.
		return memoryObservation{}, errors.New("the machine's memory is unknown (/proc/meminfo)")
	}
	return memoryObservation{capacity: capacity, workingSet: int64(snap.node.workingSet), pods: snap.pods}, nil
}

// pressureConditions are the node's pressure conditions that are True.
func (a *Agent) pressureConditions() []string {
	if a.eviction.memoryPressure() {
		return []string{"MemoryPressure"}
	}
	return nil
}

// memoryPressure reports whether the node has MemoryPressure now.
func (m *evictionManager) memoryPressure() bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pressure
}

// run checks every interval on the agent's clock until ctx ends.
func (m *evictionManager) run(ctx context.Context) {
	if len(m.thresholds) == 0 {
		return
	}
	for {
		if _, err := m.synchronize(ctx); err != nil && ctx.Err() == nil {
			m.a.log.Warn("eviction manager: check failed", zap.Error(err))
		}
		t := m.a.cfg.Clock.NewTimer(m.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// synchronize is one check: it updates the pressure and, while a
// threshold is met, evicts one pod. It returns the pod evicted, if any.
func (m *evictionManager) synchronize(ctx context.Context) (*corev1.Pod, error) {
	o, err := m.observe(ctx)
	if err != nil {
		return nil, err
	}
	now := m.a.cfg.Clock.Now()
	met := thresholdsMet(m.thresholds, o)
	m.mu.Lock()
	if len(met) > 0 {
		m.lastMet = now
	}
	pressure := !m.lastMet.IsZero() && now.Sub(m.lastMet) < m.transition
	changed := pressure != m.pressure
	m.pressure = pressure
	m.mu.Unlock()
	if changed {
		m.a.log.Info("eviction manager: memory pressure", zap.Bool("pressure", pressure), zap.String("available", binary(o.available())))
		select {
		case m.a.statusKick <- struct{}{}:
		default:
		}
	}
	if len(met) == 0 {
		return nil, nil
	}
	var active []*corev1.Pod
	for _, p := range m.a.pods.Store().List() {
		ph := p.GetStatus().GetPhase()
		if ph == "Succeeded" || ph == "Failed" || p.GetMetadata().GetDeletionTimestamp() != nil || critical(p) || m.a.failing(p.GetMetadata().GetUid()) {
			continue
		}
		active = append(active, p)
	}
	if len(active) == 0 {
		m.a.log.Info("eviction manager: no pod to evict", zap.String("threshold", met[0].String()))
		return nil, nil
	}
	// The informer's order is arbitrary: by name first, for a stable rank.
	slices.SortFunc(active, func(x, y *corev1.Pod) int { return strings.Compare(keyOf(x), keyOf(y)) })
	rankMemoryPressure(active, o.pods)
	p := active[0]
	m.a.log.Info("eviction manager: evicting", zap.String("pod", keyOf(p)), zap.String("threshold", met[0].String()))
	m.a.evictPod(p, evictionMessage(p, o.pods[p.GetMetadata().GetUid()], met[0], o))
	m.a.m.evictions.WithLabelValues(met[0].Signal).Inc()
	return p, nil
}

// podFailure is how the agent ends a pod it evicts or refuses: the
// status' reason and message, and a condition to add (nil: none).
type podFailure struct {
	message string
	cond    *corev1.PodCondition
	kill    bool // stop its containers with the immediate grace period
}

// evictPod evicts a pod as the kubelet's evictPod: the Evicted event, then
// the pod's own sync (one at a time per pod, so no write of its status
// races with this one) stops its containers with the immediate grace
// period and writes the status Failed/Evicted with the message and a
// DisruptionTarget condition (evictionSync).
func (a *Agent) evictPod(p *corev1.Pod, msg string) {
	a.recorder.Event(p, events.EventTypeWarning, reasonEvicted, msg)
	cond := &corev1.PodCondition{Type: conditionDisruptionTarget, Status: "True", Reason: reasonTerminationByKubelet,
		Message: msg, LastTransitionTime: timestamppb.New(a.cfg.Clock.Now())}
	a.mu.Lock()
	a.failures[p.GetMetadata().GetUid()] = podFailure{message: msg, cond: cond, kill: true}
	a.mu.Unlock()
	a.ctrl.Enqueue(keyOf(p))
}

// failing reports whether the agent is about to fail the pod uid.
func (a *Agent) failing(uid string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.failures[uid]
	return ok
}

// evictionSync is the start of a pod's sync: it finishes an eviction the
// manager decided, or refuses a pod that has not started (nothing of it
// in the runtime) while the node has memory pressure and the eviction
// admit handler says so (the kubelet's "Pod was rejected: " message and
// an event). It returns the pod to sync on: with the status Failed the
// agent wrote, when it wrote one the informer may not have yet.
func (a *Agent) evictionSync(ctx context.Context, p *corev1.Pod, rt *podRuntime) (*corev1.Pod, error) {
	uid := p.GetMetadata().GetUid()
	a.mu.Lock()
	f, ok := a.failures[uid]
	last := a.lastStatus[uid]
	a.mu.Unlock()
	if ph := p.GetStatus().GetPhase(); ph == "Succeeded" || ph == "Failed" {
		return p, nil
	}
	if last.status.GetPhase() == "Failed" && last.rv > resourceVersion(p) {
		// Failed by the agent; the informer has not seen it yet.
		q := proto.Clone(p).(*corev1.Pod)
		q.Status = last.status
		return q, nil
	}
	if !ok {
		if !a.eviction.memoryPressure() || len(rt.Sandboxes) > 0 || len(rt.Containers) > 0 || p.GetStatus().GetPhase() != "Pending" {
			return p, nil
		}
		msg := admitUnderPressure(p)
		if msg == "" {
			return p, nil
		}
		a.recorder.Event(p, events.EventTypeWarning, reasonEvicted, msg)
		f = podFailure{message: "Pod was rejected: " + msg}
	}
	if f.kill {
		if err := a.killPod(ctx, p, rt, immediateEvictionGracePeriod); err != nil {
			return nil, err
		}
	}
	written, err := a.failPod(ctx, p, f)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	delete(a.failures, uid)
	a.mu.Unlock()
	return written, nil
}

// failPod writes a pod's status Failed with reason Evicted, f's message
// and condition, as the agent's own write (its later syncs keep it).
func (a *Agent) failPod(ctx context.Context, p *corev1.Pod, f podFailure) (*corev1.Pod, error) {
	cur := p
	var written *corev1.Pod
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		next := proto.Clone(cur).(*corev1.Pod)
		if next.Status == nil {
			next.Status = &corev1.PodStatus{}
		}
		next.Status.Phase, next.Status.Reason, next.Status.Message = "Failed", reasonEvicted, f.message
		if f.cond != nil {
			conds := slices.DeleteFunc(next.Status.Conditions, func(c *corev1.PodCondition) bool { return c.GetType() == f.cond.GetType() })
			next.Status.Conditions = append(conds, f.cond)
		}
		var err error
		written, err = a.podClient.UpdateStatus(ctx, next)
		if apierrors.IsConflict(err) {
			fresh, gerr := a.podClient.Get(ctx, p.GetMetadata().GetNamespace(), p.GetMetadata().GetName())
			if gerr != nil {
				return gerr
			}
			if fresh.GetMetadata().GetUid() != p.GetMetadata().GetUid() {
				return apierrors.NewNotFound("pods", p.GetMetadata().GetName())
			}
			cur = fresh
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("writing status: %w", err)
	}
	a.recordStatus(p.GetMetadata().GetUid(), written.GetStatus(), resourceVersion(written))
	return written, nil
}
