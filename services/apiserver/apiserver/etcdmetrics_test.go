package apiserver

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestEtcdMetricsKeepEtcdNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "etcd_server_proposals_committed_total", Help: "h"}),
		prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_server_health_failures", Help: "h"}),
		prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_network_peer_sent_bytes_total", Help: "h"}),
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "etcd_debugging_mvcc_keys_total", Help: "h"}),
		prometheus.NewCounter(prometheus.CounterOpts{Name: "grpc_server_started_total", Help: "etcd's gRPC server"}),
	)
	mfs, err := etcdMetrics{reg}.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		got = append(got, mf.GetName())
	}
	slices.Sort(got)
	want := []string{"etcd_debugging_mvcc_keys_total", "etcd_network_peer_sent_bytes_total", "etcd_server_health_failures", "etcd_server_proposals_committed_total"}
	if !slices.Equal(got, want) {
		t.Errorf("names = %v, want %v (etcd's own, without its gRPC server's)", got, want)
	}
}
