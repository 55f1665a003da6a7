package nodelifecycle

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
	corev1 "skiff.dev/proto/core/v1"
)

// metrics of the node lifecycle controller.
type metrics struct {
	// evictions counts pod deletions, by kind: "taint" (a NoExecute taint
	// no longer tolerated) or "force" (a terminating pod on a node whose
	// agent is gone).
	evictions *prometheus.CounterVec
	// transitions counts node state changes the controller acted on, by
	// the state entered (Ready, NotReady, Unreachable).
	transitions *prometheus.CounterVec
	// zones feeds node_collector_unhealthy_nodes_in_zone.
	zones *zoneHealth
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodelifecycle_evictions_total",
			Help: "Pods deleted by the node lifecycle controller, by kind (taint: a NoExecute taint no longer tolerated; force: terminating on a node whose agent is gone).",
		}, []string{"kind"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodelifecycle_node_transitions_total",
			Help: "Node state changes the node lifecycle controller acted on, by the state entered.",
		}, []string{"state"}),
	}
	unhealthy := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "node_collector_unhealthy_nodes_in_zone",
		Help: "Gauge measuring number of not Ready Nodes per zones.",
	}, []string{"zone"})
	if reg != nil {
		m.evictions = promutil.MustRegister(reg, m.evictions)
		m.transitions = promutil.MustRegister(reg, m.transitions)
		unhealthy = promutil.MustRegister(reg, unhealthy)
	}
	m.zones = newZoneHealth(unhealthy)
	return m
}

// Zone labels of a node (Kubernetes' well-known labels, and the beta ones
// they replaced).
const (
	labelTopologyRegion          = "topology.kubernetes.io/region"
	labelTopologyZone            = "topology.kubernetes.io/zone"
	labelFailureDomainBetaRegion = "failure-domain.beta.kubernetes.io/region"
	labelFailureDomainBetaZone   = "failure-domain.beta.kubernetes.io/zone"
)

// zoneKey is the node's zone as node_collector_unhealthy_nodes_in_zone
// labels it: "region:zone" from the topology labels (the beta labels when
// those are missing), "" for a node with neither. Kubernetes' key puts a
// NUL between two colons, which a label value would carry unseen.
func zoneKey(node *corev1.Node) string {
	l := node.GetMetadata().GetLabels()
	zone, ok := l[labelTopologyZone]
	if !ok {
		zone = l[labelFailureDomainBetaZone]
	}
	region, ok := l[labelTopologyRegion]
	if !ok {
		region = l[labelFailureDomainBetaRegion]
	}
	if region == "" && zone == "" {
		return ""
	}
	return region + ":" + zone
}

// zoneHealth keeps, from the controller's latest judgement of each node,
// how many nodes each zone has and how many of them are not Ready, and
// sets the gauge of every zone that has nodes (0 when all are healthy);
// a zone whose last node is forgotten loses its series.
type zoneHealth struct {
	gauge *prometheus.GaugeVec

	mu    sync.Mutex
	nodes map[string]nodeHealth  // by node name
	zones map[string]*zoneCounts // by zone key
}

type nodeHealth struct {
	zone      string
	unhealthy bool
}

type zoneCounts struct{ nodes, unhealthy int }

func newZoneHealth(g *prometheus.GaugeVec) *zoneHealth {
	return &zoneHealth{gauge: g, nodes: map[string]nodeHealth{}, zones: map[string]*zoneCounts{}}
}

// observe records the node's zone and whether it is unhealthy (not Ready).
func (z *zoneHealth) observe(node, zone string, unhealthy bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	now := nodeHealth{zone: zone, unhealthy: unhealthy}
	if prev, ok := z.nodes[node]; ok {
		if prev == now {
			return
		}
		z.count(prev, -1)
	}
	z.nodes[node] = now
	z.count(now, +1)
}

// forget drops a node that is gone.
func (z *zoneHealth) forget(node string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if prev, ok := z.nodes[node]; ok {
		delete(z.nodes, node)
		z.count(prev, -1)
	}
}

// count adds d to the counts of n's zone and publishes them. Called with
// mu held.
func (z *zoneHealth) count(n nodeHealth, d int) {
	c := z.zones[n.zone]
	if c == nil {
		c = &zoneCounts{}
		z.zones[n.zone] = c
	}
	c.nodes += d
	if n.unhealthy {
		c.unhealthy += d
	}
	if c.nodes == 0 {
		delete(z.zones, n.zone)
		z.gauge.DeleteLabelValues(n.zone)
		return
	}
	z.gauge.WithLabelValues(n.zone).Set(float64(c.unhealthy))
}
