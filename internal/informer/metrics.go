package informer

import (
	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// Metrics count what informers do. One Metrics serves every informer of a
// process, labelled by resource. A nil *Metrics records nothing.
type Metrics struct {
	lists       *prometheus.CounterVec
	listFails   *prometheus.CounterVec
	listedItems *prometheus.CounterVec
	watchEnds   *prometheus.CounterVec
	events      *prometheus.CounterVec
}

// NewMetrics registers informer metrics on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		lists: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "informer_lists_total", Help: "Full lists an informer made (the first, and each relist after an expired revision).",
		}, []string{"resource"}),
		listFails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "informer_list_failures_total", Help: "Lists that failed and were retried.",
		}, []string{"resource"}),
		listedItems: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "informer_listed_items_total", Help: "Objects received through lists.",
		}, []string{"resource"}),
		watchEnds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "informer_watch_ends_total", Help: "Watches that ended, by reason (timeout, expired, error).",
		}, []string{"resource", "reason"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "informer_watch_events_total", Help: "Watch events applied to the cache, by type.",
		}, []string{"resource", "type"}),
	}
	m.lists = promutil.MustRegister(reg, m.lists)
	m.listFails = promutil.MustRegister(reg, m.listFails)
	m.listedItems = promutil.MustRegister(reg, m.listedItems)
	m.watchEnds = promutil.MustRegister(reg, m.watchEnds)
	m.events = promutil.MustRegister(reg, m.events)
	return m
}

func (m *Metrics) listed(res string, n int) {
	if m != nil {
		m.lists.WithLabelValues(res).Inc()
		m.listedItems.WithLabelValues(res).Add(float64(n))
	}
}

func (m *Metrics) listFailed(res string) {
	if m != nil {
		m.listFails.WithLabelValues(res).Inc()
	}
}

func (m *Metrics) watchEnded(res, reason string) {
	if m != nil {
		m.watchEnds.WithLabelValues(res, reason).Inc()
	}
}

func (m *Metrics) event(res, typ string) {
	if m != nil {
		m.events.WithLabelValues(res, typ).Inc()
	}
}

// Lists returns the counter of full lists for resource (for tests).
func (m *Metrics) Lists(resource string) prometheus.Counter {
	return m.lists.WithLabelValues(resource)
}
