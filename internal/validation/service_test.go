package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/defaults"
	"skiff.dev/internal/validation"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func port(name string, p int32) *corev1.ServicePort {
	return &corev1.ServicePort{Name: name, Port: p, Protocol: "TCP", TargetPort: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: p}}}
}

func named(s string) *metav1.IntOrString {
	return &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: s}}
}

func TestService(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *corev1.ServiceSpec, m *metav1.ObjectMeta)
		want   []string
	}{
		{"valid", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) {}, nil},
		{"named target port", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.Ports[0].TargetPort = named("http") }, nil},
		{"name starts with a digit", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { m.Name = "1web" }, []string{"metadata.name: Invalid value"}},
		{"name with a dot", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { m.Name = "web.a" }, []string{"metadata.name: Invalid value"}},
		{"no ports", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.Ports = nil }, []string{"spec.ports: Required value"}},
		{"headless without ports", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) {
			s.Ports, s.ClusterIp, s.ClusterIps = nil, "None", []string{"None"}
		}, nil},
		{"two ports, one unnamed", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.Ports = append(s.Ports, port("", 81)) },
			[]string{"spec.ports[0].name: Required value", "spec.ports[1].name: Required value"}},
		{"duplicate port names", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) {
			s.Ports = []*corev1.ServicePort{port("http", 80), port("http", 81)}
		}, []string{"spec.ports[1].name: Duplicate value"}},
		{"duplicate port and protocol", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) {
			s.Ports = []*corev1.ServicePort{port("a", 80), port("b", 80)}
		}, []string{"spec.ports[1]: Duplicate value"}},
		{"port out of range", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.Ports[0].Port = 70000 }, []string{"spec.ports[0].port: Invalid value"}},
		{"protocol", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.Ports[0].Protocol = "ICMP" }, []string{"spec.ports[0].protocol: Unsupported value"}},
		{"bad target port name", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.Ports[0].TargetPort = named("http_x") }, []string{"spec.ports[0].targetPort: Invalid value"}},
		{"node port on ClusterIP", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.Ports[0].NodePort = 30080 }, []string{"spec.ports[0].nodePort: Forbidden"}},
		{"type", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.Type = "Internal" }, []string{"spec.type: Unsupported value"}},
		{"cluster IP not an address", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) {
			s.ClusterIp, s.ClusterIps = "10.96.0.300", []string{"10.96.0.300"}
		},
			[]string{"spec.clusterIP: Invalid value"}},
		{"IPv6 cluster IP", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) {
			s.ClusterIp, s.ClusterIps = "fd00::1", []string{"fd00::1"}
		},
			[]string{"spec.clusterIP: Invalid value"}},
		{"clusterIPs disagree", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) {
			s.ClusterIp, s.ClusterIps = "10.96.0.10", []string{"10.96.0.11"}
		},
			[]string{"spec.clusterIPs[0]: Invalid value"}},
		{"external name missing", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) {
			s.Type = "ExternalName"
			s.InternalTrafficPolicy = nil
		},
			[]string{"spec.externalName: Required value"}},
		{"external name with cluster IP", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) {
			s.Type, s.ExternalName, s.ClusterIp, s.ClusterIps = "ExternalName", "db.example.com.", "10.96.0.10", []string{"10.96.0.10"}
		}, []string{"spec.clusterIP: Forbidden"}},
		{"session affinity", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.SessionAffinity = "Cookie" }, []string{"spec.sessionAffinity: Unsupported value"}},
		{"affinity timeout", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) {
			s.SessionAffinity = "ClientIP"
			s.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIp: &corev1.ClientIPConfig{TimeoutSeconds: proto.Int32(86401)}}
		}, []string{"spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value"}},
		{"affinity config without affinity", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) {
			s.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIp: &corev1.ClientIPConfig{TimeoutSeconds: proto.Int32(60)}}
		}, []string{"spec.sessionAffinityConfig: Forbidden"}},
		{"external IPs are not Skiff's", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.ExternalIps = []string{"192.0.2.1"} },
			[]string{"spec.externalIPs: Forbidden"}},
		{"external traffic policy on ClusterIP", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.ExternalTrafficPolicy = "Cluster" },
			[]string{"spec.externalTrafficPolicy: Invalid value"}},
		{"external traffic policy Local", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) {
			s.Type, s.ExternalTrafficPolicy = "NodePort", "Local"
		},
			[]string{"spec.externalTrafficPolicy: Forbidden"}},
		{"internal traffic policy", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.InternalTrafficPolicy = proto.String("Node") },
			[]string{"spec.internalTrafficPolicy: Unsupported value"}},
		{"IPv6 family", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.IpFamilies = []string{"IPv6"} }, []string{"spec.ipFamilies[0]: Unsupported value"}},
		{"dual stack required", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.IpFamilyPolicy = proto.String("RequireDualStack") },
			[]string{"spec.ipFamilyPolicy: Invalid value"}},
		{"bad selector", func(s *corev1.ServiceSpec, m *metav1.ObjectMeta) { s.Selector = map[string]string{"app": "a b"} }, []string{"spec.selector[app]: Invalid value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &corev1.Service{Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "default"},
				Spec: &corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []*corev1.ServicePort{port("", 80)}}}
			defaults.Service(s)
			c.mutate(s.Spec, s.Metadata)
			expectErrors(t, validation.Service(s), c.want)
		})
	}
}

