package proxy

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
)

// LabelServiceName is the label naming the Service an EndpointSlice
// belongs to, as in Kubernetes (discovery.k8s.io/v1).
const LabelServiceName = "kubernetes.io/service-name"

// DefaultAffinityTimeout is sessionAffinityConfig.clientIP.timeoutSeconds
// when a ClientIP Service does not say (Kubernetes' default, 3 hours).
const DefaultAffinityTimeout = 10800 * time.Second

// Protocol is a Service port's protocol, as nftables names it.
type Protocol string

// The protocols a Service port may have.
const (
	TCP  Protocol = "tcp"
	UDP  Protocol = "udp"
	SCTP Protocol = "sctp"
)

// ServicePortName names one port of one Service: what a chain is made for.
type ServicePortName struct {
	Namespace, Name string
	// Port is the Service port's name ("" for a single unnamed port).
	Port     string
	Protocol Protocol
}

func (n ServicePortName) String() string {
	return n.Namespace + "/" + n.Name + "/" + string(n.Protocol) + "/" + n.Port
}

// Endpoint is one address traffic to a service port may be sent to.
type Endpoint struct {
	Addr netip.AddrPort
	// NodeName is the node the endpoint runs on ("" when the slice does
	// not say).
	NodeName string
	// Local: the endpoint runs on this node.
	Local bool
	// Ready, Serving and Terminating are the slice's conditions, as
	// Kubernetes reads them (a missing ready or serving is true, a missing
	// terminating false).
	Ready, Serving, Terminating bool
}

// ServicePort is one port of a proxied Service, with the endpoints its
// traffic goes to.
type ServicePort struct {
	Name      ServicePortName
	ClusterIP netip.Addr
	Port      uint16
	// NodePort is 0 unless the Service is of type NodePort or LoadBalancer.
	NodePort uint16
	// Affinity is the ClientIP session affinity timeout; 0 means none.
	Affinity time.Duration
	// InternalLocal: internalTrafficPolicy Local.
	InternalLocal bool
	// Endpoints are those external traffic (NodePort) goes to: the ready
	// endpoints on every node or, when none is ready, the serving and
	// terminating ones (Kubernetes' fallback, so that a rolling update
	// drops no connection).
	Endpoints []Endpoint
	// InternalEndpoints are those ClusterIP traffic goes to: Endpoints
	// under policy Cluster; under policy Local the same choice among this
	// node's endpoints only.
	InternalEndpoints []Endpoint
}

// Snapshot is everything the rules are made from: every proxied service
// port, sorted by name, and what the node contributes.
type Snapshot struct {
	Ports []ServicePort
	// ClusterCIDR holds every pod address (the controller-manager's
	// --cluster-cidr): pod traffic leaving it is masqueraded, and traffic
	// from outside it to a ClusterIP is masqueraded. Invalid: neither.
	ClusterCIDR netip.Prefix
	// NodePortAddresses are the addresses NodePorts answer on. Empty:
	// every local address but loopback (fib daddr type local).
	NodePortAddresses []netip.Addr
}

// Endpoints returns the number of endpoints of every port (external
// choice), for metrics and logs.
func (s *Snapshot) Endpoints() int {
	n := 0
	for i := range s.Ports {
		n += len(s.Ports[i].Endpoints)
	}
	return n
}

// Skipped is a Service (or part of one) BuildSnapshot left out, and why.
type Skipped struct {
	Namespace, Name string
	Reason          string
}

func (s Skipped) String() string { return s.Namespace + "/" + s.Name + ": " + s.Reason }

