package defaults

import (
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// DefaultClientIPTimeoutSeconds is how long ClientIP affinity lasts
// unless sessionAffinityConfig says (Kubernetes' 3 hours).
const DefaultClientIPTimeoutSeconds = 10800

// Service defaults a Service as Kubernetes does: type ClusterIP,
// sessionAffinity None (ClientIP's timeout 10800 s), each port's protocol
// TCP and targetPort its port, internalTrafficPolicy Cluster (but for
// ExternalName), externalTrafficPolicy Cluster for NodePort and
// LoadBalancer, allocateLoadBalancerNodePorts true for LoadBalancer, and
// clusterIPs from clusterIP. The cluster IP, node ports and IP families
// are the apiserver's to allocate, not defaults.
func Service(s *corev1.Service) {
	if s == nil {
		return
	}
	if s.Spec == nil {
		s.Spec = &corev1.ServiceSpec{}
	}
	sp := s.Spec
	if sp.Type == "" {
		sp.Type = "ClusterIP"
	}
	if sp.SessionAffinity == "" {
		sp.SessionAffinity = "None"
	}
	if sp.SessionAffinity == "ClientIP" {
		if sp.SessionAffinityConfig == nil {
			sp.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
		}
		if sp.SessionAffinityConfig.ClientIp == nil {
			sp.SessionAffinityConfig.ClientIp = &corev1.ClientIPConfig{}
		}
		if sp.SessionAffinityConfig.ClientIp.TimeoutSeconds == nil {
			t := int32(DefaultClientIPTimeoutSeconds)
			sp.SessionAffinityConfig.ClientIp.TimeoutSeconds = &t
		}
	}
	for _, p := range sp.Ports {
		if p == nil {
			continue
		}
		if p.Protocol == "" {
			p.Protocol = "TCP"
		}
		if t := p.TargetPort; t == nil || t.Value == nil || t.GetIntVal() == 0 && t.GetStrVal() == "" {
			p.TargetPort = &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: p.Port}}
		}
	}
	if sp.Type != "ExternalName" && sp.InternalTrafficPolicy == nil {
		cluster := "Cluster"
		sp.InternalTrafficPolicy = &cluster
	}
	if (sp.Type == "NodePort" || sp.Type == "LoadBalancer") && sp.ExternalTrafficPolicy == "" {
		sp.ExternalTrafficPolicy = "Cluster"
	}
	if sp.Type == "LoadBalancer" && sp.AllocateLoadBalancerNodePorts == nil {
		yes := true
		sp.AllocateLoadBalancerNodePorts = &yes
	}
	if sp.ClusterIp != "" && len(sp.ClusterIps) == 0 {
		sp.ClusterIps = []string{sp.ClusterIp}
	}
	if sp.ClusterIp == "" && len(sp.ClusterIps) > 0 {
		sp.ClusterIp = sp.ClusterIps[0]
	}
}

// EndpointSlice defaults an EndpointSlice: each port's protocol TCP.
func EndpointSlice(es *discoveryv1.EndpointSlice) {
	for _, p := range es.GetPorts() {
		if p != nil && p.Protocol == nil {
			tcp := "TCP"
			p.Protocol = &tcp
		}
	}
}