func TestServiceDefaults(t *testing.T) {
	s := &corev1.Service{Spec: &corev1.ServiceSpec{Type: "NodePort", SessionAffinity: "ClientIP", Ports: []*corev1.ServicePort{port("", 80)}, ClusterIp: "10.96.0.5"}}
	defaults.Service(s)
	sp := s.Spec
	if sp.Ports[0].Protocol != "TCP" || sp.Ports[0].TargetPort.GetIntVal() != 80 || sp.GetInternalTrafficPolicy() != "Cluster" ||
		sp.ExternalTrafficPolicy != "Cluster" || sp.GetSessionAffinityConfig().GetClientIp().GetTimeoutSeconds() != 10800 ||
		len(sp.ClusterIps) != 1 || sp.ClusterIps[0] != "10.96.0.5" {
		t.Errorf("defaults: %v", sp)
	}
}

func TestServiceUpdate(t *testing.T) {
	old := &corev1.Service{Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "default", Uid: "u"},
		Spec: &corev1.ServiceSpec{Ports: []*corev1.ServicePort{port("", 80)}, ClusterIp: "10.96.0.10", IpFamilies: []string{"IPv4"}}}
	defaults.Service(old)
	next := proto.Clone(old).(*corev1.Service)
	next.Spec.Ports[0].Port = 8080
	expectErrors(t, validation.ServiceUpdate(next, old), nil)
	next.Spec.ClusterIp, next.Spec.ClusterIps = "10.96.0.11", []string{"10.96.0.11"}
	expectErrors(t, validation.ServiceUpdate(next, old), []string{"spec.clusterIP: Invalid value", "spec.clusterIPs[0]: Invalid value"})
	// To ExternalName, the cluster IP goes.
	ext := proto.Clone(old).(*corev1.Service)
	ext.Spec.Type, ext.Spec.ExternalName, ext.Spec.ClusterIp, ext.Spec.ClusterIps, ext.Spec.InternalTrafficPolicy = "ExternalName", "db.example.com", "", nil, nil
	expectErrors(t, validation.ServiceUpdate(ext, old), nil)
}

func TestEndpointSlice(t *testing.T) {
	valid := func() *discoveryv1.EndpointSlice {
		es := &discoveryv1.EndpointSlice{Metadata: &metav1.ObjectMeta{Name: "web-abc", Namespace: "default"}, AddressType: "IPv4",
			Endpoints: []*discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, Hostname: proto.String("web-0"), NodeName: proto.String("n1")}},
			Ports:     []*discoveryv1.EndpointPort{{Name: proto.String("http"), Port: proto.Int32(8080)}}}
		defaults.EndpointSlice(es)
		return es
	}
	cases := []struct {
		name   string
		mutate func(es *discoveryv1.EndpointSlice)
		want   []string
	}{
		{"valid", func(es *discoveryv1.EndpointSlice) {}, nil},
		{"address type", func(es *discoveryv1.EndpointSlice) { es.AddressType = "IP" }, []string{"addressType: Unsupported value"}},
		{"IPv6 address in an IPv4 slice", func(es *discoveryv1.EndpointSlice) { es.Endpoints[0].Addresses[0] = "fd00::5" },
			[]string{"endpoints[0].addresses[0]: Invalid value"}},
		{"no address", func(es *discoveryv1.EndpointSlice) { es.Endpoints[0].Addresses = nil }, []string{"endpoints[0].addresses: Required value"}},
		{"too many endpoints", func(es *discoveryv1.EndpointSlice) {
			for range 1000 {
				es.Endpoints = append(es.Endpoints, &discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}})
			}
		}, []string{"endpoints: Too many"}},
		{"hostname", func(es *discoveryv1.EndpointSlice) { es.Endpoints[0].Hostname = proto.String("Web_0") }, []string{"endpoints[0].hostname: Invalid value"}},
		{"duplicate port names", func(es *discoveryv1.EndpointSlice) {
			es.Ports = append(es.Ports, proto.Clone(es.Ports[0]).(*discoveryv1.EndpointPort))
		},
			[]string{"ports[1].name: Duplicate value"}},
		{"port protocol", func(es *discoveryv1.EndpointSlice) { es.Ports[0].Protocol = proto.String("ICMP") }, []string{"ports[0].protocol: Unsupported value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			es := valid()
			c.mutate(es)
			expectErrors(t, validation.EndpointSlice(es), c.want)
		})
	}
	old, next := valid(), valid()
	next.AddressType = "FQDN"
	next.Endpoints[0].Addresses[0] = "web.example.com"
	old.Metadata.Uid, next.Metadata.Uid = "u", "u"
	if errs := validation.EndpointSliceUpdate(next, old); len(errs) != 1 || !strings.Contains(errs[0].Error(), "addressType: Invalid value") {
		t.Errorf("changing addressType: %v", errs)
	}
}

// A field Kubernetes has and Skiff does not implement is refused with the
// reason, never accepted to do nothing.
func TestServiceFieldsSkiffRefuses(t *testing.T) {
	s := &corev1.Service{Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &corev1.ServiceSpec{Type: "NodePort", ExternalTrafficPolicy: "Local", ExternalIps: []string{"192.0.2.1"}, Ports: []*corev1.ServicePort{port("", 80)}}}
	defaults.Service(s)
	errs := validation.Service(s)
	if len(errs) != 2 {
		t.Fatalf("errors: %v", errs)
	}
	for _, e := range errs {
		if !strings.Contains(e.Error(), "not supported by Skiff") {
			t.Errorf("%v: does not say Skiff does not support it", e)
		}
	}
}
