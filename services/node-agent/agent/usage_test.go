package agent

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	metricsv1beta1 "skiff.dev/proto/metrics/v1beta1"
	nodev1 "skiff.dev/proto/node/v1"
	"skiff.dev/services/node-agent/sim"
)

var u0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func cpuUsage(at time.Time, total uint64) *runtimeapi.CpuUsage {
	return &runtimeapi.CpuUsage{Timestamp: at.UnixNano(), UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: total}}
}

func memUsage(at time.Time, ws uint64) *runtimeapi.MemoryUsage {
	return &runtimeapi.MemoryUsage{Timestamp: at.UnixNano(), WorkingSetBytes: &runtimeapi.UInt64Value{Value: ws}}
}

func statsLabels(ns, name, uid string) map[string]string {
	return map[string]string{labelPodNamespace: ns, labelPodName: name, labelPodUID: uid}
}

func ctrStats(id, name, uid string, cpu *runtimeapi.CpuUsage, mem *runtimeapi.MemoryUsage) *runtimeapi.ContainerStats {
	l := statsLabels("default", "web", uid)
	l[labelContainerName] = name
	return &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{Id: id, Metadata: &runtimeapi.ContainerMetadata{Name: name}, Labels: l}, Cpu: cpu, Memory: mem}
}

func TestParseStats(t *testing.T) {
	sbs := []*runtimeapi.PodSandboxStats{
		{Attributes: &runtimeapi.PodSandboxAttributes{Id: "s1", Labels: statsLabels("default", "web", "u1")},
			Linux: &runtimeapi.LinuxPodSandboxStats{Cpu: cpuUsage(u0, 900), Memory: memUsage(u0, 3000)}},
		{Attributes: &runtimeapi.PodSandboxAttributes{Id: "other", Labels: map[string]string{"not": "ours"}},
			Linux: &runtimeapi.LinuxPodSandboxStats{Cpu: cpuUsage(u0, 1)}},
	}
	cs := []*runtimeapi.ContainerStats{
		ctrStats("c1", "app", "u1", cpuUsage(u0, 500), memUsage(u0, 2000)),
		ctrStats("c0", "sidecar", "u1", cpuUsage(u0.Add(-time.Minute), 7), memUsage(u0, 1)), // restarted: the older instance
		ctrStats("c2", "sidecar", "u1", cpuUsage(u0, 400), memUsage(u0, 1000)),
		ctrStats("c3", "exited", "u1", nil, nil),
		ctrStats("c4", "solo", "u2", cpuUsage(u0, 50), nil), // a pod without sandbox stats
		{Attributes: &runtimeapi.ContainerAttributes{Id: "x", Labels: map[string]string{"not": "ours"}}, Cpu: cpuUsage(u0, 1)},
	}
	got := parseStats(sbs, cs)
	if len(got) != 2 {
		t.Fatalf("pods %v, want u1 and u2 (only the agent's pods)", slices.Sorted(maps.Keys(got)))
	}
	web := got["u1"]
	if web.namespace != "default" || web.name != "web" || web.cpu.coreNanos != 900 || web.memory.workingSet != 3000 {
		t.Errorf("pod u1: %+v, want default/web with its sandbox's 900 ns and 3000 bytes", web)
	}
	names := slices.Sorted(maps.Keys(web.containers))
	if !slices.Equal(names, []string{"app", "sidecar"}) {
		t.Errorf("containers of u1: %v, want app and sidecar (exited ones have no stats)", names)
	}
	if c := web.containers["sidecar"]; c.id != "c2" || c.cpu.coreNanos != 400 {
		t.Errorf("sidecar: %+v, want the instance sampled last (c2)", c)
	}
	if solo := got["u2"]; solo.cpu.ok() || solo.containers["solo"].cpu.coreNanos != 50 || solo.containers["solo"].memory.ok {
		t.Errorf("pod u2: %+v, want no pod-level figures and its container's CPU only", solo)
	}
}

