package admission

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the admission chain, named as Kubernetes' (counters with the
// _total suffix Prometheus asks for).
type Metrics struct {
	step       *prometheus.HistogramVec
	plugin     *prometheus.HistogramVec
	webhook    *prometheus.HistogramVec
	rejections *prometheus.CounterVec
	failOpen   *prometheus.CounterVec
	// stepSeries is resolved once: [type][operation][rejected].
	stepSeries [2][len(operations)][2]prometheus.Observer
}

var admissionBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 1, 2.5, 10, 30}

const (
	stepAdmit    = 0
	stepValidate = 1
)

var stepTypes = [2]string{"admit", "validate"}

// NewMetrics registers the admission metrics on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		step: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_admission_step_admission_duration_seconds",
			Help:    "Time of each admission step (type admit: the mutating plugins; validate: the validating ones) by operation and whether it refused the request.",
			Buckets: admissionBuckets,
		}, []string{"type", "operation", "rejected"}),
		plugin: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_admission_controller_admission_duration_seconds",
			Help:    "Time of each admission plugin by name, type (admit, validate), operation and whether it refused the request.",
			Buckets: admissionBuckets,
		}, []string{"name", "type", "operation", "rejected"}),
		webhook: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_admission_webhook_admission_duration_seconds",
			Help:    "Time of each admission webhook call by webhook name, type (admit, validate), operation and whether it refused the request.",
			Buckets: admissionBuckets,
		}, []string{"name", "type", "operation", "rejected"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_admission_webhook_rejection_total",
			Help: "Requests refused by an admission webhook (Kubernetes' apiserver_admission_webhook_rejection_count), by webhook name, type, operation and error_type: no_error (the webhook denied), calling_webhook_error (failurePolicy Fail and the call failed), apiserver_internal_error.",
		}, []string{"name", "type", "operation", "error_type"}),
		failOpen: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_admission_webhook_fail_open_total",
			Help: "Webhook calls that failed and were ignored (failurePolicy Ignore), by webhook name and type.",
		}, []string{"name", "type"}),
	}
	if reg != nil {
		reg.MustRegister(m.step, m.plugin, m.webhook, m.rejections, m.failOpen)
	}
	for t := range stepTypes {
		for o, op := range operations {
			for r := range 2 {
				m.stepSeries[t][o][r] = m.step.WithLabelValues(stepTypes[t], string(op), strconv.FormatBool(r == 1))
			}
		}
	}
	return m
}

// pluginSeries are one plugin's resolved series: [operation][rejected].
type pluginSeries [len(operations)][2]prometheus.Observer

func (m *Metrics) pluginSeries(name string, step int) *pluginSeries {
	var s pluginSeries
	for o, op := range operations {
		for r := range 2 {
			s[o][r] = m.plugin.WithLabelValues(name, stepTypes[step], string(op), strconv.FormatBool(r == 1))
		}
	}
	return &s
}

// ObserveWebhook records one webhook call.
func (m *Metrics) ObserveWebhook(name string, mutating bool, op Operation, rejected bool, seconds float64) {
	m.webhook.WithLabelValues(name, webhookType(mutating), string(op), strconv.FormatBool(rejected)).Observe(seconds)
}

// WebhookRejected counts a refusal by a webhook.
func (m *Metrics) WebhookRejected(name string, mutating bool, op Operation, errorType string) {
	m.rejections.WithLabelValues(name, webhookType(mutating), string(op), errorType).Inc()
}

// WebhookFailedOpen counts a failed call that failurePolicy Ignore let pass.
func (m *Metrics) WebhookFailedOpen(name string, mutating bool) {
	m.failOpen.WithLabelValues(name, webhookType(mutating)).Inc()
}

func webhookType(mutating bool) string {
	if mutating {
		return stepTypes[stepAdmit]
	}
	return stepTypes[stepValidate]
}
