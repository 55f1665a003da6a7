package apiserver

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// promNames serves the embedded etcd's metrics under names that follow
// Prometheus' conventions (`promtool check metrics` is clean): etcd's own
// registrations break them in a few places, which a scrape would carry
// into every dashboard and rule.
//
//   - gauges named *_total lose the suffix (etcd_server_proposals_committed_total
//     -> etcd_server_proposals_committed);
//   - counters without it gain it (etcd_server_health_failures ->
//     etcd_server_health_failures_total);
//   - etcd_debugging_* (internal, and in milliseconds) are left out.
type promNames struct{ prometheus.Gatherer }

func (g promNames) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := g.Gatherer.Gather()
	out := mfs[:0]
	for _, mf := range mfs {
		name := mf.GetName()
		if strings.HasPrefix(name, "etcd_debugging_") {
			continue
		}
		switch {
		case mf.GetType() != dto.MetricType_COUNTER && strings.HasSuffix(name, "_total"):
			name = strings.TrimSuffix(name, "_total")
			mf.Name = &name
		case mf.GetType() == dto.MetricType_COUNTER && !strings.HasSuffix(name, "_total"):
			name += "_total"
			mf.Name = &name
		}
		out = append(out, mf)
	}
	return out, err
}
