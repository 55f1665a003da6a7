package validation

import (
	"net/netip"
	"strconv"

	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
)

var (
	serviceTypes     = []string{"ClusterIP", "NodePort", "LoadBalancer", "ExternalName"}
	serviceProtocols = []string{"TCP", "UDP", "SCTP"}
	trafficPolicies  = []string{"Cluster", "Local"}
	ipFamilyPolicies = []string{"SingleStack", "PreferDualStack", "RequireDualStack"}
)

// ClusterIPNone is the clusterIP of a headless Service.
const ClusterIPNone = "None"

// maxClientIPTimeout is the longest ClientIP affinity (a day).
const maxClientIPTimeout = 86400

// notInSkiff refuses a field Kubernetes has and Skiff does not implement,
// whatever the validation mode, rather than accept it and do nothing.
func notInSkiff(p *field.Path, why string) *field.Error {
	return field.Forbidden(p, "not supported by Skiff: "+why)
}

// Service validates a Service as Kubernetes' ValidateService does: a
// DNS-1035 name, ports (named when several, unique names and
// port/protocol pairs, valid targetPorts, nodePorts only for NodePort and
// LoadBalancer), the type and what it requires (ExternalName: an
// externalName and no clusterIP), session affinity and its timeout, a
// clusterIP that is empty, "None" or an IPv4 address (clusterIPs[0] the
// same), IPv4 only, traffic policies. Skiff refuses what its proxy does
// not do: externalIPs and externalTrafficPolicy Local.
func Service(s *corev1.Service) field.ErrorList {
	errs := ObjectMeta(s.GetMetadata(), true, NameIsDNS1035Label, field.NewPath("metadata"))
	sp, p := s.GetSpec(), field.NewPath("spec")
	typ := sp.GetType()
	errs = append(errs, supported(typ, serviceTypes, p.Child("type"))...)
	headless := sp.GetClusterIp() == ClusterIPNone
	if len(sp.GetPorts()) == 0 && !headless && typ != "ExternalName" {
		errs = append(errs, field.Required(p.Child("ports"), ""))
	}
	errs = append(errs, servicePorts(sp, p.Child("ports"))...)
	errs = append(errs, Labels(sp.GetSelector(), p.Child("selector"))...)
	errs = append(errs, clusterIPs(sp, p)...)
	if typ == "ExternalName" {
		ep := p.Child("externalName")
		if sp.GetExternalName() == "" {
			errs = append(errs, field.Required(ep, ""))
		} else {
			name := sp.GetExternalName()
			if len(name) > 1 && name[len(name)-1] == '.' {
				name = name[:len(name)-1] // a fully qualified name may end with a dot
			}
			errs = append(errs, invalidEach(ep, sp.GetExternalName(), isDNS1123Subdomain(name))...)
		}
		if sp.GetClusterIp() != "" {
			errs = append(errs, field.Forbidden(p.Child("clusterIP"), "may not be set for ExternalName services"))
		}
	}
	errs = append(errs, sessionAffinity(sp, p)...)
	if len(sp.GetExternalIps()) > 0 {
		errs = append(errs, notInSkiff(p.Child("externalIPs"), "its service proxy routes cluster IPs and node ports only"))
	}
	if v := sp.GetExternalTrafficPolicy(); v != "" {
		ep := p.Child("externalTrafficPolicy")
		switch {
		case typ != "NodePort" && typ != "LoadBalancer":
			errs = append(errs, field.Invalid(ep, v, "may only be set when `type` is 'NodePort' or 'LoadBalancer'"))
		case v == "Local":
			errs = append(errs, notInSkiff(ep, "the value Local (Skiff's service proxy routes node ports to every ready endpoint: use Cluster)"))
		default:
			errs = append(errs, supported(v, trafficPolicies, ep)...)
		}
	}
	if sp.HealthCheckNodePort != 0 {
		errs = append(errs, field.Invalid(p.Child("healthCheckNodePort"), sp.HealthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
	}
	if v := sp.InternalTrafficPolicy; v != nil {
		errs = append(errs, supported(*v, trafficPolicies, p.Child("internalTrafficPolicy"))...)
	} else if typ != "ExternalName" {
		errs = append(errs, field.Required(p.Child("internalTrafficPolicy"), ""))
	}
	for i, fam := range sp.GetIpFamilies() {
		if fam != "IPv4" {
			errs = append(errs, field.NotSupported(p.Child("ipFamilies").Index(i), fam, []string{"IPv4"}))
		}
	}
	if v := sp.IpFamilyPolicy; v != nil {
		fp := p.Child("ipFamilyPolicy")
		errs = append(errs, supported(*v, ipFamilyPolicies, fp)...)
		if *v == "RequireDualStack" {
			errs = append(errs, field.Invalid(fp, *v, "this cluster is not configured for dual-stack services"))
		}
	}
	if sp.LoadBalancerClass != nil && typ != "LoadBalancer" {
		errs = append(errs, field.Forbidden(p.Child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if sp.AllocateLoadBalancerNodePorts != nil && typ != "LoadBalancer" {
		errs = append(errs, field.Forbidden(p.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	for i, r := range sp.GetLoadBalancerSourceRanges() {
		if _, err := netip.ParsePrefix(r); err != nil {
			errs = append(errs, field.Invalid(p.Child("loadBalancerSourceRanges").Index(i), r, "must be a CIDR such as 10.0.0.0/8"))
		}
	}
	return errs
}

// servicePorts checks each port and their uniqueness.
func servicePorts(sp *corev1.ServiceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	pairs := map[string]bool{}
	nodePorts := map[string]bool{}
	nodePortsAllowed := sp.GetType() == "NodePort" || sp.GetType() == "LoadBalancer"
	for i, port := range sp.GetPorts() {
		pp := p.Index(i)
		if len(sp.GetPorts()) > 1 && port.GetName() == "" {
			errs = append(errs, field.Required(pp.Child("name"), "names are required when a service has more than one port"))
		}
		if n := port.GetName(); n != "" {
			errs = append(errs, invalidEach(pp.Child("name"), n, isDNS1123Label(n))...)
			if names[n] {
				errs = append(errs, field.Duplicate(pp.Child("name"), n))
			}
			names[n] = true
		}
		for _, msg := range isValidPortNum(int64(port.GetPort())) {
			errs = append(errs, field.Invalid(pp.Child("port"), port.GetPort(), msg))
		}
		errs = append(errs, supported(port.GetProtocol(), serviceProtocols, pp.Child("protocol"))...)
		errs = append(errs, portNumOrName(port.GetTargetPort(), pp.Child("targetPort"))...)
		pair := strconv.Itoa(int(port.GetPort())) + "/" + port.GetProtocol()
		if pairs[pair] {
			errs = append(errs, field.Duplicate(pp, pair))
		}
		pairs[pair] = true
		if np := port.GetNodePort(); np != 0 {
			npp := pp.Child("nodePort")
			if !nodePortsAllowed {
				errs = append(errs, field.Forbidden(npp, "may not be used when `type` is '"+sp.GetType()+"'"))
			}
			for _, msg := range isValidPortNum(int64(np)) {
				errs = append(errs, field.Invalid(npp, np, msg))
			}
			key := strconv.Itoa(int(np)) + "/" + port.GetProtocol()
			if nodePorts[key] {
				errs = append(errs, field.Duplicate(npp, key))
			}
			nodePorts[key] = true
		}
	}
	return errs
}

// clusterIPs checks clusterIP and clusterIPs: empty, "None" or IPv4, the
// first of clusterIPs the same as clusterIP, one address (single-stack).
func clusterIPs(sp *corev1.ServiceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ip := sp.GetClusterIp()
	if ip != "" && ip != ClusterIPNone {
		if a, err := netip.ParseAddr(ip); err != nil || !a.Is4() {
			errs = append(errs, field.Invalid(p.Child("clusterIP"), ip, "must be a valid IPv4 address, or 'None' (this cluster allocates IPv4 cluster IPs only)"))
		}
	}
	ips := sp.GetClusterIps()
	switch {
	case len(ips) == 0:
	case ips[0] != ip:
		errs = append(errs, field.Invalid(p.Child("clusterIPs").Index(0), ips[0], "must match `clusterIP`"))
	case len(ips) > 1:
		errs = append(errs, field.Invalid(p.Child("clusterIPs"), ips, "may hold one address in a single-stack cluster"))
	}
	return errs
}

// sessionAffinity checks sessionAffinity and its config.
func sessionAffinity(sp *corev1.ServiceSpec, p *field.Path) field.ErrorList {
	errs := supported(sp.GetSessionAffinity(), []string{"None", "ClientIP"}, p.Child("sessionAffinity"))
	cfg := sp.GetSessionAffinityConfig()
	cp := p.Child("sessionAffinityConfig")
	switch {
	case sp.GetSessionAffinity() == "ClientIP":
		t := cfg.GetClientIp().TimeoutSeconds
		tp := cp.Child("clientIP", "timeoutSeconds")
		if t == nil {
			errs = append(errs, field.Required(tp, ""))
		} else if *t <= 0 || *t > maxClientIPTimeout {
			errs = append(errs, field.Invalid(tp, *t, "must be greater than 0 and less than or equal to 86400"))
		}
	case cfg != nil:
		errs = append(errs, field.Forbidden(cp, "must not be set when `sessionAffinity` is "+sp.GetSessionAffinity()))
	}
	if sp.GetType() == "ExternalName" && sp.GetSessionAffinity() == "ClientIP" {
		errs = append(errs, field.Forbidden(p.Child("sessionAffinity"), "may not be ClientIP for ExternalName services"))
	}
	return errs
}

// ServiceUpdate validates an update of a Service: as on create, and its
// clusterIP (and clusterIPs[0]) unchanged once set, but when the type
// changes to or from ExternalName.
func ServiceUpdate(newS, oldS *corev1.Service) field.ErrorList {
	errs := ObjectMetaUpdate(newS.GetMetadata(), oldS.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, Service(newS)...)
	n, o := newS.GetSpec(), oldS.GetSpec()
	p := field.NewPath("spec")
	if o.GetType() != "ExternalName" && n.GetType() != "ExternalName" && o.GetClusterIp() != "" && n.GetClusterIp() != o.GetClusterIp() {
		errs = append(errs, field.Invalid(p.Child("clusterIP"), n.GetClusterIp(), "field is immutable"))
	}
	if len(o.GetClusterIps()) > 0 && len(n.GetClusterIps()) > 0 && n.GetClusterIps()[0] != o.GetClusterIps()[0] && o.GetType() != "ExternalName" && n.GetType() != "ExternalName" {
		errs = append(errs, field.Invalid(p.Child("clusterIPs").Index(0), n.GetClusterIps()[0], "may not change once set"))
	}
	if len(o.GetIpFamilies()) > 0 && len(n.GetIpFamilies()) > 0 && n.GetIpFamilies()[0] != o.GetIpFamilies()[0] {
		errs = append(errs, field.Invalid(p.Child("ipFamilies").Index(0), n.GetIpFamilies()[0], "may not change once set"))
	}
	return errs
}

var addressTypes = []string{"IPv4", "IPv6", "FQDN"}

// Limits of an EndpointSlice, as Kubernetes'.
const (
	maxEndpoints         = 1000
	maxAddresses         = 100
	maxEndpointSlicePort = 20000
)

// EndpointSlice validates an EndpointSlice as Kubernetes does: an address
// type, at most 1,000 endpoints of 1 to 100 addresses of that type,
// labels and hostnames as DNS labels, at most 20,000 ports with unique
// names.
func EndpointSlice(es *discoveryv1.EndpointSlice) field.ErrorList {
	errs := ObjectMeta(es.GetMetadata(), true, NameIsDNSSubdomain, field.NewPath("metadata"))
	at := es.GetAddressType()
	errs = append(errs, supported(at, addressTypes, field.NewPath("addressType"))...)
	ep := field.NewPath("endpoints")
	if len(es.GetEndpoints()) > maxEndpoints {
		errs = append(errs, field.TooMany(ep, len(es.GetEndpoints()), maxEndpoints))
	}
	for i, e := range es.GetEndpoints() {
		p := ep.Index(i)
		ap := p.Child("addresses")
		switch n := len(e.GetAddresses()); {
		case n == 0:
			errs = append(errs, field.Required(ap, "must contain at least 1 address"))
		case n > maxAddresses:
			errs = append(errs, field.TooMany(ap, n, maxAddresses))
		}
		for j, a := range e.GetAddresses() {
			errs = append(errs, endpointAddress(at, a, ap.Index(j))...)
		}
		if h := e.Hostname; h != nil {
			errs = append(errs, invalidEach(p.Child("hostname"), *h, isDNS1123Label(*h))...)
		}
		if n := e.NodeName; n != nil {
			errs = append(errs, invalidEach(p.Child("nodeName"), *n, isDNS1123Subdomain(*n))...)
		}
		errs = append(errs, Labels(e.GetDeprecatedTopology(), p.Child("deprecatedTopology"))...)
	}
	pp := field.NewPath("ports")
	if len(es.GetPorts()) > maxEndpointSlicePort {
		errs = append(errs, field.TooMany(pp, len(es.GetPorts()), maxEndpointSlicePort))
	}
	names := map[string]bool{}
	for i, port := range es.GetPorts() {
		p := pp.Index(i)
		if n := port.GetName(); n != "" {
			errs = append(errs, invalidEach(p.Child("name"), n, isDNS1123Label(n))...)
		}
		if names[port.GetName()] {
			errs = append(errs, field.Duplicate(p.Child("name"), port.GetName()))
		}
		names[port.GetName()] = true
		if port.Protocol == nil {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else {
			errs = append(errs, supported(port.GetProtocol(), serviceProtocols, p.Child("protocol"))...)
		}
		if port.Port != nil {
			for _, msg := range isValidPortNum(int64(port.GetPort())) {
				errs = append(errs, field.Invalid(p.Child("port"), port.GetPort(), msg))
			}
		}
	}
	return errs
}

func endpointAddress(addressType, a string, p *field.Path) field.ErrorList {
	switch addressType {
	case "IPv4", "IPv6":
		ip, err := netip.ParseAddr(a)
		if err != nil || ip.Is4() != (addressType == "IPv4") || ip.Zone() != "" {
			return field.ErrorList{field.Invalid(p, a, "must be a valid "+addressType+" address")}
		}
	case "FQDN":
		return invalidEach(p, a, isDNS1123Subdomain(a))
	}
	return nil
}

// EndpointSliceUpdate validates an update of an EndpointSlice: as on
// create, with addressType immutable.
func EndpointSliceUpdate(newES, oldES *discoveryv1.EndpointSlice) field.ErrorList {
	errs := ObjectMetaUpdate(newES.GetMetadata(), oldES.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, EndpointSlice(newES)...)
	if newES.GetAddressType() != oldES.GetAddressType() {
		errs = append(errs, field.Invalid(field.NewPath("addressType"), newES.GetAddressType(), "field is immutable"))
	}
	return errs
}
