package network

import (
	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// Operations of skiff_node_pod_network_errors_total.
const (
	opWriteCNIConfig = "write_cni_config"
	opListRoutes     = "list_routes"
	opReplaceRoute   = "replace_route"
	opDeleteRoute    = "delete_route"

	// With BackendVXLAN; and list_, replace_ and delete_ of the tables
	// (fdb, neighbor).
	opEnsureVXLANDevice = "ensure_vxlan_device"
	opPublishVTEPMAC    = "publish_vtep_mac"
)

// metrics of the pod network. Not kubelet metrics (the kubelet leaves
// this to a CNI daemon), hence their own prefix.
type metrics struct {
	routes prometheus.Gauge
	ready  prometheus.Gauge
	errors *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		routes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skiff_node_pod_network_routes",
			Help: "Routes to other nodes' pod subnets this node agent has in place (protocol 83 in the main table; with the vxlan backend, through its device).",
		}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skiff_node_pod_network_ready",
			Help: "1 once the CNI configuration for the Node's spec.podCIDR is written, else 0.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_node_pod_network_errors_total",
			Help: "Failed pod network operations, by operation (write_cni_config, list_routes, replace_route, delete_route; with the vxlan backend also ensure_vxlan_device, publish_vtep_mac, list_, replace_ and delete_ of fdb and neighbor).",
		}, []string{"operation"}),
	}
	m.routes = promutil.MustRegister(reg, m.routes)
	m.ready = promutil.MustRegister(reg, m.ready)
	m.errors = promutil.MustRegister(reg, m.errors)
	ops := []string{opWriteCNIConfig, opListRoutes, opReplaceRoute, opDeleteRoute, opEnsureVXLANDevice, opPublishVTEPMAC}
	for _, t := range []Table{FDB, Neighbors} {
		ops = append(ops, "list_"+string(t), "replace_"+string(t), "delete_"+string(t))
	}
	for _, op := range ops {
		m.errors.WithLabelValues(op) // every series from the start, at 0
	}
	return m
}
