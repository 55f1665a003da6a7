package scheduler

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/services/scheduler/cache"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
	"skiff.dev/services/scheduler/queue"
)

// Results of a scheduling attempt (the result label).
const (
	resultScheduled     = "scheduled"
	resultUnschedulable = "unschedulable"
	resultError         = "error"
)

// metrics are the scheduler_* metrics, named as Kubernetes names them.
type metrics struct {
	attempts        *prometheus.CounterVec   // result, profile
	attemptDuration *prometheus.HistogramVec // result, profile
	sli             *prometheus.HistogramVec // attempts
	pointDuration   *prometheus.HistogramVec // extension_point, status, profile
	pluginDuration  *prometheus.HistogramVec // plugin, extension_point, status
	binding         prometheus.Gauge
	expired         prometheus.Counter
	// Preemption (preemption.go).
	preemptionAttempts prometheus.Counter
	preemptionVictims  prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, q *queue.Queue, c *cache.Cache) (*metrics, error) {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_schedule_attempts_total",
			Help: "Number of attempts to schedule pods, by the result (scheduled, unschedulable, error) and profile.",
		}, []string{"result", "profile"}),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "scheduler_scheduling_attempt_duration_seconds",
			Help:    "Scheduling attempt latency in seconds (scheduling algorithm + assume, not binding), by result and profile.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"result", "profile"}),
		sli: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "scheduler_pod_scheduling_sli_duration_seconds",
			Help:    "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue until it is bound, by the number of attempts.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}, []string{"attempts"}),
		pointDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "scheduler_framework_extension_point_duration_seconds",
			Help:    "Latency for running all plugins of a specific extension point.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 2, 18),
		}, []string{"extension_point", "status", "profile"}),
		pluginDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "scheduler_plugin_execution_duration_seconds",
			Help:    "Duration for running a plugin at a specific extension point, in a sample of scheduling cycles; for Filter and Score, the mean of its calls on a sample of the nodes of the cycle.",
			Buckets: prometheus.ExponentialBuckets(0.000001, 2, 20),
		}, []string{"plugin", "extension_point", "status"}),
		binding: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "scheduler_goroutines", Help: "Number of running goroutines split by the work they do such as binding.",
			ConstLabels: prometheus.Labels{"operation": "binding"},
		}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scheduler_cache_assumed_pods_expired_total",
			Help: "Assumed pods whose bind was never confirmed by the watch within the TTL.",
		}),
		preemptionAttempts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scheduler_preemption_attempts_total",
			Help: "Total preemption attempts in the cluster till now",
		}),
		preemptionVictims: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "scheduler_preemption_victims",
			Help:    "Number of selected preemption victims",
			Buckets: prometheus.ExponentialBuckets(1, 2, 7),
		}),
	}
	cs := []prometheus.Collector{m.attempts, m.attemptDuration, m.sli, m.pointDuration, m.pluginDuration, m.binding, m.expired,
		m.preemptionAttempts, m.preemptionVictims}
	for _, qn := range []string{"active", "backoff", "unschedulable"} {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "scheduler_pending_pods",
			Help:        "Number of pending pods, by the queue type: 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in the unschedulable set.",
			ConstLabels: prometheus.Labels{"queue": qn},
		}, func() float64 {
			l := q.Lengths()
			switch qn {
			case "active":
				return float64(l.Active)
			case "backoff":
				return float64(l.Backoff)
			default:
				return float64(l.Unschedulable)
			}
		}))
	}
	for _, typ := range []string{"nodes", "pods", "assumed_pods"} {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "scheduler_cache_size",
			Help:        "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
			ConstLabels: prometheus.Labels{"type": typ},
		}, func() float64 {
			n := c.Counts()
			switch typ {
			case "nodes":
				return float64(n.Nodes)
			case "pods":
				return float64(n.Pods)
			default:
				return float64(n.AssumedPods)
			}
		}))
	}
	if reg != nil {
		for _, c := range cs {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) attempt(result, profile string, d time.Duration) {
	m.attempts.WithLabelValues(result, profile).Inc()
	m.attemptDuration.WithLabelValues(result, profile).Observe(d.Seconds())
}

// maxAttemptsLabel bounds the attempts label of the SLI histogram.
const maxAttemptsLabel = 15

func (m *metrics) scheduled(attempts int, sinceQueued time.Duration) {
	label := strconv.Itoa(min(attempts, maxAttemptsLabel))
	if attempts >= maxAttemptsLabel {
		label += "+"
	}
	m.sli.WithLabelValues(label).Observe(sinceQueued.Seconds())
}

// frameworkMetrics adapts metrics to framework.Metrics.
type frameworkMetrics struct{ m *metrics }

func (f frameworkMetrics) ObserveExtensionPoint(point config.ExtensionPoint, profile string, code framework.Code, d time.Duration) {
	f.m.pointDuration.WithLabelValues(string(point), code.String(), profile).Observe(d.Seconds())
}

func (f frameworkMetrics) ObservePlugin(point config.ExtensionPoint, plugin string, code framework.Code, d time.Duration) {
	f.m.pluginDuration.WithLabelValues(plugin, string(point), code.String()).Observe(d.Seconds())
}
