package proxy

import (
	"net/netip"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// svc is a Service "ns/name" with clusterIP ip and ports "name:port/PROTO"
// or "name:port/PROTO:nodePort" (PROTO and nodePort optional).
func svc(nsName, ip string, ports ...string) *corev1.Service {
	ns, name, _ := strings.Cut(nsName, "/")
	s := &corev1.Service{
		Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:     &corev1.ServiceSpec{ClusterIp: ip, Type: "ClusterIP"},
	}
	for _, p := range ports {
		pname, rest, _ := strings.Cut(p, ":")
		num, rest, _ := strings.Cut(rest, "/")
		protocol, np, _ := strings.Cut(rest, ":")
		n, _ := strconv.Atoi(num)
		sp := &corev1.ServicePort{Name: pname, Port: int32(n), Protocol: protocol,
			TargetPort: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: int32(n)}}}
		if np != "" {
			v, _ := strconv.Atoi(np)
			sp.NodePort = int32(v)
			s.Spec.Type = "NodePort"
		}
		s.Spec.Ports = append(s.Spec.Ports, sp)
	}
	return s
}

func withAffinity(s *corev1.Service, seconds int32) *corev1.Service {
	s.Spec.SessionAffinity = "ClientIP"
	if seconds > 0 {
		s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIp: &corev1.ClientIPConfig{TimeoutSeconds: proto.Int32(seconds)}}
	}
	return s
}

func withLocal(s *corev1.Service) *corev1.Service {
	s.Spec.InternalTrafficPolicy = proto.String("Local")
	return s
}

// ep is an endpoint "ip@node" with conditions: "" ready, "-" not ready,
// "t" serving and terminating, "-t" terminating and not serving.
type ep struct{ addr, cond string }

// slice is an EndpointSlice of Service nsName, ports "name:port/PROTO".
func slice(nsName, sliceName string, ports []string, eps ...ep) *discoveryv1.EndpointSlice {
	ns, name, _ := strings.Cut(nsName, "/")
	s := &discoveryv1.EndpointSlice{
		Metadata:    &metav1.ObjectMeta{Namespace: ns, Name: sliceName, Labels: map[string]string{LabelServiceName: name}},
		AddressType: "IPv4",
	}
	for _, p := range ports {
		pname, rest, _ := strings.Cut(p, ":")
		num, protocol, _ := strings.Cut(rest, "/")
		if protocol == "" {
			protocol = "TCP"
		}
		n, _ := strconv.Atoi(num)
		s.Ports = append(s.Ports, &discoveryv1.EndpointPort{Name: proto.String(pname), Protocol: proto.String(protocol), Port: proto.Int32(int32(n))})
	}
	for _, e := range eps {
		ip, node, _ := strings.Cut(e.addr, "@")
		c := &discoveryv1.EndpointConditions{Ready: proto.Bool(true), Serving: proto.Bool(true), Terminating: proto.Bool(false)}
		switch e.cond {
		case "-":
			c.Ready, c.Serving = proto.Bool(false), proto.Bool(false)
		case "t":
			c.Ready, c.Terminating = proto.Bool(false), proto.Bool(true)
		case "-t":
			c.Ready, c.Serving, c.Terminating = proto.Bool(false), proto.Bool(false), proto.Bool(true)
		}
		x := &discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: c}
		if node != "" {
			x.NodeName = proto.String(node)
		}
		s.Endpoints = append(s.Endpoints, x)
	}
	return s
}

func addrPorts(s ...string) []netip.AddrPort {
	var out []netip.AddrPort
	for _, x := range s {
		out = append(out, netip.MustParseAddrPort(x))
	}
	return out
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
