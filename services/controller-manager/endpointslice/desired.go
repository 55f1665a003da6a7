package endpointslice

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// portGroup is the desired endpoints of the pods whose Service ports
// resolve to the same port set.
type portGroup struct {
	ports     []*discoveryv1.EndpointPort
	endpoints map[string]*discoveryv1.Endpoint // by endpointKey
}

// desired is what a Service's slices should hold: its port groups by
// portSetKey, and the pods left out because their node is unknown.
type desired struct {
	groups      map[string]*portGroup
	unknownNode []string // "pod on node", for the log
}

// count is the number of desired endpoints.
func (d desired) count() int {
	n := 0
	for _, g := range d.groups {
		n += len(g.endpoints)
	}
	return n
}

// desiredEndpoints computes a Service's endpoints from the pods its selector
// matches (the caller matched them) and the nodes (nodeOf looks one up in
// the cache).
func desiredEndpoints(svc *corev1.Service, pods []*corev1.Pod, nodeOf func(name string) (*corev1.Node, bool)) desired {
	d := desired{groups: map[string]*portGroup{}}
	publishNotReady := svc.GetSpec().GetPublishNotReadyAddresses()
	for _, pod := range pods {
		if !shouldBeEndpoint(pod) {
			continue
		}
		addrs := ipv4Addresses(pod.GetStatus())
		if len(addrs) == 0 {
			continue
		}
		nodeName := pod.GetSpec().GetNodeName()
		node, ok := nodeOf(nodeName)
		if !ok && !publishNotReady {
			// Kubernetes leaves such a pod out rather than publish an
			// endpoint on a node that may be gone; the Node's arrival
			// enqueues the Service again.
			d.unknownNode = append(d.unknownNode, pod.GetMetadata().GetName()+" on "+nodeName)
			continue
		}
		ports := endpointPorts(svc, pod)
		key := portSetKey(ports)
		g := d.groups[key]
		if g == nil {
			g = &portGroup{ports: ports, endpoints: map[string]*discoveryv1.Endpoint{}}
			d.groups[key] = g
		}
		ep := podToEndpoint(pod, node, svc, addrs)
		g.endpoints[endpointKey(ep)] = ep
	}
	return d
}

// shouldBeEndpoint reports whether pod may be an endpoint at all: it has an
// IP and is not finished. Terminating pods are endpoints (terminating=true).
func shouldBeEndpoint(pod *corev1.Pod) bool {
	switch pod.GetStatus().GetPhase() {
	case "Succeeded", "Failed":
		return false
	}
	return pod.GetStatus().GetPodIp() != "" || len(pod.GetStatus().GetPodIps()) > 0
}

// ipv4Addresses returns the pod's IPv4 addresses (status.podIPs, or
// status.podIP when podIPs is empty), in canonical form.
func ipv4Addresses(st *corev1.PodStatus) []string {
	ips := make([]string, 0, 1)
	for _, ip := range st.GetPodIps() {
		ips = append(ips, ip.GetIp())
	}
	if len(ips) == 0 && st.GetPodIp() != "" {
		ips = append(ips, st.GetPodIp())
	}
	var out []string
	for _, s := range ips {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		a = a.Unmap()
		if a.Is4() && !slices.Contains(out, a.String()) {
			out = append(out, a.String())
		}
	}
	return out
}

// podToEndpoint is the endpoint pod makes for svc (podToEndpoint in
// Kubernetes).
func podToEndpoint(pod *corev1.Pod, node *corev1.Node, svc *corev1.Service, addrs []string) *discoveryv1.Endpoint {
	serving := podReady(pod)
	terminating := pod.GetMetadata().GetDeletionTimestamp() != nil
	// Ready is never true for a terminating pod, unless the Service
	// publishes not-ready addresses.
	ready := svc.GetSpec().GetPublishNotReadyAddresses() || (serving && !terminating)
	m := pod.GetMetadata()
	ep := &discoveryv1.Endpoint{
		Addresses: addrs,
		Conditions: &discoveryv1.EndpointConditions{
			Ready: proto.Bool(ready), Serving: proto.Bool(serving), Terminating: proto.Bool(terminating),
		},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: m.GetNamespace(), Name: m.GetName(), Uid: m.GetUid()},
	}
	if n := pod.GetSpec().GetNodeName(); n != "" {
		ep.NodeName = proto.String(n)
	}
	if zone := node.GetMetadata().GetLabels()[LabelTopologyZone]; zone != "" {
		ep.Zone = proto.String(zone)
	}
	if h := pod.GetSpec().GetHostname(); h != "" && pod.GetSpec().GetSubdomain() == svc.GetMetadata().GetName() &&
		m.GetNamespace() == svc.GetMetadata().GetNamespace() {
		ep.Hostname = proto.String(h)
	}
	return ep
}

