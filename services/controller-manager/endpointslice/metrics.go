package endpointslice

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// Results of a sync, the values of endpoint_slice_controller_syncs_total's
// result label.
const (
	syncSuccess = "success"
	syncStale   = "stale" // the slices cache lags behind the controller's writes
	syncError   = "error"
)

// metrics of the controller, named as Kubernetes' (subsystem
// endpoint_slice_controller; counters end in _total here).
type metrics struct {
	endpointsDesired prometheus.Gauge
	slices           prometheus.Gauge
	syncs            *prometheus.CounterVec
	changes          *prometheus.CounterVec

	mu        sync.Mutex
	byService map[string]serviceCounts // service key -> its last sync's counts
	sums      serviceCounts
}

type serviceCounts struct{ endpoints, slices int }

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		endpointsDesired: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: "endpoint_slice_controller",
			Name:      "endpoints_desired",
			Help:      "Number of endpoints desired over all Services, as of each Service's last sync.",
		}),
		slices: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: "endpoint_slice_controller",
			Name:      "num_endpoint_slices",
			Help:      "Number of EndpointSlices the controller manages, as of each Service's last sync.",
		}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "endpoint_slice_controller",
			Name:      "syncs_total",
			Help:      "Number of Service syncs, by result (success, stale: the slices cache did not show the controller's last writes yet, error).",
		}, []string{"result"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "endpoint_slice_controller",
			Name:      "changes_total",
			Help:      "Number of EndpointSlice writes, by operation (create, update, delete).",
		}, []string{"operation"}),
		byService: map[string]serviceCounts{},
	}
	if reg != nil {
		m.endpointsDesired = promutil.MustRegister(reg, m.endpointsDesired)
		m.slices = promutil.MustRegister(reg, m.slices)
		m.syncs = promutil.MustRegister(reg, m.syncs)
		m.changes = promutil.MustRegister(reg, m.changes)
	}
	return m
}

// setService records a Service's desired endpoints and slices after a sync.
func (m *metrics) setService(key string, c serviceCounts) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.byService[key]
	m.byService[key] = c
	m.sums.endpoints += c.endpoints - old.endpoints
	m.sums.slices += c.slices - old.slices
	m.endpointsDesired.Set(float64(m.sums.endpoints))
	m.slices.Set(float64(m.sums.slices))
}

// forgetService drops a Service that is gone (or has no selector).
func (m *metrics) forgetService(key string) {
	m.setService(key, serviceCounts{})
	m.mu.Lock()
	delete(m.byService, key)
	m.mu.Unlock()
}
