package dns

import (
	"net/netip"
	"strings"

	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
)

// svcKind is how a Service answers its name.
type svcKind int

const (
	kindClusterIP svcKind = iota // A: the ClusterIP
	kindHeadless                 // A: the ready endpoints
	kindExternal                 // CNAME: spec.externalName
)

// serviceView is what one Service answers: a pure function (buildView) of
// the Service and its EndpointSlices, immutable once built.
type serviceView struct {
	fqdn         string // <svc>.<ns>.svc.<zone>.
	kind         svcKind
	clusterIPs   []netip.Addr // IPv4 only
	externalName string       // fully qualified, lower case
	ports        []portInfo   // the Service's ports
	// groups are the endpoints that answer (ready, or all with
	// publishNotReadyAddresses), one group per slice, with the slice's
	// ports (the target ports, resolved).
	groups []endpointGroup
}

type portInfo struct {
	name     string // lower case; "" when unnamed
	protocol string // lower case: tcp, udp, sctp
	port     uint16
}

type endpointGroup struct {
	ports     []portInfo
	endpoints []endpointInfo
}

type endpointInfo struct {
	ip    netip.Addr
	label string // its hostname, else its dashed address
	fqdn  string // <label>.<svc>.<ns>.svc.<zone>.
}

// buildView computes the records of svc from its slices (sorted by name),
// in zone (lower case, fully qualified).
func buildView(svc *corev1.Service, slices []*discoveryv1.EndpointSlice, zone string) *serviceView {
	meta, spec := svc.GetMetadata(), svc.GetSpec()
	v := &serviceView{fqdn: strings.ToLower(meta.GetName() + "." + meta.GetNamespace() + ".svc." + zone)}
	switch {
	case spec.GetType() == "ExternalName":
		v.kind = kindExternal
		if spec.GetExternalName() != "" {
			v.externalName = fqdn(spec.GetExternalName())
		}
		return v // no ports, no endpoints: only the CNAME
	case spec.GetClusterIp() == "None":
		v.kind = kindHeadless
	default:
		v.kind = kindClusterIP
		ips := spec.GetClusterIps()
		if len(ips) == 0 && spec.GetClusterIp() != "" {
			ips = []string{spec.GetClusterIp()}
		}
		for _, s := range ips {
			if ip, err := netip.ParseAddr(s); err == nil && ip.Is4() {
				v.clusterIPs = append(v.clusterIPs, ip)
			}
		}
	}
	for _, p := range spec.GetPorts() {
		if pi, ok := newPortInfo(p.GetName(), p.GetProtocol(), p.GetPort()); ok {
			v.ports = append(v.ports, pi)
		}
	}
	all := spec.GetPublishNotReadyAddresses()
	for _, s := range slices {
		if t := s.GetAddressType(); t != "IPv4" && t != "" {
			continue // IPv6 and FQDN slices: Skiff answers IPv4 only
		}
		var g endpointGroup
		for _, p := range s.GetPorts() {
			if pi, ok := newPortInfo(p.GetName(), p.GetProtocol(), p.GetPort()); ok {
				g.ports = append(g.ports, pi)
			}
		}
		seen := map[endpointInfo]bool{}
		for _, e := range s.GetEndpoints() {
			// Ready unset means ready (the API's rule, and CoreDNS's).
			if c := e.GetConditions(); !all && c != nil && c.Ready != nil && !c.GetReady() {
				continue
			}
			if len(e.GetAddresses()) == 0 {
				continue
			}
			ip, err := netip.ParseAddr(e.GetAddresses()[0]) // the first is used, as the API says
			if err != nil || !ip.Is4() {
				continue
			}
			label := strings.ToLower(e.GetHostname())
			if label == "" || strings.Contains(label, ".") {
				label = dashedIPv4(ip)
			}
			ei := endpointInfo{ip: ip, label: label, fqdn: label + "." + v.fqdn}
			if seen[ei] {
				continue
			}
			seen[ei] = true
			g.endpoints = append(g.endpoints, ei)
		}
		if len(g.endpoints) > 0 {
			v.groups = append(v.groups, g)
		}
	}
	return v
}

func newPortInfo(name, protocol string, port int32) (portInfo, bool) {
	if port <= 0 || port > 65535 {
		return portInfo{}, false
	}
	if protocol == "" {
		protocol = "TCP"
	}
	return portInfo{name: strings.ToLower(name), protocol: strings.ToLower(protocol), port: uint16(port)}, true
}

// target is one record a cluster name resolves to: an address, the name
// SRV records point at for it, and the port (0: none, no SRV record).
type target struct {
	name string
	ip   netip.Addr
	port uint16
}

// lookupResult is what a cluster name resolves to. exists false is
// NXDOMAIN; exists with nothing else is NODATA for every type.
type lookupResult struct {
	exists  bool
	cname   string
	targets []target
}

// lookup resolves a parsed name of the zone, with CoreDNS's kubernetes
// plugin's rules (findServices, findPods with "pods insecure").
func (x *Index) lookup(n clusterName) lookupResult {
	switch n.kind {
	case nameApex:
		return lookupResult{exists: true}
	case nameNamespace:
		return lookupResult{exists: x.namespaceExists(n.namespace)}
	case namePod:
		if !x.namespaceExists(n.namespace) {
			return lookupResult{}
		}
		return lookupResult{exists: true, targets: []target{{ip: n.podIP}}}
	case nameService, nameEndpoint, namePort:
		v := x.view(n.namespace, n.service)
		if v == nil {
			return lookupResult{}
		}
		return v.lookup(n)
	}
	return lookupResult{}
}

func (v *serviceView) lookup(n clusterName) lookupResult {
	if v.kind == kindExternal {
		// No endpoints, ports or SRV names under an ExternalName Service.
		if n.kind != nameService || v.externalName == "" {
			return lookupResult{}
		}
		return lookupResult{exists: true, cname: v.externalName}
	}
	var r lookupResult
	if v.kind == kindClusterIP && n.kind != nameEndpoint {
		// The name exists once a port matches: a Service name always
		// (a ClusterIP Service without ports, which validation refuses,
		// still exists, without SRV records); a port name only when it
		// names one.
		matched := n.kind == nameService
		for _, p := range v.ports {
			if !p.matches(n) {
				continue
			}
			matched = true
			for _, ip := range v.clusterIPs {
				r.targets = append(r.targets, target{name: v.fqdn, ip: ip, port: p.port})
			}
		}
		if len(v.ports) == 0 {
			for _, ip := range v.clusterIPs {
				r.targets = append(r.targets, target{name: v.fqdn, ip: ip})
			}
		}
		r.exists = matched
		return r
	}
	// A headless Service's names, and endpoint names of any Service.
	for _, g := range v.groups {
		for _, e := range g.endpoints {
			if n.kind == nameEndpoint && e.label != n.endpoint {
				continue
			}
			if len(g.ports) == 0 && n.kind != namePort {
				r.targets = append(r.targets, target{name: e.fqdn, ip: e.ip})
				continue
			}
			for _, p := range g.ports {
				if p.matches(n) {
					r.targets = append(r.targets, target{name: e.fqdn, ip: e.ip, port: p.port})
				}
			}
		}
	}
	// As CoreDNS: a headless Service without a ready endpoint does not
	// exist (NXDOMAIN), nor does an endpoint or port name that matches
	// nothing.
	r.exists = len(r.targets) > 0
	return r
}

// matches reports whether port p answers name n: every port for a Service
// or endpoint name, the one named for a port name.
func (p portInfo) matches(n clusterName) bool {
	if n.kind != namePort {
		return true
	}
	return p.name == n.port && p.protocol == n.protocol
}