// BuildSnapshot makes the Snapshot of the Services and EndpointSlices as
// node nodeName proxies them. Services without a virtual IP (headless,
// ExternalName, no clusterIP yet) have nothing to proxy and are left out
// silently; Services the proxy cannot serve (an IPv6 clusterIP, a port
// out of range) are left out and reported in skipped. Only IPv4 slices
// count; each endpoint address and port appears once per service port
// even when several slices carry it. The objects are only read.
func BuildSnapshot(services []*corev1.Service, slices []*discoveryv1.EndpointSlice, nodeName string) (snap *Snapshot, skipped []Skipped) {
	byService := map[[2]string][]*discoveryv1.EndpointSlice{}
	for _, sl := range slices {
		md := sl.GetMetadata()
		svc := md.GetLabels()[LabelServiceName]
		if svc == "" || sl.GetAddressType() != "IPv4" {
			continue
		}
		k := [2]string{md.GetNamespace(), svc}
		byService[k] = append(byService[k], sl)
	}
	snap = &Snapshot{}
	for _, svc := range services {
		md, spec := svc.GetMetadata(), svc.GetSpec()
		ns, name := md.GetNamespace(), md.GetName()
		cip := spec.GetClusterIp()
		if cip == "" || cip == "None" || spec.GetType() == "ExternalName" {
			continue
		}
		addr, err := netip.ParseAddr(cip)
		if err != nil || !addr.Is4() {
			skipped = append(skipped, Skipped{ns, name, fmt.Sprintf("spec.clusterIP %q: not an IPv4 address (the proxy programs IPv4 only)", cip)})
			continue
		}
		var affinity time.Duration
		if spec.GetSessionAffinity() == "ClientIP" {
			affinity = DefaultAffinityTimeout
			if t := spec.GetSessionAffinityConfig().GetClientIp().GetTimeoutSeconds(); t > 0 {
				affinity = time.Duration(t) * time.Second
			}
		}
		local := spec.GetInternalTrafficPolicy() == "Local"
		nodePorts := spec.GetType() == "NodePort" || spec.GetType() == "LoadBalancer"
		for i, p := range spec.GetPorts() {
			proto, ok := protocolOf(p.GetProtocol())
			if !ok {
				skipped = append(skipped, Skipped{ns, name, fmt.Sprintf("spec.ports[%d].protocol %q: not TCP, UDP or SCTP", i, p.GetProtocol())})
				continue
			}
			if p.GetPort() < 1 || p.GetPort() > 65535 {
				skipped = append(skipped, Skipped{ns, name, fmt.Sprintf("spec.ports[%d].port %d: not in 1-65535", i, p.GetPort())})
				continue
			}
			sp := ServicePort{
				Name:          ServicePortName{Namespace: ns, Name: name, Port: p.GetName(), Protocol: proto},
				ClusterIP:     addr,
				Port:          uint16(p.GetPort()),
				Affinity:      affinity,
				InternalLocal: local,
			}
			if np := p.GetNodePort(); nodePorts && np > 0 && np <= 65535 {
				sp.NodePort = uint16(np)
			}
			all := endpointsOf(byService[[2]string{ns, name}], p.GetName(), proto, nodeName)
			sp.Endpoints = usable(all, false)
			sp.InternalEndpoints = sp.Endpoints
			if local {
				sp.InternalEndpoints = usable(all, true)
			}
			snap.Ports = append(snap.Ports, sp)
		}
	}
	slicesSortPorts(snap.Ports)
	return snap, skipped
}

func slicesSortPorts(ps []ServicePort) {
	slices.SortFunc(ps, func(a, b ServicePort) int {
		return cmp.Or(
			strings.Compare(a.Name.Namespace, b.Name.Namespace),
			strings.Compare(a.Name.Name, b.Name.Name),
			strings.Compare(a.Name.Port, b.Name.Port),
			strings.Compare(string(a.Name.Protocol), string(b.Name.Protocol)))
	})
}

// protocolOf maps a Service port's protocol ("" is TCP) to nftables'.
func protocolOf(p string) (Protocol, bool) {
	switch p {
	case "", "TCP":
		return TCP, true
	case "UDP":
		return UDP, true
	case "SCTP":
		return SCTP, true
	}
	return "", false
}

// endpointsOf returns the endpoints of the slices for the service port
// named port, each address:port once, sorted.
func endpointsOf(sls []*discoveryv1.EndpointSlice, port string, proto Protocol, nodeName string) []Endpoint {
	var out []Endpoint
	seen := map[netip.AddrPort]bool{}
	for _, sl := range sls {
		var num int32
		for _, ep := range sl.GetPorts() {
			pp, ok := protocolOf(ep.GetProtocol())
			if ep.GetName() == port && ok && pp == proto && ep.Port != nil {
				num = ep.GetPort()
				break
			}
		}
		if num < 1 || num > 65535 {
			continue
		}
		for _, ep := range sl.GetEndpoints() {
			if len(ep.GetAddresses()) == 0 {
				continue
			}
			a, err := netip.ParseAddr(ep.GetAddresses()[0])
			if err != nil || !a.Is4() {
				continue
			}
			ap := netip.AddrPortFrom(a, uint16(num))
			if seen[ap] {
				continue
			}
			seen[ap] = true
			c := ep.GetConditions()
			ready := c == nil || c.Ready == nil || c.GetReady()
			serving := ready
			if c != nil && c.Serving != nil {
				serving = c.GetServing()
			}
			out = append(out, Endpoint{
				Addr:        ap,
				NodeName:    ep.GetNodeName(),
				Local:       nodeName != "" && ep.GetNodeName() == nodeName,
				Ready:       ready,
				Serving:     serving,
				Terminating: c.GetTerminating(),
			})
		}
	}
	slices.SortFunc(out, func(a, b Endpoint) int { return a.Addr.Compare(b.Addr) })
	return out
}

// usable picks, among eps (only the local ones when localOnly), the ready
// endpoints or, when there is none, the serving terminating ones, as
// Kubernetes' proxies do.
func usable(eps []Endpoint, localOnly bool) []Endpoint {
	var ready, fallback []Endpoint
	for _, ep := range eps {
		if localOnly && !ep.Local {
			continue
		}
		switch {
		case ep.Ready:
			ready = append(ready, ep)
		case ep.Serving && ep.Terminating:
			fallback = append(fallback, ep)
		}
	}
	if len(ready) > 0 {
		return ready
	}
	return fallback
}