func TestCPURate(t *testing.T) {
	total := func(at time.Time, ns uint64) cpuSample { return cpuSample{at: at, coreNanos: ns, hasTotal: true} }
	cases := []struct {
		name      string
		prev, cur cpuSample
		nanoCores uint64
		window    time.Duration
		ok        bool
	}{
		{"a quarter core over 2s", total(u0, 1e9), total(u0.Add(2*time.Second), 1.5e9), 250_000_000, 2 * time.Second, true},
		{"idle", total(u0, 1e9), total(u0.Add(time.Second), 1e9), 0, time.Second, true},
		{"no first sample, no rate", cpuSample{}, total(u0, 1e9), 0, 0, false},
		{"no first sample, a counter and a rate (containerd 1.6's 0)", cpuSample{}, cpuSample{at: u0, coreNanos: 5, hasTotal: true, hasRate: true}, 0, 0, false},
		{"no counter, the runtime's rate", cpuSample{}, cpuSample{at: u0, nanoCores: 42, hasRate: true}, 42, 0, true},
		{"counter reset (a restart)", total(u0, 5e9), total(u0.Add(time.Second), 1e9), 0, 0, false},
		{"same timestamp", total(u0, 1e9), total(u0, 2e9), 0, 0, false},
	}
	for _, tc := range cases {
		n, w, ok := cpuRate(tc.prev, tc.cur)
		if n != tc.nanoCores || w != tc.window || ok != tc.ok {
			t.Errorf("%s: cpuRate = %d, %v, %v; want %d, %v, %v", tc.name, n, w, ok, tc.nanoCores, tc.window, tc.ok)
		}
	}
}

func TestMachineFiles(t *testing.T) {
	stat := "cpu  100 20 30 4000 50 6 7 8 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"
	if got, err := procStatCPU([]byte(stat)); err != nil || got != (100+20+30+6+7+8)*10_000_000 {
		t.Errorf("procStatCPU = %d, %v; want user+nice+system+irq+softirq+steal = 171 ticks = 1.71e9 ns", got, err)
	}
	if _, err := procStatCPU([]byte("intr 1 2\n")); err == nil {
		t.Error("procStatCPU of a file without a cpu line: no error")
	}
	meminfo := "MemTotal:       16000000 kB\nMemFree:         4000000 kB\nMemAvailable:    9000000 kB\nInactive(file):  2000000 kB\n"
	if got, err := meminfoWorkingSet([]byte(meminfo)); err != nil || got != 10_000_000<<10 {
		t.Errorf("meminfoWorkingSet = %d, %v; want (16e6 - 4e6 - 2e6) KiB", got, err)
	}
	if _, err := meminfoWorkingSet([]byte("Cached: 1 kB\n")); err == nil {
		t.Error("meminfoWorkingSet without MemTotal: no error")
	}
	if v, ok := fieldOf([]byte("usage_usec 1234\nuser_usec 1000\n"), "usage_usec"); !ok || v != 1234 {
		t.Errorf("fieldOf = %d, %v", v, ok)
	}
}

// fakeMachine is a machine whose CPU counter grows by half a core per
// second of clock, with a fixed working set.
func fakeMachine(clock interface{ Now() time.Time }) func() (machineSample, error) {
	start := clock.Now()
	return func() (machineSample, error) {
		now := clock.Now()
		return machineSample{at: now, coreNanos: uint64(now.Sub(start).Nanoseconds() / 2), workingSet: 3 << 30}, nil
	}
}

// series is one gathered sample.
type series struct {
	value float64
	ts    int64 // ms; 0 when the sample has none
}

// gather returns the samples of the named families, by
// "name{label=value,...}".
func gather(t *testing.T, e *env, names ...string) map[string]series {
	t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]series{}
	for _, mf := range mfs {
		if !slices.Contains(names, mf.GetName()) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue()
			if mf.GetType() == dto.MetricType_COUNTER {
				v = m.GetCounter().GetValue()
			}
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = series{v, m.GetTimestampMs()}
		}
	}
	return out
}

var usageMetrics = []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
	"node_cpu_usage_seconds_total", "node_memory_working_set_bytes", "resource_scrape_error"}

