package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// Values of the result label of controller_reconcile_total.
const (
	resultSuccess  = "success"  // done: the key is forgotten
	resultError    = "error"    // retried with backoff (panics included)
	resultRequeue  = "requeue"  // Result.Requeue or Result.RequeueAfter
	resultTerminal = "terminal" // a Terminal error: not retried
)

// metrics are the controller_* metrics of one registerer, shared by every
// controller registered there and labelled by controller name.
type metrics struct {
	total    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	panics   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	active   *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	controller := []string{"controller"}
	m := &metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "controller_reconcile_total", Help: "Reconciles, by result (success, error, requeue, terminal).",
		}, []string{"controller", "result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "controller_reconcile_errors_total", Help: "Reconciles that returned an error or panicked, terminal errors included.",
		}, controller),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "controller_reconcile_panics_total", Help: "Reconciles that panicked (recovered and retried).",
		}, controller),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "controller_reconcile_duration_seconds", Help: "How long Reconcile took.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16), // 1ms to 33s
		}, controller),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "controller_active_workers", Help: "Workers inside Reconcile now.",
		}, controller),
	}
	if reg != nil {
		m.total = promutil.MustRegister(reg, m.total)
		m.errors = promutil.MustRegister(reg, m.errors)
		m.panics = promutil.MustRegister(reg, m.panics)
		m.duration = promutil.MustRegister(reg, m.duration)
		m.active = promutil.MustRegister(reg, m.active)
	}
	return m
}

// controllerMetrics are one controller's series.
type controllerMetrics struct {
	total    map[string]prometheus.Counter // by result
	errors   prometheus.Counter
	panics   prometheus.Counter
	duration prometheus.Observer
	active   prometheus.Gauge
}

func (m *metrics) forController(name string) controllerMetrics {
	cm := controllerMetrics{
		total:    make(map[string]prometheus.Counter),
		errors:   m.errors.WithLabelValues(name),
		panics:   m.panics.WithLabelValues(name),
		duration: m.duration.WithLabelValues(name),
		active:   m.active.WithLabelValues(name),
	}
	// Created up front, so that every result shows as 0 before it happens.
	for _, r := range []string{resultSuccess, resultError, resultRequeue, resultTerminal} {
		cm.total[r] = m.total.WithLabelValues(name, r)
	}
	return cm
}
