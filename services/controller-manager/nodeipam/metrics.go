package nodeipam

import (
	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// Reasons of nodeipam_errors_total, and of the Warning events.
const (
	ReasonCIDRNotAvailable = "CIDRNotAvailable"
	ReasonInvalidPodCIDR   = "InvalidPodCIDR"
	ReasonPodCIDRConflict  = "PodCIDRConflict"
	ReasonCIDRAssigned     = "CIDRAssigned" // Normal
)

// metrics of the node IPAM controller, after Kubernetes' cidrset_* ones.
type metrics struct {
	total       prometheus.Gauge
	allocated   prometheus.Gauge
	allocations prometheus.Counter
	releases    prometheus.Counter
	errors      *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		total: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nodeipam_cidrs_capacity",
			Help: "Node pod subnets the cluster CIDR holds (--cluster-cidr cut in --node-cidr-mask-size subnets).",
		}),
		allocated: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nodeipam_cidrs_allocated",
			Help: "Node pod subnets in use: allocated by the controller or found on Nodes.",
		}),
		allocations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nodeipam_cidr_allocations_total",
			Help: "Pod subnets the controller wrote into a Node's spec.podCIDR.",
		}),
		releases: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nodeipam_cidr_releases_total",
			Help: "Pod subnets freed because their Node was deleted.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodeipam_errors_total",
			Help: "Nodes the controller could not give a pod subnet or account for, by reason (CIDRNotAvailable: none left; InvalidPodCIDR: a podCIDR outside the cluster CIDR; PodCIDRConflict: a podCIDR overlapping another node's).",
		}, []string{"reason"}),
	}
	m.total = promutil.MustRegister(reg, m.total)
	m.allocated = promutil.MustRegister(reg, m.allocated)
	m.allocations = promutil.MustRegister(reg, m.allocations)
	m.releases = promutil.MustRegister(reg, m.releases)
	m.errors = promutil.MustRegister(reg, m.errors)
	return m
}
