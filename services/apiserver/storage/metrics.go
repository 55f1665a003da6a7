package storage

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics measure the apiserver's requests to etcd.
type Metrics struct {
	requestDuration *prometheus.HistogramVec
	objectCounts    *prometheus.GaugeVec
}

// NewMetrics registers the storage metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "etcd_request_duration_seconds",
			Help:    "Etcd request latency in seconds for each operation and resource type.",
			Buckets: []float64{0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 5},
		}, []string{"operation", "type"}),
		objectCounts: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_storage_objects",
			Help: "Number of stored objects at the time of last check, by resource.",
		}, []string{"resource"}),
	}
	if reg != nil {
		reg.MustRegister(m.requestDuration, m.objectCounts)
	}
	return m
}

func (m *Metrics) observe(op, resource string, start time.Time) {
	if m == nil {
		return
	}
	m.requestDuration.WithLabelValues(op, resource).Observe(time.Since(start).Seconds())
}

// SetObjectCount records how many objects of a resource are stored.
func (m *Metrics) SetObjectCount(resource string, n int) {
	if m == nil {
		return
	}
	m.objectCounts.WithLabelValues(resource).Set(float64(n))
}