// podReady reports whether pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.GetStatus().GetConditions() {
		if c.GetType() == "Ready" {
			return c.GetStatus() == "True"
		}
	}
	return false
}

// endpointPorts resolves svc's ports for pod: one EndpointPort per Service
// port whose targetPort the pod has; a named targetPort the pod does not
// have is left out (getEndpointPorts in Kubernetes).
func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []*discoveryv1.EndpointPort {
	out := make([]*discoveryv1.EndpointPort, 0, len(svc.GetSpec().GetPorts()))
	for _, sp := range svc.GetSpec().GetPorts() {
		num, ok := findPort(pod, sp)
		if !ok {
			continue
		}
		ep := &discoveryv1.EndpointPort{
			Name:     proto.String(sp.GetName()),
			Protocol: proto.String(protocolOf(sp.GetProtocol())),
			Port:     proto.Int32(num),
		}
		if sp.AppProtocol != nil {
			ep.AppProtocol = proto.String(sp.GetAppProtocol())
		}
		out = append(out, ep)
	}
	return out
}

// protocolOf is a port's protocol, TCP when not set (the API's default).
func protocolOf(p string) string {
	if p == "" {
		return "TCP"
	}
	return p
}

// findPort resolves a Service port's targetPort for pod: a number as it
// is (the Service's port when targetPort is not set), a name as the
// containerPort of the pod's container port of that name and the Service
// port's protocol.
func findPort(pod *corev1.Pod, sp *corev1.ServicePort) (int32, bool) {
	tp := sp.GetTargetPort()
	switch v := tp.GetValue().(type) {
	case *metav1.IntOrString_IntVal:
		if v.IntVal != 0 {
			return v.IntVal, true
		}
	case *metav1.IntOrString_StrVal:
		if v.StrVal != "" {
			protocol := protocolOf(sp.GetProtocol())
			for _, c := range pod.GetSpec().GetContainers() {
				for _, p := range c.GetPorts() {
					if p.GetName() == v.StrVal && protocolOf(p.GetProtocol()) == protocol {
						return p.GetContainerPort(), true
					}
				}
			}
			return 0, false
		}
	}
	return sp.GetPort(), sp.GetPort() != 0
}

// portSetKey identifies a port set whatever the order of its ports
// (NewPortMapKey in Kubernetes).
func portSetKey(ports []*discoveryv1.EndpointPort) string {
	keys := make([]string, len(ports))
	for i, p := range ports {
		app := "-"
		if p.AppProtocol != nil {
			app = "=" + p.GetAppProtocol()
		}
		keys[i] = fmt.Sprintf("%q/%q/%d/%s", p.GetName(), p.GetProtocol(), p.GetPort(), app)
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

// endpointKey is an endpoint's identity: its addresses, hostname and target
// (hashEndpoint in Kubernetes). Two endpoints of one key are the same
// endpoint, perhaps with other conditions.
func endpointKey(ep *discoveryv1.Endpoint) string {
	addrs := slices.Clone(ep.GetAddresses())
	slices.Sort(addrs)
	var b strings.Builder
	b.WriteString(strings.Join(addrs, ","))
	b.WriteByte('|')
	if ep.Hostname != nil {
		b.WriteString("=" + ep.GetHostname())
	}
	b.WriteByte('|')
	if ep.TargetRef != nil {
		b.WriteString(ep.GetTargetRef().GetNamespace() + "/" + ep.GetTargetRef().GetName())
	}
	return b.String()
}
