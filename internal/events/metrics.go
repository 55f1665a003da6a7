package events

import (
	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// Reasons an event is not written (the label of events_dropped_total).
const (
	dropQueueFull   = "queue_full"   // the queue was full when recorded
	dropRateLimited = "rate_limited" // the spam filter had no token for its object
	dropShutdown    = "shutdown"     // recorded after Shutdown
	dropInvalid     = "invalid"      // no object name, or a type other than Normal and Warning
	dropWriteFailed = "write_failed" // the apiserver refused it or could not be reached
)

type metrics struct {
	recorded      *prometheus.CounterVec
	dropped       *prometheus.CounterVec
	writeDuration prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		recorded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "events_recorded_total", Help: "Events accepted by recorders, by type (Normal, Warning).",
		}, []string{"type"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "events_dropped_total", Help: "Events not written, by reason (queue_full, rate_limited, shutdown, invalid, write_failed).",
		}, []string{"reason"}),
		writeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "events_write_duration_seconds",
			Help:    "Time to write one event to the apiserver (create, or update of its count), with its retries, whether it succeeded or not.",
			Buckets: prometheus.DefBuckets,
		}),
	}
	var err error
	if m.recorded, err = promutil.Register(reg, m.recorded); err != nil {
		return nil, err
	}
	if m.dropped, err = promutil.Register(reg, m.dropped); err != nil {
		return nil, err
	}
	if m.writeDuration, err = promutil.Register(reg, m.writeDuration); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) drop(reason string) { m.dropped.WithLabelValues(reason).Inc() }