// The usage metrics are read from the runtime at each scrape: per
// container and per pod (container=""), with the kubelet's names and
// labels, the runtime's figures as they are, stamped with the time the
// runtime took them; a runtime that fails gives resource_scrape_error 1
// and no pod series, not a failed scrape.
func TestUsageMetricsAreReadOnScrape(t *testing.T) {
	clock := workqueue.NewFakeClock(u0)
	e := start(t, sim.Options{Clock: clock, Usage: func(c sim.Container) sim.Usage {
		if c.Name == "app" {
			return sim.Usage{NanoCores: 250_000_000, WorkingSetBytes: 64 << 20}
		}
		return sim.Usage{NanoCores: 10_000_000, WorkingSetBytes: 4 << 20}
	}}, func(c *Config) {
		c.machineStats = fakeMachine(clock)
		// No scrape here may time out: under load (-race, a load average
		// of 20 on two cores) reading the runtime took over 200 ms.
		c.StatsTimeout = time.Minute
	})
	e.create(pod("web", ctr("app", "demo:v1"), ctr("sidecar", "demo:v1")))
	e.untilRunning("web")
	clock.Step(10 * time.Second)
	ms := clock.Now().UnixMilli()
	want := map[string]series{
		`container_cpu_usage_seconds_total{container=app,namespace=default,pod=web}`:      {2.5, ms},
		`container_cpu_usage_seconds_total{container=sidecar,namespace=default,pod=web}`:  {0.1, ms},
		`container_cpu_usage_seconds_total{container=,namespace=default,pod=web}`:         {2.6, ms},
		`container_memory_working_set_bytes{container=app,namespace=default,pod=web}`:     {64 << 20, ms},
		`container_memory_working_set_bytes{container=sidecar,namespace=default,pod=web}`: {4 << 20, ms},
		`container_memory_working_set_bytes{container=,namespace=default,pod=web}`:        {68 << 20, ms},
		`node_cpu_usage_seconds_total{}`:                                                  {5, ms},
		`node_memory_working_set_bytes{}`:                                                 {3 << 30, ms},
		`resource_scrape_error{}`:                                                         {0, 0},
	}
	got := gather(t, e, usageMetrics...)
	for k, w := range want {
		if g, ok := got[k]; !ok || math.Abs(g.value-w.value) > 1e-9 || g.ts != w.ts {
			t.Errorf("%s = %+v (present %v), want %+v", k, g, ok, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected series %s = %+v", k, got[k])
		}
	}

	// A runtime without pod-level stats (containerd 1.6 for sandboxes
	// without a cgroup parent): the containers' series only.
	e.sim.FailNext("ListPodSandboxStats", 1, status.Error(codes.Unknown, "failed to get cgroup metrics for sandbox: cgroupPath is empty"))
	got = gather(t, e, usageMetrics...)
	for k := range want {
		if _, ok := got[k]; ok == strings.Contains(k, "{container=,") {
			t.Errorf("without sandbox stats: %s present %v, want only the pod-level series gone", k, ok)
		}
	}

	e.sim.FailNext("ListContainerStats", 1, nil)
	got = gather(t, e, usageMetrics...)
	if got[`resource_scrape_error{}`].value != 1 || len(got) != 1 {
		t.Errorf("a failing runtime: %v, want resource_scrape_error 1 alone", got)
	}
}

// A runtime slower than StatsTimeout: the scrape gives up at the timeout,
// with resource_scrape_error 1, rather than waiting for the runtime.
func TestUsageMetricsScrapeIsBoundedByStatsTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	e := start(t, sim.Options{}, func(c *Config) { c.StatsTimeout = timeout })
	e.create(pod("web", ctr("app", "demo:v1")))
	e.untilRunning("web")
	// Far longer than the timeout: a scrape that waited for the runtime
	// would take this, one that gave up returns well before.
	const latency = 30 * time.Second
	e.sim.SetLatency("ListPodSandboxStats", latency)
	start := time.Now()
	got := gather(t, e, usageMetrics...)
	took := time.Since(start)
	if took < timeout || took >= latency/2 || got[`resource_scrape_error{}`].value != 1 || len(got) != 1 {
		t.Errorf("a runtime slower than StatsTimeout (%v): scrape took %v with %v, want it to give up after %v with resource_scrape_error 1 alone", latency, took, got, timeout)
	}
}

