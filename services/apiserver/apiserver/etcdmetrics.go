package apiserver

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// etcdMetrics serves the process-wide registry: the Go runtime and process
// metrics and the embedded etcd's own, under the names etcd gives them, so
// that etcd's dashboards and alerts (etcd-mixin: etcd_server_has_leader,
// etcd_mvcc_db_total_size_in_bytes, etcd_server_proposals_committed_total,
// etcd_disk_wal_fsync_duration_seconds...) work on the apiserver's
// /metrics unchanged. A few of those names break Prometheus' conventions
// (gauges named *_total, counters without it); they stay as etcd has them.
//
// The one family left out is grpc_server_*: there it is etcd's gRPC
// server's, which the apiserver reaches only for maintenance (status,
// defragmentation): its reads and writes call etcd in-process. The
// apiserver's /metrics has grpc_server_* of its own API instead
// (grpcServerMetrics), which the two would clash with.
type etcdMetrics struct{ prometheus.Gatherer }

func (g etcdMetrics) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := g.Gatherer.Gather()
	out := mfs[:0]
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "grpc_server_") {
			out = append(out, mf)
		}
	}
	return out, err
}
