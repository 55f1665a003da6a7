package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/sim"
)

const mi = 1 << 20

func TestParseEvictionHard(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: "memory.available<100Mi", want: "memory.available<100Mi"},
		{in: "memory.available<10%, memory.available<1Gi", want: "memory.available<10%,memory.available<1Gi"},
		{in: "memory.available>100Mi", err: `invalid eviction threshold "memory.available>100Mi": want signal<value, the only operator is <`},
		{in: "memory.free<1Gi", err: "unsupported eviction signal memory.free"},
		{in: "nodefs.available<10%", err: "eviction signal nodefs.available is not supported by Skiff (only memory.available)"},
		{in: "memory.available<-1Mi", err: "eviction threshold memory.available cannot be negative: -1Mi"},
		{in: "memory.available<120%", err: "invalid eviction threshold memory.available<120%: percentage must be between 0% and 100%"},
		{in: "memory.available<lots", err: "invalid eviction threshold memory.available<lots"},
	} {
		ts, err := ParseEvictionHard(tc.in)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		var got []string
		for _, th := range ts {
			got = append(got, th.String())
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%q: %v, want %s", tc.in, got, tc.want)
		}
	}
}

func TestThresholdsMet(t *testing.T) {
	ts, _ := ParseEvictionHard("memory.available<100Mi,memory.available<20%")
	o := memoryObservation{capacity: 1000 * mi, workingSet: 850 * mi} // 150Mi available
	met := thresholdsMet(ts, o)
	if len(met) != 1 || met[0].String() != "memory.available<20%" {
		t.Errorf("met %v, want only the 20%% (200Mi) threshold", met)
	}
	o.workingSet = 800 * mi // exactly 200Mi: not below
	if met := thresholdsMet(ts, o); len(met) != 0 {
		t.Errorf("met %v at the threshold, want none", met)
	}
}

// evPod is a pod for the eviction tables: its memory request (0: none;
// "g": requests = limits, Guaranteed) and priority.
func evPod(name string, request string, priority int32) *corev1.Pod {
	c := &corev1.Container{Name: "app", Image: "demo"}
	switch {
	case request == "g":
		r := map[string]string{"cpu": "100m", "memory": "100Mi"}
		c.Resources = &corev1.ResourceRequirements{Requests: r, Limits: r}
	case request != "":
		c.Resources = &corev1.ResourceRequirements{Requests: map[string]string{"memory": request}}
	}
	return &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name, Uid: "uid-" + name},
		Spec: &corev1.PodSpec{Priority: &priority, Containers: []*corev1.Container{c}}}
}

func evictionUsage(uid string, bytes int64) *podStats {
	return &podStats{uid: uid, containers: map[string]*containerStats{
		"app": {memory: memSample{workingSet: uint64(bytes), ok: true}}}}
}

