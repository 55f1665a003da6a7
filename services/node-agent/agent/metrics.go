package agent

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"skiff.dev/internal/promutil"
)

// metrics are the agent's, with the kubelet's names. The gauges describe
// one agent: agents sharing a process should not share a registry (the
// counters and histograms would add up; the gauges would not).
type metrics struct {
	podStart          prometheus.Histogram
	relistDuration    prometheus.Histogram
	relistInterval    prometheus.Histogram
	runningPods       prometheus.Gauge
	runningContainers *prometheus.GaugeVec
	podWorker         prometheus.Histogram
	started           *prometheus.CounterVec
	startErrors       *prometheus.CounterVec
	evictions         *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		podStart: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_pod_start_duration_seconds",
			Help:    "Duration in seconds from the agent seeing a pod for the first time to the pod starting to run (Running, every container running).",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 600},
		}),
		relistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubelet_pleg_relist_duration_seconds", Help: "Duration in seconds for relisting pods in PLEG.",
			Buckets: prometheus.ExponentialBuckets(.001, 2, 14),
		}),
		relistInterval: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubelet_pleg_relist_interval_seconds", Help: "Interval in seconds between relisting in PLEG.",
			Buckets: prometheus.ExponentialBuckets(.1, 2, 10),
		}),
		runningPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubelet_running_pods", Help: "Number of pods that have a running pod sandbox.",
		}),
		runningContainers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubelet_running_containers", Help: "Number of containers currently running, by state (created, running, exited, unknown).",
		}, []string{"container_state"}),
		podWorker: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubelet_pod_worker_duration_seconds", Help: "Duration in seconds to sync a single pod.",
			Buckets: prometheus.ExponentialBuckets(.005, 2.5, 12),
		}),
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_started_containers_total", Help: "Cumulative number of containers started, by type (container, init_container).",
		}, []string{"container_type"}),
		startErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_started_containers_errors_total", Help: "Cumulative number of errors when starting containers, by waiting reason and type.",
		}, []string{"code", "container_type"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_evictions", Help: "Cumulative number of pod evictions by eviction signal.",
		}, []string{"eviction_signal"}),
	}
	m.podStart = promutil.MustRegister(reg, m.podStart)
	m.relistDuration = promutil.MustRegister(reg, m.relistDuration)
	m.relistInterval = promutil.MustRegister(reg, m.relistInterval)
	m.runningPods = promutil.MustRegister(reg, m.runningPods)
	m.runningContainers = promutil.MustRegister(reg, m.runningContainers)
	m.podWorker = promutil.MustRegister(reg, m.podWorker)
	m.started = promutil.MustRegister(reg, m.started)
	m.startErrors = promutil.MustRegister(reg, m.startErrors)
	m.evictions = promutil.MustRegister(reg, m.evictions)
	return m
}

// statsCollector serves the usage of the node and its pods with the
// kubelet's names (its /metrics/resource and, for the pod cgroups with
// container="", cAdvisor's /metrics/cadvisor), read from the runtime and
// the machine at each scrape (bounded by Config.StatsTimeout), each
// sample stamped with the time it was taken.
type statsCollector struct {
	a                             *Agent
	containerCPU, containerMem    *prometheus.Desc
	nodeCPU, nodeMem, scrapeError *prometheus.Desc
}

func newStatsCollector(a *Agent) *statsCollector {
	labels := []string{"container", "pod", "namespace"}
	return &statsCollector{
		a: a,
		containerCPU: prometheus.NewDesc("container_cpu_usage_seconds_total",
			`Cumulative cpu time consumed by the container in core-seconds (container="": the pod's cgroup).`, labels, nil),
		containerMem: prometheus.NewDesc("container_memory_working_set_bytes",
			`Current working set of the container in bytes (container="": the pod's cgroup).`, labels, nil),
		nodeCPU:     prometheus.NewDesc("node_cpu_usage_seconds_total", "Cumulative cpu time consumed by the node in core-seconds.", nil, nil),
		nodeMem:     prometheus.NewDesc("node_memory_working_set_bytes", "Current working set of the node in bytes.", nil, nil),
		scrapeError: prometheus.NewDesc("resource_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.containerCPU, c.containerMem, c.nodeCPU, c.nodeMem, c.scrapeError} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.a.cfg.StatsTimeout)
	defer cancel()
	scrapeError := func(failed bool) {
		v := 0.0
		if failed {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.scrapeError, prometheus.GaugeValue, v)
	}
	snap, err := c.a.readStats(ctx)
	if err != nil {
		c.a.log.Warn("reading the container runtime's stats for /metrics", zap.Error(err))
		scrapeError(true)
		return
	}
	failed := snap.nodeErr != nil
	if failed {
		c.a.log.Warn("reading the machine's usage for /metrics", zap.Error(snap.nodeErr))
	} else {
		ch <- prometheus.NewMetricWithTimestamp(snap.node.at, prometheus.MustNewConstMetric(c.nodeCPU, prometheus.CounterValue, float64(snap.node.coreNanos)/1e9))
		ch <- prometheus.NewMetricWithTimestamp(snap.node.at, prometheus.MustNewConstMetric(c.nodeMem, prometheus.GaugeValue, float64(snap.node.workingSet)))
	}
	if snap.podsErr != nil {
		// Not a scrape error: the containers' series are there.
		c.a.log.Debug("no pod-level usage from the container runtime", zap.Error(snap.podsErr))
	}
	// One series per pod name: of two pods of one name (a pod replaced
	// while the old one stops) the one sampled last.
	byName := map[string]*podStats{}
	for _, p := range snap.pods {
		key := p.namespace + "/" + p.name
		if old, ok := byName[key]; !ok || p.cpu.at.After(old.cpu.at) {
			byName[key] = p
		}
	}
	emit := func(cpu cpuSample, mem memSample, labels ...string) {
		if cpu.hasTotal {
			ch <- prometheus.NewMetricWithTimestamp(cpu.at, prometheus.MustNewConstMetric(c.containerCPU, prometheus.CounterValue, float64(cpu.coreNanos)/1e9, labels...))
		}
		if mem.ok {
			ch <- prometheus.NewMetricWithTimestamp(mem.at, prometheus.MustNewConstMetric(c.containerMem, prometheus.GaugeValue, float64(mem.workingSet), labels...))
		}
	}
	for _, p := range byName {
		emit(p.cpu, p.memory, "", p.name, p.namespace)
		for name, cs := range p.containers {
			emit(cs.cpu, cs.memory, name, p.name, p.namespace)
		}
	}
	scrapeError(failed)
}
