package cri

import (
	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// Metrics time and count runtime operations, labelled by operation_type
// ("run_podsandbox", "create_container", "pull_image"...), with Kubernetes'
// names. A nil *Metrics records nothing.
type Metrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
}

// NewMetrics registers the metrics on reg (nil: not registered). Clients
// of several agents in one process may share them.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_runtime_operations_total", Help: "Cumulative number of runtime operations by operation type.",
		}, []string{"operation_type"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kubelet_runtime_operations_duration_seconds",
			Help:    "Duration in seconds of runtime operations. Broken down by operation type.",
			Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14),
		}, []string{"operation_type"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_runtime_operations_errors_total", Help: "Cumulative number of runtime operation errors by operation type.",
		}, []string{"operation_type"}),
	}
	m.total = promutil.MustRegister(reg, m.total)
	m.duration = promutil.MustRegister(reg, m.duration)
	m.errors = promutil.MustRegister(reg, m.errors)
	return m
}

func (m *Metrics) observe(op string, seconds float64, err error) {
	if m == nil {
		return
	}
	m.total.WithLabelValues(op).Inc()
	m.duration.WithLabelValues(op).Observe(seconds)
	if err != nil {
		m.errors.WithLabelValues(op).Inc()
	}
}
