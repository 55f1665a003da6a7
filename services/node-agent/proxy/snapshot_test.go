package proxy

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
)

func TestBuildSnapshot(t *testing.T) {
	web := []string{":80"}
	tests := []struct {
		name     string
		services []*corev1.Service
		slices   []*discoveryv1.EndpointSlice
		// want: per service port "ns/name/proto/port", its Endpoints and,
		// after "|", its InternalEndpoints when they differ.
		want    map[string]string
		skipped string
	}{{
		name:     "ready endpoints from every slice, once each, sorted",
		services: []*corev1.Service{svc("default/web", "10.96.0.10", ":80")},
		slices: []*discoveryv1.EndpointSlice{
			slice("default/web", "web-a", web, ep{"10.244.2.3@n2", ""}, ep{"10.244.1.2@n1", ""}, ep{"10.244.1.9@n1", "-"}),
			slice("default/web", "web-b", web, ep{"10.244.1.2@n1", ""}, ep{"10.244.3.4@n3", ""}),
		},
		want: map[string]string{"default/web/tcp/": "10.244.1.2:80 10.244.2.3:80 10.244.3.4:80"},
	}, {
		name:     "serving terminating endpoints only when none is ready",
		services: []*corev1.Service{svc("default/web", "10.96.0.10", ":80"), svc("default/api", "10.96.0.11", ":80")},
		slices: []*discoveryv1.EndpointSlice{
			slice("default/web", "web-a", web, ep{"10.244.1.2@n1", "t"}, ep{"10.244.1.3@n1", "-t"}, ep{"10.244.1.4@n1", "-"}),
			slice("default/api", "api-a", web, ep{"10.244.1.5@n1", "t"}, ep{"10.244.1.6@n1", ""}),
		},
		want: map[string]string{"default/web/tcp/": "10.244.1.2:80", "default/api/tcp/": "10.244.1.6:80"},
	}, {
		name:     "internalTrafficPolicy Local keeps this node's endpoints for ClusterIP traffic",
		services: []*corev1.Service{withLocal(svc("default/web", "10.96.0.10", ":80"))},
		slices:   []*discoveryv1.EndpointSlice{slice("default/web", "web-a", web, ep{"10.244.1.2@n1", ""}, ep{"10.244.2.3@n2", ""})},
		want:     map[string]string{"default/web/tcp/": "10.244.1.2:80 10.244.2.3:80|10.244.1.2:80"},
	}, {
		name:     "named ports and protocols match the slice's ports",
		services: []*corev1.Service{svc("default/dns", "10.96.0.53", "dns:53/UDP", "dns-tcp:53/TCP")},
		slices: []*discoveryv1.EndpointSlice{slice("default/dns", "dns-a", []string{"dns:5353/UDP", "dns-tcp:5354/TCP"},
			ep{"10.244.1.2@n1", ""})},
		want: map[string]string{"default/dns/udp/dns": "10.244.1.2:5353", "default/dns/tcp/dns-tcp": "10.244.1.2:5354"},
	}, {
		name: "headless, ExternalName and unallocated Services have nothing to proxy; IPv6 is reported",
		services: []*corev1.Service{
			svc("default/headless", "None", ":80"), svc("default/pending", "", ":80"),
			func() *corev1.Service { s := svc("default/ext", "", ":80"); s.Spec.Type = "ExternalName"; return s }(),
			svc("default/v6", "fd00::10", ":80"),
		},
		want:    map[string]string{},
		skipped: `default/v6: spec.clusterIP "fd00::10": not an IPv4 address`,
	}, {
		name:     "slices of other Services, without the label, or IPv6 are ignored",
		services: []*corev1.Service{svc("default/web", "10.96.0.10", ":80")},
		slices: []*discoveryv1.EndpointSlice{
			slice("other/web", "web-a", web, ep{"10.244.9.9@n1", ""}),
			func() *discoveryv1.EndpointSlice {
				s := slice("default/web", "web-b", web, ep{"10.244.9.8@n1", ""})
				delete(s.Metadata.Labels, LabelServiceName)
				return s
			}(),
			func() *discoveryv1.EndpointSlice {
				s := slice("default/web", "web-c", web, ep{"fd00::1@n1", ""})
				s.AddressType = "IPv6"
				return s
			}(),
		},
		want: map[string]string{"default/web/tcp/": ""},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap, skipped := BuildSnapshot(tc.services, tc.slices, "n1")
			got := map[string]string{}
			for _, p := range snap.Ports {
				s := joinEndpoints(p.Endpoints)
				if !slices.Equal(p.Endpoints, p.InternalEndpoints) {
					s += "|" + joinEndpoints(p.InternalEndpoints)
				}
				got[p.Name.String()] = s
			}
			if !mapsEqual(got, tc.want) {
				t.Errorf("endpoints:\n got %v\nwant %v", got, tc.want)
			}
			var sk []string
			for _, s := range skipped {
				sk = append(sk, s.String())
			}
			if all := strings.Join(sk, "; "); (tc.skipped == "") != (all == "") || !strings.Contains(all, tc.skipped) {
				t.Errorf("skipped %q, want %q", all, tc.skipped)
			}
		})
	}
}

func TestBuildSnapshotFields(t *testing.T) {
	s := withAffinity(svc("default/web", "10.96.0.10", "http:80/TCP:30080"), 0)
	s2 := withAffinity(svc("default/api", "10.96.0.11", ":80"), 60)
	snap, _ := BuildSnapshot([]*corev1.Service{s, s2}, nil, "n1")
	if len(snap.Ports) != 2 {
		t.Fatalf("ports %v", snap.Ports)
	}
	api, web := snap.Ports[0], snap.Ports[1] // sorted by name
	if web.NodePort != 30080 || web.Port != 80 || web.ClusterIP != netip.MustParseAddr("10.96.0.10") || web.Affinity != DefaultAffinityTimeout {
		t.Errorf("web: %+v", web)
	}
	if api.Affinity != 60*time.Second || api.NodePort != 0 {
		t.Errorf("api: %+v", api)
	}
	// A nodePort on a ClusterIP Service (left over from a type change) is not served.
	s3 := svc("default/web", "10.96.0.10", "http:80/TCP:30080")
	s3.Spec.Type = "ClusterIP"
	snap, _ = BuildSnapshot([]*corev1.Service{s3}, nil, "n1")
	if snap.Ports[0].NodePort != 0 {
		t.Errorf("nodePort of a ClusterIP Service served: %+v", snap.Ports[0])
	}
}

func joinEndpoints(eps []Endpoint) string {
	var s []string
	for _, e := range eps {
		s = append(s, e.Addr.String())
	}
	return strings.Join(s, " ")
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