func TestRankMemoryPressure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pods  []*corev1.Pod
		usage map[string]int64 // by pod name, bytes; absent: no stats
		want  []string
	}{
		{"BestEffort, then Burstable over its request, then Guaranteed",
			[]*corev1.Pod{evPod("guaranteed", "g", 0), evPod("burstable", "50Mi", 0), evPod("besteffort", "", 0)},
			map[string]int64{"guaranteed": 90 * mi, "burstable": 60 * mi, "besteffort": 5 * mi},
			// besteffort and burstable both exceed their requests: the
			// larger usage above the request (10Mi vs 5Mi) first.
			[]string{"burstable", "besteffort", "guaranteed"}},
		{"exceeding the request comes before priority",
			[]*corev1.Pod{evPod("low-within", "100Mi", 0), evPod("high-over", "10Mi", 1000)},
			map[string]int64{"low-within": 90 * mi, "high-over": 11 * mi},
			[]string{"high-over", "low-within"}},
		{"then the lower priority",
			[]*corev1.Pod{evPod("high", "", 1000), evPod("low", "", -5)},
			map[string]int64{"high": 500 * mi, "low": 1 * mi},
			[]string{"low", "high"}},
		{"then the larger usage above the request",
			[]*corev1.Pod{evPod("small", "", 0), evPod("big", "", 0), evPod("mid", "", 0)},
			map[string]int64{"small": 1 * mi, "big": 300 * mi, "mid": 20 * mi},
			[]string{"big", "mid", "small"}},
		{"within requests: the one least below its request first",
			[]*corev1.Pod{evPod("far-below", "500Mi", 0), evPod("near", "100Mi", 0)},
			map[string]int64{"far-below": 100 * mi, "near": 99 * mi},
			[]string{"near", "far-below"}},
		{"pods without stats first",
			[]*corev1.Pod{evPod("measured", "", 0), evPod("unknown", "g", 0)},
			map[string]int64{"measured": 100 * mi},
			[]string{"unknown", "measured"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stats := map[string]*podStats{}
			for _, p := range tc.pods {
				if u, ok := tc.usage[p.GetMetadata().GetName()]; ok {
					stats[p.GetMetadata().GetUid()] = evictionUsage(p.GetMetadata().GetUid(), u)
				}
			}
			pods := slices.Clone(tc.pods)
			rankMemoryPressure(pods, stats)
			var got []string
			for _, p := range pods {
				got = append(got, p.GetMetadata().GetName())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodMemoryRequest(t *testing.T) {
	always := "Always"
	p := evPod("p", "100Mi", 0)
	p.Spec.InitContainers = []*corev1.Container{
		{Name: "side", RestartPolicy: &always, Resources: &corev1.ResourceRequirements{Requests: map[string]string{"memory": "20Mi"}}},
		{Name: "init", Resources: &corev1.ResourceRequirements{Requests: map[string]string{"memory": "200Mi"}}},
	}
	p.Spec.Overhead = map[string]string{"memory": "10Mi"}
	// max(100 + 20 sidecar, 20 sidecar + 200 init) + 10 overhead
	if got := podMemoryRequest(p); got != 230*mi {
		t.Errorf("request %dMi, want 230Mi", got/mi)
	}
	if got := podMemoryRequest(evPod("none", "", 0)); got != 0 {
		t.Errorf("no request: %d", got)
	}
}

func TestEvictionMessage(t *testing.T) {
	ts, _ := ParseEvictionHard(DefaultEvictionHard)
	o := memoryObservation{capacity: 1000 * mi, workingSet: 1000*mi - 51200*1024}
	p := evPod("web", "64Mi", 0)
	p.Spec.Containers = append(p.Spec.Containers, &corev1.Container{Name: "quiet"})
	s := evictionUsage("uid-web", 100*mi)
	s.containers["quiet"] = &containerStats{memory: memSample{workingSet: 0, ok: true}}
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. " +
		"Container app was using 100Mi, request is 64Mi, has larger consumption of memory. "
	if got := evictionMessage(p, s, ts[0], o); got != want {
		t.Errorf("message\n%q\nwant\n%q", got, want)
	}
	be := evPod("be", "", 0)
	want = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. " +
		"Container app was using 1028Ki, request is 0, has larger consumption of memory. "
	if got := evictionMessage(be, evictionUsage("uid-be", 1028*1024), ts[0], o); got != want {
		t.Errorf("message\n%q\nwant\n%q", got, want)
	}
}

func TestAdmitUnderPressure(t *testing.T) {
	tolerating := evPod("tolerating", "", 0)
	tolerating.Spec.Tolerations = []*corev1.Toleration{{Key: taintMemoryPressure, Operator: "Exists", Effect: "NoSchedule"}}
	other := evPod("other", "", 0)
	other.Spec.Tolerations = []*corev1.Toleration{{Key: "node.kubernetes.io/disk-pressure", Operator: "Exists"}}
	for _, tc := range []struct {
		p      *corev1.Pod
		refuse bool
	}{
		{evPod("besteffort", "", 0), true},
		{evPod("burstable", "10Mi", 0), false},
		{evPod("guaranteed", "g", 0), false},
		{evPod("critical", "", systemCriticalPriority), false},
		{tolerating, false},
		{other, true},
	} {
		msg := admitUnderPressure(tc.p)
		if (msg != "") != tc.refuse {
			t.Errorf("%s: %q, want refused %v", tc.p.GetMetadata().GetName(), msg, tc.refuse)
		}
		if tc.refuse && msg != "The node had condition: [MemoryPressure]. " {
			t.Errorf("%s: message %q", tc.p.GetMetadata().GetName(), msg)
		}
	}
}

// memSource is an injected memory observation the test changes.
type memSource struct {
	mu sync.Mutex
	o  memoryObservation
	n  int // observations taken
}

func (s *memSource) observe(context.Context) (memoryObservation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	pods := map[string]*podStats{}
	for k, v := range s.o.pods {
		pods[k] = v
	}
	return memoryObservation{capacity: s.o.capacity, workingSet: s.o.workingSet, pods: pods}, nil
}

func (s *memSource) set(workingSet int64, pods map[string]*podStats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o.workingSet, s.o.pods = workingSet, pods
}

func (s *memSource) taken() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// TestEvictionUnderMemoryPressure (simulated runtime, the real apiserver,
// injected stats and clock): a node low on memory reports MemoryPressure,
// evicts one pod per interval in the kubelet's order (BestEffort, then
// Burstable over its request, then Guaranteed), refuses new BestEffort
// pods while it lasts and clears the condition after the transition
// period.
func TestEvictionUnderMemoryPressure(t *testing.T) {
	clock := workqueue.NewFakeClock(time.Unix(1_000_000, 0))
	src := &memSource{o: memoryObservation{capacity: 4096 * mi, workingSet: 1024 * mi}}
	const interval, transition = 10 * time.Second, time.Minute
	e := start(t, sim.Options{}, func(c *Config) {
		c.Clock = clock
		c.EvictionHard, _ = ParseEvictionHard(DefaultEvictionHard)
		c.EvictionMonitoringInterval, c.EvictionPressureTransitionPeriod = interval, transition
		c.evictionObserve = src.observe
	})
	ctx := e.ctx
	guaranteed := evPod("guaranteed", "g", 0)
	burstable := evPod("burstable", "50Mi", 0)
	besteffort := evPod("besteffort", "", 0)
	uids := map[string]string{}
	for _, p := range []*corev1.Pod{guaranteed, burstable, besteffort} {
		p.Metadata.Uid = ""
		p.Spec.Containers[0].Image = "demo:v1"
		uids[p.GetMetadata().GetName()] = e.create(p).GetMetadata().GetUid()
	}
	for name := range uids {
		e.untilRunning(name)
	}
	// One check per step of the clock, once the manager's timer waits.
	round := src.taken()
	step := func() {
		t.Helper()
		if err := clock.BlockUntilWaiters(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clock.Step(interval)
		e.until("the eviction manager's check", func() (bool, string) {
			return src.taken() > round, fmt.Sprintf("%d checks", src.taken())
		})
		round = src.taken()
	}
	memoryPressure := func() string {
		for _, n := range e.nodes.Store().List() {
			for _, c := range n.GetStatus().GetConditions() {
				if c.GetType() == "MemoryPressure" {
					return c.GetStatus() + "/" + c.GetReason()
				}
			}
		}
		return ""
	}
	e.until("MemoryPressure False", func() (bool, string) {
		return memoryPressure() == "False/KubeletHasSufficientMemory", memoryPressure()
	})

	// 50Mi available, below 100Mi: the BestEffort pod goes first.
	stats := map[string]*podStats{
		uids["guaranteed"]: evictionUsage(uids["guaranteed"], 90*mi),
		uids["burstable"]:  evictionUsage(uids["burstable"], 60*mi),
		uids["besteffort"]: evictionUsage(uids["besteffort"], 30*mi),
	}
	src.set(4046*mi, stats)
	step()
	evicted := func(name string) *corev1.Pod {
		t.Helper()
		return e.untilPod(name, "evicted", func(p *corev1.Pod) (bool, string) {
			st := p.GetStatus()
			return st.GetPhase() == "Failed" && st.GetReason() == "Evicted" && condition(p, "DisruptionTarget") == "True" &&
				containerStatusOf(p, "app").GetState().GetTerminated() != nil, brief(st)
		})
	}
	got := evicted("besteffort")
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. " +
		"Container app was using 30Mi, request is 0, has larger consumption of memory. "
	if got.GetStatus().GetMessage() != want {
		t.Errorf("message %q, want %q", got.GetStatus().GetMessage(), want)
	}
	for _, c := range got.GetStatus().GetConditions() {
		if c.GetType() == "DisruptionTarget" && (c.GetReason() != "TerminationByKubelet" || c.GetMessage() != want) {
			t.Errorf("DisruptionTarget %v", c)
		}
	}
	e.until("an Evicted event", func() (bool, string) {
		return slices.Contains(e.eventsOf("besteffort"), "Evicted: "+want), strings.Join(e.eventsOf("besteffort"), "; ")
	})
	e.until("MemoryPressure True", func() (bool, string) {
		return memoryPressure() == "True/KubeletHasInsufficientMemory", memoryPressure()
	})
	for _, name := range []string{"burstable", "guaranteed"} {
		if p := e.pod(name); p.GetStatus().GetPhase() != "Running" {
			t.Fatalf("%s evicted together with the first: %s", name, brief(p.GetStatus()))
		}
	}

	// Under pressure a new BestEffort pod is refused; a Burstable one runs.
	late := evPod("late", "", 0)
	late.Metadata.Uid, late.Spec.Containers[0].Image = "", "demo:v1"
	e.create(late)
	refused := e.untilPhase("late", "Failed")
	if st := refused.GetStatus(); st.GetReason() != "Evicted" || st.GetMessage() != "Pod was rejected: The node had condition: [MemoryPressure]. " {
		t.Errorf("refused pod: %s reason %q message %q", st.GetPhase(), st.GetReason(), st.GetMessage())
	}
	sized := evPod("sized", "10Mi", 0)
	sized.Metadata.Uid, sized.Spec.Containers[0].Image = "", "demo:v1"
	e.create(sized)
	e.untilRunning("sized")

	// Still short: the Burstable pod over its request goes next; the
	// others use less than they request.
	stats[e.pod("sized").GetMetadata().GetUid()] = evictionUsage(e.pod("sized").GetMetadata().GetUid(), 1*mi)
	delete(stats, uids["besteffort"])
	src.set(4046*mi, stats)
	step()
	evicted("burstable")
	e.mu.Lock()
	a := e.agent
	e.mu.Unlock()
	if got := testutil.ToFloat64(a.m.evictions.WithLabelValues("memory.available")); got != 2 {
		t.Errorf("kubelet_evictions{eviction_signal=memory.available} = %v, want 2", got)
	}
	if p := e.pod("guaranteed"); p.GetStatus().GetPhase() != "Running" {
		t.Fatalf("guaranteed evicted with burstable: %s", brief(p.GetStatus()))
	}

	// Memory back: no more evictions, and MemoryPressure clears once the
	// transition period passes without the threshold met.
	src.set(1024*mi, stats)
	step()
	for range transition / interval {
		step()
	}
	e.until("MemoryPressure False again", func() (bool, string) {
		return memoryPressure() == "False/KubeletHasSufficientMemory", memoryPressure()
	})
	for _, name := range []string{"guaranteed", "sized"} {
		if p := e.pod(name); p.GetStatus().GetPhase() != "Running" {
			t.Errorf("%s: %s, want still running", name, brief(p.GetStatus()))
		}
	}
}
