package watchcache

import "github.com/prometheus/client_golang/prometheus"

// Metrics of every watch cache (labelled by resource).
type Metrics struct {
	eventsReceived     *prometheus.CounterVec
	eventsDispatched   *prometheus.CounterVec
	registeredWatchers *prometheus.GaugeVec
	terminatedWatchers *prometheus.CounterVec
	resourceVersion    *prometheus.GaugeVec
	relists            *prometheus.CounterVec
	batches            *prometheus.CounterVec
	sharedEncodings    *prometheus.CounterVec
}

// NewMetrics registers the watch cache metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		eventsReceived: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_events_received_total",
			Help: "Events the watch cache received from etcd, by resource.",
		}, []string{"resource"}),
		eventsDispatched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_events_dispatched_total",
			Help: "Events handed to watchers (one per watcher per event), by resource.",
		}, []string{"resource"}),
		registeredWatchers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_registered_watchers",
			Help: "Watchers currently registered, by resource.",
		}, []string{"resource"}),
		terminatedWatchers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_terminated_watchers_total",
			Help: "Watchers cut off because they did not keep up, by resource.",
		}, []string{"resource"}),
		resourceVersion: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_watch_cache_resource_version",
			Help: "The etcd revision the watch cache has caught up to, by resource.",
		}, []string{"resource"}),
		relists: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_initializations_total",
			Help: "Times the watch cache (re)listed from etcd, by resource.",
		}, []string{"resource"}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_batches_total",
			Help: "Batches of events the watch cache published to its watchers (at most one per --watch-batch-interval), by resource.",
		}, []string{"resource"}),
		sharedEncodings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_cache_shared_encodings_total",
			Help: "Batches encoded once for every watcher of one namespace (or all) and version without a selector, by resource; compare with apiserver_watch_cache_batches_total.",
		}, []string{"resource"}),
	}
	if reg != nil {
		reg.MustRegister(m.eventsReceived, m.eventsDispatched, m.registeredWatchers, m.terminatedWatchers, m.resourceVersion, m.relists, m.batches, m.sharedEncodings)
	}
	return m
}
