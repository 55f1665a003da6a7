package agent

import (
	"github.com/prometheus/client_golang/prometheus"

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
	}
	m.podStart = promutil.MustRegister(reg, m.podStart)
	m.relistDuration = promutil.MustRegister(reg, m.relistDuration)
	m.relistInterval = promutil.MustRegister(reg, m.relistInterval)
	m.runningPods = promutil.MustRegister(reg, m.runningPods)
	m.runningContainers = promutil.MustRegister(reg, m.runningContainers)
	m.podWorker = promutil.MustRegister(reg, m.podWorker)
	m.started = promutil.MustRegister(reg, m.started)
	m.startErrors = promutil.MustRegister(reg, m.startErrors)
	return m
}
