package leaderelection

import (
	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// metrics is the leader gauge of one lock. Several electors may share a
// registry: the collector registered first is reused.
type metrics struct {
	status prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, name string) (*metrics, error) {
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "leader_election_master_status",
		Help: "1 while this process holds the lease named by the label, 0 otherwise.",
	}, []string{"name"})
	vec, err := promutil.Register(reg, vec)
	if err != nil {
		return nil, err
	}
	m := &metrics{status: vec.WithLabelValues(name)}
	m.status.Set(0)
	return m, nil
}

func (m *metrics) leading(on bool) {
	if on {
		m.status.Set(1)
	} else {
		m.status.Set(0)
	}
}
