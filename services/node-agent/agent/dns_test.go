package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestReadResolvConf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(path, []byte("# generated\nnameserver 192.0.2.53 # primary\nnameserver 192.0.2.54\nsearch corp.example.com example.com\noptions edns0 timeout:2\n; junk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := readResolvConf(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(h.nameservers, " ") != "192.0.2.53 192.0.2.54" || strings.Join(h.searches, " ") != "corp.example.com example.com" || strings.Join(h.options, " ") != "edns0 timeout:2" {
		t.Fatalf("parsed %+v", h)
	}
	if h, err := readResolvConf(filepath.Join(t.TempDir(), "missing")); err != nil || len(h.nameservers) != 0 {
		t.Fatalf("a missing file: %+v, %v", h, err)
	}
}

// TestPodDNSConfig: the resolv.conf of each dnsPolicy, as the kubelet
// writes it.
func TestPodDNSConfig(t *testing.T) {
	host := hostDNS{nameservers: []string{"192.0.2.53"}, searches: []string{"corp.example.com"}, options: []string{"edns0"}}
	pod := func(policy string, hostNet bool, cfg *corev1.PodDNSConfig) *corev1.Pod {
		return &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "shop", Name: "web"},
			Spec: &corev1.PodSpec{DnsPolicy: policy, HostNetwork: hostNet, DnsConfig: cfg}}
	}
	cluster := []string{"169.254.20.10"}
	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		clusterDNS []string
		want       *runtimeapi.DNSConfig
	}{
		{"ClusterFirst", pod("ClusterFirst", false, nil), cluster, &runtimeapi.DNSConfig{Servers: cluster,
			Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example.com"}, Options: []string{"ndots:5"}}},
		{"ClusterFirst on the host network is Default", pod("ClusterFirst", true, nil), cluster, nil},
		{"ClusterFirstWithHostNet", pod("ClusterFirstWithHostNet", true, nil), cluster, &runtimeapi.DNSConfig{Servers: cluster,
			Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example.com"}, Options: []string{"ndots:5"}}},
		{"ClusterFirst without a cluster DNS is Default", pod("ClusterFirst", false, nil), nil, nil},
		{"Default", pod("Default", false, nil), cluster, nil},
		{"Default with dnsConfig", pod("Default", false, &corev1.PodDNSConfig{Searches: []string{"extra.example"}}), cluster,
			&runtimeapi.DNSConfig{Servers: []string{"192.0.2.53"}, Searches: []string{"corp.example.com", "extra.example"}, Options: []string{"edns0"}}},
		{"None", pod("None", false, &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.99"}, Options: []*corev1.PodDNSConfigOption{{Name: "ndots", Value: proto.String("2")}}}), cluster,
			&runtimeapi.DNSConfig{Servers: []string{"192.0.2.99"}, Options: []string{"ndots:2"}}},
		{"ClusterFirst with dnsConfig", pod("ClusterFirst", false, &corev1.PodDNSConfig{
			Nameservers: []string{"169.254.20.10", "192.0.2.1", "192.0.2.2", "192.0.2.3"}, Searches: []string{"svc.cluster.local", "x.example"},
			Options: []*corev1.PodDNSConfigOption{{Name: "ndots", Value: proto.String("1")}, {Name: "single-request"}}}), cluster,
			&runtimeapi.DNSConfig{Servers: []string{"169.254.20.10", "192.0.2.1", "192.0.2.2"},
				Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example.com", "x.example"}, Options: []string{"ndots:1", "single-request"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := dnsConfig(tc.pod, tc.clusterDNS, "", host)
			if !proto.Equal(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}