// agentClient dials the env's agent's NodeAgent service.
func agentClient(t *testing.T, e *env) nodev1.NodeAgentClient {
	t.Helper()
	n, err := e.nodes.Store().GetByName("", nodeName)
	if !err {
		t.Fatal("node not registered")
	}
	conn, dialErr := grpc.NewClient(net.JoinHostPort("127.0.0.1", strconv.Itoa(int(n.GetStatus().GetDaemonEndpoints().GetKubeletEndpoint().GetPort()))),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if dialErr != nil {
		t.Fatal(dialErr)
	}
	t.Cleanup(func() { conn.Close() })
	return nodev1.NewNodeAgentClient(conn)
}

// nanoCores parses a metrics API "cpu" quantity ("250000000n").
func nanoCores(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimSuffix(s, "n"), 10, 64)
	if err != nil || !strings.HasSuffix(s, "n") {
		t.Fatalf("cpu %q: want nanocores (\"<n>n\")", s)
	}
	return float64(v)
}

// NodeAgent.Usage gives rates over two samples of the runtime's counters
// taken UsageWindow apart (on the real clock here: the sim's counters
// grow with it), and the apiserver's metrics.k8s.io services fan out to
// the agent and shape its answer as PodMetrics and NodeMetrics.
func TestUsageThroughTheAgentAndTheAPIServer(t *testing.T) {
	e := start(t, sim.Options{Usage: func(c sim.Container) sim.Usage {
		if c.PodName == "web" {
			return sim.Usage{NanoCores: 250_000_000, WorkingSetBytes: 64 << 20}
		}
		return sim.Usage{NanoCores: 10_000_000, WorkingSetBytes: 4 << 20}
	}}, func(c *Config) {
		c.UsageWindow = 100 * time.Millisecond
		c.machineStats = fakeMachine(workqueue.RealClock())
	})
	e.create(pod("web", ctr("app", "demo:v1")))
	e.create(pod("db", ctr("db", "demo:v1"), ctr("backup", "demo:v1")))
	e.untilRunning("web")
	e.untilRunning("db")
	ctx, cancel := context.WithTimeout(e.ctx, patience)
	defer cancel()
	// The counters are whole nanoseconds, each read rounds down (the sim
	// accrues at every read, the fake machine halves): a rate over a
	// window of w seconds may be off by a few ns / w.
	near := func(what string, got, want float64) {
		t.Helper()
		if tol := 4 / 0.1; math.Abs(got-want) > tol {
			t.Errorf("%s: %.0f nanocores, want %.0f (±%.0f for the counters' rounding over a window of at least 100ms)", what, got, want, tol)
		}
	}

	t.Run("the agent", func(t *testing.T) {
		ac := agentClient(t, e)
		u, err := ac.Usage(ctx, &nodev1.UsageRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if w := u.GetWindow().AsDuration(); w < 100*time.Millisecond {
			t.Errorf("window %v, want at least UsageWindow (100ms)", w)
		}
		near("node", float64(u.GetNode().GetNanoCores()), 500_000_000)
		if u.GetNode().GetWorkingSetBytes() != 3<<30 {
			t.Errorf("node working set %d, want the machine's 3 GiB", u.GetNode().GetWorkingSetBytes())
		}
		var got []string
		for _, p := range u.GetPods() {
			for _, c := range p.GetContainers() {
				got = append(got, fmt.Sprintf("%s/%s/%s %d", p.GetNamespace(), p.GetName(), c.GetName(), c.GetUsage().GetWorkingSetBytes()))
				want := 10_000_000.0
				if p.GetName() == "web" {
					want = 250_000_000
				}
				near(p.GetName()+"/"+c.GetName(), float64(c.GetUsage().GetNanoCores()), want)
			}
		}
		if w := []string{"default/db/backup 4194304", "default/db/db 4194304", "default/web/app 67108864"}; !slices.Equal(got, w) {
			t.Errorf("pods' containers %v, want %v", got, w)
		}
		if u, err := ac.Usage(ctx, &nodev1.UsageRequest{Namespace: "default", Name: "web"}); err != nil || len(u.GetPods()) != 1 || u.GetPods()[0].GetName() != "web" {
			t.Errorf("usage of one pod: %v, %v", u, err)
		}
		if _, err := ac.Usage(ctx, &nodev1.UsageRequest{Name: "web"}); err == nil || !strings.Contains(err.Error(), "namespace is required with name") {
			t.Errorf("a name without a namespace: %v, want an error saying so", err)
		}
	})

	t.Run("the apiserver", func(t *testing.T) {
		pods := metricsv1beta1.NewPodsClient(e.api.Conn)
		list, err := pods.List(ctx, &metav1.ListOptions{Namespace: "default"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, pm := range list.GetItems() {
			names = append(names, pm.GetMetadata().GetName())
		}
		if !slices.Equal(names, []string{"db", "web"}) {
			t.Fatalf("PodMetrics %v, want db and web", names)
		}
		web := list.GetItems()[1]
		if web.GetKind() != "PodMetrics" || web.GetApiVersion() != "metrics.k8s.io/v1beta1" || web.GetMetadata().GetLabels()["app"] != "web" ||
			web.GetTimestamp() == nil || web.GetWindow().AsDuration() < 100*time.Millisecond ||
			len(web.GetContainers()) != 1 || web.GetContainers()[0].GetName() != "app" || web.GetContainers()[0].GetUsage()["memory"] != "64Mi" {
			t.Errorf("PodMetrics of web: %v", web)
		}
		near("web/app", nanoCores(t, web.GetContainers()[0].GetUsage()["cpu"]), 250_000_000)

		one, err := pods.Get(ctx, &metav1.GetRequest{Namespace: "default", Name: "db"})
		if err != nil || len(one.GetContainers()) != 2 || one.GetContainers()[0].GetName() != "backup" {
			t.Errorf("Get db: %v, %v", one, err)
		}
		if sel, err := pods.List(ctx, &metav1.ListOptions{LabelSelector: "app=db"}); err != nil || len(sel.GetItems()) != 1 || sel.GetItems()[0].GetMetadata().GetName() != "db" {
			t.Errorf("List app=db in every namespace: %v, %v", sel, err)
		}

		nodes, err := metricsv1beta1.NewNodesClient(e.api.Conn).List(ctx, &metav1.ListOptions{})
		if err != nil || len(nodes.GetItems()) != 1 {
			t.Fatalf("NodeMetrics: %v, %v", nodes, err)
		}
		n := nodes.GetItems()[0]
		if n.GetMetadata().GetName() != nodeName || n.GetUsage()["memory"] != "3Gi" || n.GetKind() != "NodeMetrics" {
			t.Errorf("NodeMetrics: %v", n)
		}
		near("node", nanoCores(t, n.GetUsage()["cpu"]), 500_000_000)
	})

	t.Run("a pod on no node has no metrics", func(t *testing.T) {
		// e.create would bind it to the node.
		if _, err := e.pods.Create(ctx, &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "pending", Namespace: "default"},
			Spec: &corev1.PodSpec{Containers: []*corev1.Container{ctr("app", "demo:v1")}}}); err != nil {
			t.Fatal(err)
		}
		_, err := metricsv1beta1.NewPodsClient(e.api.Conn).Get(ctx, &metav1.GetRequest{Namespace: "default", Name: "pending"})
		if err == nil || !strings.Contains(err.Error(), `pods.metrics.k8s.io "default/pending" not found`) {
			t.Errorf("Get of an unscheduled pod: %v, want NotFound", err)
		}
	})

	t.Run("the runtime fails", func(t *testing.T) {
		e.sim.FailNext("ListContainerStats", 10, nil)
		_, err := metricsv1beta1.NewNodesClient(e.api.Conn).Get(ctx, &metav1.GetRequest{Name: nodeName})
		if err == nil || !strings.Contains(err.Error(), "container runtime stats") {
			t.Errorf("NodeMetrics while the runtime fails: %v, want ServiceUnavailable naming the runtime's stats", err)
		}
		e.sim.FailNext("ListContainerStats", 0, nil)
	})
}
