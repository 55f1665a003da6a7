package dns

import (
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// Who answered a query: the label source of the duration histogram.
const (
	sourceCluster = "cluster" // from the index
	sourceForward = "forward" // from an upstream resolver
	sourceServer  = "server"  // refused or malformed before either
)

// Reasons of skiff_node_dns_forward_failures_total.
const (
	failTimeout    = "timeout"     // Config.Timeout ended
	failError      = "error"       // every upstream failed (refused, unreachable, bad answer)
	failNone       = "no_upstream" // none configured (or all of them were the server itself)
	failOverloaded = "overloaded"  // MaxConcurrentForwards in flight: REFUSED
)

// metrics of the cluster DNS server; the label values are bounded (query
// types outside queryTypes count as "other").
type metrics struct {
	requests  *prometheus.CounterVec   // type, rcode
	duration  *prometheus.HistogramVec // source
	forwarded prometheus.Counter
	failures  *prometheus.CounterVec // reason
	upstream  *prometheus.CounterVec // upstream, for each failed attempt
	services  prometheus.GaugeFunc
}

var queryTypes = map[uint16]string{
	dns.TypeA: "A", dns.TypeAAAA: "AAAA", dns.TypeSRV: "SRV", dns.TypePTR: "PTR",
	dns.TypeCNAME: "CNAME", dns.TypeTXT: "TXT", dns.TypeSOA: "SOA", dns.TypeNS: "NS",
	dns.TypeMX: "MX", dns.TypeHTTPS: "HTTPS", dns.TypeSVCB: "SVCB", dns.TypeANY: "ANY",
}

var rcodes = map[int]string{
	dns.RcodeSuccess: "NOERROR", dns.RcodeNameError: "NXDOMAIN", dns.RcodeServerFailure: "SERVFAIL",
	dns.RcodeRefused: "REFUSED", dns.RcodeFormatError: "FORMERR", dns.RcodeNotImplemented: "NOTIMP",
}

func typeLabel(t uint16) string {
	if s, ok := queryTypes[t]; ok {
		return s
	}
	return "other"
}

func rcodeLabel(rc int) string {
	if s, ok := rcodes[rc]; ok {
		return s
	}
	return "other"
}

func newMetrics(reg prometheus.Registerer, idx *Index) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_node_dns_requests_total",
			Help: "DNS queries answered by the node agent's cluster DNS server, by query type and response code.",
		}, []string{"type", "rcode"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "skiff_node_dns_request_duration_seconds",
			Help:    "Time from a DNS query's arrival to its answer, by who answered: cluster (the index), forward (an upstream resolver) or server (malformed or refused).",
			Buckets: prometheus.ExponentialBuckets(0.00025, 2, 16), // CoreDNS's: 250 µs to 8 s
		}, []string{"source"}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skiff_node_dns_forward_requests_total",
			Help: "DNS queries forwarded to the upstream resolvers.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_node_dns_forward_failures_total",
			Help: "Forwarded DNS queries no upstream answered, by reason: timeout, error, no_upstream (SERVFAIL), overloaded (REFUSED at once).",
		}, []string{"reason"}),
		upstream: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skiff_node_dns_upstream_errors_total",
			Help: "Failed attempts to reach one upstream resolver.",
		}, []string{"upstream"}),
		services: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "skiff_node_dns_services",
			Help: "Services the cluster DNS server has records for.",
		}, func() float64 { return float64(idx.Len()) }),
	}
	m.requests = promutil.MustRegister(reg, m.requests)
	m.duration = promutil.MustRegister(reg, m.duration)
	m.forwarded = promutil.MustRegister(reg, m.forwarded)
	m.failures = promutil.MustRegister(reg, m.failures)
	m.upstream = promutil.MustRegister(reg, m.upstream)
	// A second server in one process (tests) keeps the first one's gauge.
	if reg != nil {
		_ = reg.Register(m.services)
	}
	for _, r := range []string{failTimeout, failError, failNone, failOverloaded} {
		m.failures.WithLabelValues(r)
	}
	return m
}
