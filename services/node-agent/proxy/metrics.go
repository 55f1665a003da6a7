package proxy

import (
	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// metrics of the service proxy: kube-proxy's names where it has one.
type metrics struct {
	duration     prometheus.Histogram
	lastSync     prometheus.Gauge
	failures     prometheus.Counter
	rules        prometheus.Gauge
	servicePorts prometheus.Gauge
	endpoints    prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubeproxy_sync_proxy_rules_duration_seconds",
			Help:    "How long one sync of the service proxy's nftables table took (building the rules and running the transaction).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
			Help: "When the service proxy's table was last synced successfully (Unix seconds).",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubeproxy_sync_proxy_rules_nftables_sync_failures_total",
			Help: "Syncs of the service proxy's nftables table that failed.",
		}),
		rules: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skiff_node_proxy_rules",
			Help: "Rules the last successful sync wrote in the service proxy's nftables table.",
		}),
		servicePorts: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skiff_node_proxy_service_ports",
			Help: "Service ports the service proxy's table holds.",
		}),
		endpoints: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skiff_node_proxy_endpoints",
			Help: "Endpoints the service proxy's table sends traffic to (summed over service ports).",
		}),
	}
	m.duration = promutil.MustRegister(reg, m.duration)
	m.lastSync = promutil.MustRegister(reg, m.lastSync)
	m.failures = promutil.MustRegister(reg, m.failures)
	m.rules = promutil.MustRegister(reg, m.rules)
	m.servicePorts = promutil.MustRegister(reg, m.servicePorts)
	m.endpoints = promutil.MustRegister(reg, m.endpoints)
	return m
}
