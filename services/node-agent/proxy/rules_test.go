package proxy

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
)

// Addresses of the rule tests: this node n1 (192.168.0.10, pods in
// 10.244.1.0/24), another node n2 (pods in 10.244.2.0/24).
const (
	nodeIP   = "192.168.0.10"
	localPod = "10.244.1.2"
	otherPod = "10.244.1.3"
	farPod   = "10.244.2.3"
	outsider = "203.0.113.5"
)

// applyTable writes the table of the Services and slices into fake, as
// one transaction over what the fake holds, and returns what was written.
func applyTable(t *testing.T, fake *knftables.Fake, services []*corev1.Service, slices []*discoveryv1.EndpointSlice) Written {
	t.Helper()
	snap, _ := BuildSnapshot(services, slices, "n1")
	snap.ClusterCIDR = netip.MustParsePrefix("10.244.0.0/16")
	snap.NodePortAddresses = []netip.Addr{netip.MustParseAddr(nodeIP)}
	ctx := context.Background()
	var ex Existing
	if fake.Table != nil {
		ex.Exists = true
		ex.Chains, _ = fake.List(ctx, "chains")
		ex.Sets, _ = fake.List(ctx, "sets")
	}
	tx := fake.NewTransaction()
	w := WriteTable(tx, snap, ex)
	if err := fake.Run(ctx, tx); err != nil {
		t.Fatalf("transaction refused: %v\n%s", err, tx)
	}
	return w
}

// TestRules checks what the rules do to the first packet of connections,
// traced through the table the fake holds.
func TestRules(t *testing.T) {
	web := []string{":8080"}
	twoEndpoints := slice("default/web", "web-a", web, ep{localPod + "@n1", ""}, ep{farPod + "@n2", ""})
	type probe struct {
		name, src, dst string
		proto          Protocol
		port           uint16
		fromNode       bool
		want           string
	}
	tests := []struct {
		name     string
		services []*corev1.Service
		slices   []*discoveryv1.EndpointSlice
		probes   []probe
	}{{
		name:     "ClusterIP",
		services: []*corev1.Service{svc("default/web", "10.96.0.10", ":8080")},
		slices:   []*discoveryv1.EndpointSlice{twoEndpoints},
		probes: []probe{
			{"pod to the ClusterIP: either endpoint, source kept", otherPod, "10.96.0.10", TCP, 8080, false, "[10.244.1.2:8080 10.244.2.3:8080]"},
			{"node process to the ClusterIP (output hook): masqueraded", nodeIP, "10.96.0.10", TCP, 8080, true, "[10.244.1.2:8080 masq 10.244.2.3:8080 masq]"},
			{"hairpin: an endpoint to its own Service is masqueraded when it lands on itself", localPod, "10.96.0.10", TCP, 8080, false, "[10.244.1.2:8080 masq 10.244.2.3:8080]"},
			// Not a service port: leaves as any traffic out of the cluster CIDR.
			{"another port of the ClusterIP is not the Service's", otherPod, "10.96.0.10", TCP, 8081, false, "[no-dnat masq]"},
			{"UDP to a TCP port is not the Service's", otherPod, "10.96.0.10", UDP, 8080, false, "[no-dnat masq]"},
			{"pod to a pod: untouched", otherPod, farPod, TCP, 8080, false, "[no-dnat]"},
			{"pod leaving the cluster CIDR: masqueraded", otherPod, "198.51.100.7", TCP, 443, false, "[no-dnat masq]"},
		},
	}, {
		name:     "NodePort",
		services: []*corev1.Service{svc("default/web", "10.96.0.10", ":8080/TCP:30080")},
		slices:   []*discoveryv1.EndpointSlice{twoEndpoints},
		probes: []probe{
			{"from outside to the node address", outsider, nodeIP, TCP, 30080, false, "[10.244.1.2:8080 masq 10.244.2.3:8080 masq]"},
			{"from a pod to the node address", otherPod, nodeIP, TCP, 30080, false, "[10.244.1.2:8080 masq 10.244.2.3:8080 masq]"},
			{"another address at the NodePort", outsider, "192.168.0.99", TCP, 30080, false, "[no-dnat]"},
			{"the ClusterIP still works", otherPod, "10.96.0.10", TCP, 8080, false, "[10.244.1.2:8080 10.244.2.3:8080]"},
		},
	}, {
		name:     "no endpoints: rejected",
		services: []*corev1.Service{svc("default/web", "10.96.0.10", ":8080/TCP:30080")},
		slices:   []*discoveryv1.EndpointSlice{slice("default/web", "web-a", web, ep{localPod + "@n1", "-"})},
		probes: []probe{
			{"ClusterIP from a pod", otherPod, "10.96.0.10", TCP, 8080, false, "[reject]"},
			{"ClusterIP from the node", nodeIP, "10.96.0.10", TCP, 8080, true, "[reject]"},
			{"NodePort from outside", outsider, nodeIP, TCP, 30080, false, "[reject]"},
		},
	}, {
		name:     "internalTrafficPolicy Local",
		services: []*corev1.Service{withLocal(svc("default/web", "10.96.0.10", ":8080/TCP:30080")), withLocal(svc("default/far", "10.96.0.11", ":8080"))},
		slices:   []*discoveryv1.EndpointSlice{twoEndpoints, slice("default/far", "far-a", web, ep{farPod + "@n2", ""})},
		probes: []probe{
			{"ClusterIP: this node's endpoint only", otherPod, "10.96.0.10", TCP, 8080, false, "[10.244.1.2:8080]"},
			{"NodePort: every endpoint", outsider, nodeIP, TCP, 30080, false, "[10.244.1.2:8080 masq 10.244.2.3:8080 masq]"},
			{"none here, some elsewhere: dropped", otherPod, "10.96.0.11", TCP, 8080, false, "[drop]"},
		},
	}, {
		name:     "UDP",
		services: []*corev1.Service{svc("kube-system/dns", "10.96.0.53", "dns:53/UDP")},
		slices:   []*discoveryv1.EndpointSlice{slice("kube-system/dns", "dns-a", []string{"dns:5353/UDP"}, ep{localPod + "@n1", ""})},
		probes: []probe{
			{"UDP to the ClusterIP", otherPod, "10.96.0.53", UDP, 53, false, "[10.244.1.2:5353]"},
			{"TCP to the same port", otherPod, "10.96.0.53", TCP, 53, false, "[no-dnat masq]"},
		},
	}, {
		name:     "multiple ports",
		services: []*corev1.Service{svc("default/web", "10.96.0.10", "http:80", "https:443")},
		slices: []*discoveryv1.EndpointSlice{slice("default/web", "web-a", []string{"http:8080", "https:8443"},
			ep{localPod + "@n1", ""}, ep{farPod + "@n2", ""})},
		probes: []probe{
			{"http", otherPod, "10.96.0.10", TCP, 80, false, "[10.244.1.2:8080 10.244.2.3:8080]"},
			{"https", otherPod, "10.96.0.10", TCP, 443, false, "[10.244.1.2:8443 10.244.2.3:8443]"},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := knftables.NewFake(knftables.IPv4Family, TableName)
			applyTable(t, fake, tc.services, tc.slices)
			tr := newTracer(t, fake, nodeIP, "10.244.1.1")
			for _, p := range tc.probes {
				if got := dnats(tr.trace(p.src, p.dst, p.proto, p.port, p.fromNode)); got != p.want {
					t.Errorf("%s: %s -> %s:%d/%s: %s, want %s", p.name, p.src, p.dst, p.port, p.proto, got, p.want)
				}
			}
			// A second sync over the first changes nothing.
			before := fake.Dump()
			applyTable(t, fake, tc.services, tc.slices)
			if after := fake.Dump(); after != before {
				t.Errorf("a second sync changed the table:\n%s\nthen\n%s", before, after)
			}
		})
	}
}

// TestRulesAffinity: the first packet adds the client to the affinity set
// of the endpoint it reaches; later ones from that client go there only.
func TestRulesAffinity(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, TableName)
	applyTable(t, fake, []*corev1.Service{withAffinity(svc("default/web", "10.96.0.10", ":8080"), 60)},
		[]*discoveryv1.EndpointSlice{slice("default/web", "web-a", []string{":8080"}, ep{localPod + "@n1", ""}, ep{farPod + "@n2", ""})})
	tr := newTracer(t, fake, nodeIP)
	first := tr.trace(otherPod, "10.96.0.10", TCP, 8080, false)
	if len(first) != 2 {
		t.Fatalf("first packet: %v, want one outcome per endpoint", first)
	}
	for _, o := range first {
		if len(o.updates) != 1 {
			t.Fatalf("%v adds the client to %v, want one affinity set", o, o.updates)
		}
		set := fake.Table.Sets[o.updates[0]]
		if set == nil || set.Timeout == nil || set.Timeout.Seconds() != 60 {
			t.Fatalf("affinity set %s: %+v, want a 60 s timeout", o.updates[0], set)
		}
		tr.affinity = map[string]bool{o.updates[0]: true}
		again := tr.trace(otherPod, "10.96.0.10", TCP, 8080, false)
		if len(again) != 1 || again[0].dnat != o.dnat {
			t.Errorf("with affinity to %s: %v, want only it", o.dnat, again)
		}
	}
}

// TestRulesRemovedService: a Service's chains and map elements go with it;
// another Service's stay; its affinity sets are deleted at once.
func TestRulesRemovedService(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, TableName)
	web := withAffinity(svc("default/web", "10.96.0.10", ":8080/TCP:30080"), 0)
	api := svc("default/api", "10.96.0.11", ":8080")
	slices := []*discoveryv1.EndpointSlice{
		slice("default/web", "web-a", []string{":8080"}, ep{localPod + "@n1", ""}),
		slice("default/api", "api-a", []string{":8080"}, ep{farPod + "@n2", ""}),
	}
	first := applyTable(t, fake, []*corev1.Service{web, api}, slices)
	second := applyTable(t, fake, []*corev1.Service{api}, slices)
	var webChains []string
	for c := range first.Chains {
		if strings.Contains(c, "default/web/") {
			webChains = append(webChains, c)
		}
	}
	if len(webChains) != 2 { // service, endpoint (affinity)
		t.Fatalf("web's chains %v, want 2", webChains)
	}
	for _, c := range webChains {
		if second.Chains[c] {
			t.Errorf("chain %s still in use", c)
		}
		if ch := fake.Table.Chains[c]; ch == nil || len(ch.Rules) != 0 {
			t.Errorf("chain %s: %+v, want flushed (deleted by a later transaction)", c, ch)
		}
	}
	if len(second.Stale) != 2 {
		t.Errorf("stale chains %v, want web's 2", second.Stale)
	}
	for s := range fake.Table.Sets {
		if strings.HasPrefix(s, affinitySetPrefix) {
			t.Errorf("affinity set %s left", s)
		}
	}
	tr := newTracer(t, fake, nodeIP)
	if got := dnats(tr.trace(otherPod, "10.96.0.10", TCP, 8080, false)); got != "[no-dnat masq]" {
		t.Errorf("removed ClusterIP: %s", got)
	}
	if got := dnats(tr.trace(outsider, nodeIP, TCP, 30080, false)); got != "[no-dnat]" {
		t.Errorf("removed NodePort: %s", got)
	}
	if got := dnats(tr.trace(otherPod, "10.96.0.11", TCP, 8080, false)); got != "[10.244.2.3:8080]" {
		t.Errorf("the other Service: %s", got)
	}
	// The deletion the Proxier does a second later succeeds: nothing
	// refers to the chains any more.
	tx := fake.NewTransaction()
	for _, c := range second.Stale {
		tx.Delete(&knftables.Chain{Name: c})
	}
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatalf("deleting the stale chains: %v", err)
	}
}

// TestRulesEveryLocalAddress: without NodePortAddresses a NodePort answers
// on every local address but loopback.
func TestRulesEveryLocalAddress(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, TableName)
	snap, _ := BuildSnapshot([]*corev1.Service{svc("default/web", "10.96.0.10", ":8080/TCP:30080")},
		[]*discoveryv1.EndpointSlice{slice("default/web", "web-a", []string{":8080"}, ep{localPod + "@n1", ""})}, "n1")
	tx := fake.NewTransaction()
	WriteTable(tx, snap, Existing{})
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	tr := newTracer(t, fake, nodeIP, "172.17.0.2")
	for _, dst := range []string{nodeIP, "172.17.0.2"} {
		if got := dnats(tr.trace(outsider, dst, TCP, 30080, false)); got != "[10.244.1.2:8080 masq]" {
			t.Errorf("NodePort on %s: %s", dst, got)
		}
	}
	// Without a cluster CIDR, a pod's egress is left alone.
	if got := dnats(tr.trace(otherPod, "198.51.100.7", TCP, 443, false)); got != "[no-dnat]" {
		t.Errorf("egress without a cluster CIDR: %s", got)
	}
}

// TestRulesAffinityTimeoutChange: a changed affinity timeout is applied.
// Re-adding a set with another timeout does not change it in the Fake
// (nor, as far as we know, on kernels before the set updates of 2023);
// the timeout is part of the set's name, so the new timeout makes new
// sets and the old ones are deleted.
func TestRulesAffinityTimeoutChange(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, TableName)
	eps := []*discoveryv1.EndpointSlice{slice("default/web", "web-a", []string{":8080"}, ep{localPod + "@n1", ""}, ep{farPod + "@n2", ""})}
	applyTable(t, fake, []*corev1.Service{withAffinity(svc("default/web", "10.96.0.10", ":8080"), 60)}, eps)
	applyTable(t, fake, []*corev1.Service{withAffinity(svc("default/web", "10.96.0.10", ":8080"), 120)}, eps)
	var sets []string
	for name, set := range fake.Table.Sets {
		if !strings.HasPrefix(name, affinitySetPrefix) {
			continue
		}
		sets = append(sets, name)
		if set.Timeout == nil || set.Timeout.Seconds() != 120 {
			t.Errorf("affinity set %s: timeout %v, want 120 s", name, set.Timeout)
		}
	}
	if len(sets) != 2 {
		t.Errorf("affinity sets %v, want one per endpoint", sets)
	}
	tr := newTracer(t, fake, nodeIP)
	for _, o := range tr.trace(otherPod, "10.96.0.10", TCP, 8080, false) {
		if len(o.updates) != 1 || fake.Table.Sets[o.updates[0]] == nil {
			t.Errorf("%v adds the client to %v, want one existing affinity set", o, o.updates)
		}
	}
}

// TestRulesUnchangedChains: with what the chains hold known, a sync
// rewrites only the chains whose rules change, and the table is the one a
// sync from nothing writes.
func TestRulesUnchangedChains(t *testing.T) {
	services := []*corev1.Service{svc("default/web", "10.96.0.10", ":8080/TCP:30080"), withAffinity(svc("default/api", "10.96.0.11", ":8080"), 60)}
	before := []*discoveryv1.EndpointSlice{
		slice("default/web", "web-a", []string{":8080"}, ep{localPod + "@n1", ""}),
		slice("default/api", "api-a", []string{":8080"}, ep{farPod + "@n2", ""}),
	}
	after := []*discoveryv1.EndpointSlice{
		slice("default/web", "web-a", []string{":8080"}, ep{localPod + "@n1", ""}, ep{otherPod + "@n1", ""}),
		before[1],
	}
	ctx := context.Background()
	write := func(fake *knftables.Fake, slices []*discoveryv1.EndpointSlice, ex Existing) Written {
		t.Helper()
		snap, _ := BuildSnapshot(services, slices, "n1")
		snap.ClusterCIDR = netip.MustParsePrefix("10.244.0.0/16")
		tx := fake.NewTransaction()
		w := WriteTable(tx, snap, ex)
		if err := fake.Run(ctx, tx); err != nil {
			t.Fatalf("transaction refused: %v\n%s", err, tx)
		}
		return w
	}
	fake := knftables.NewFake(knftables.IPv4Family, TableName)
	first := write(fake, before, Existing{})
	second := write(fake, after, Existing{Exists: true, Content: first.Content})
	// api's service chain and endpoint chain are left alone; web's
	// service chain is rewritten.
	if second.Unchanged != 2 {
		t.Errorf("%d chains left as they were, want api's 2", second.Unchanged)
	}
	fresh := knftables.NewFake(knftables.IPv4Family, TableName)
	write(fresh, after, Existing{})
	if got, want := fake.Dump(), fresh.Dump(); got != want {
		t.Errorf("the table after a partial rewrite:\n%s\nwritten from nothing:\n%s", got, want)
	}
	tr := newTracer(t, fake, nodeIP)
	if got := dnats(tr.trace(farPod, "10.96.0.10", TCP, 8080, false)); got != "[10.244.1.2:8080 10.244.1.3:8080]" {
		t.Errorf("web after the change: %s", got)
	}
	// A chain someone else emptied is not repaired unless Content is
	// left out (the Proxier's periodic sync).
	tx := fake.NewTransaction()
	for c := range second.Chains {
		tx.Flush(&knftables.Chain{Name: c})
	}
	if err := fake.Run(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if w := write(fake, after, Existing{Exists: true}); w.Unchanged != 0 {
		t.Errorf("without Content, %d chains left as they were", w.Unchanged)
	}
	if got, want := fake.Dump(), fresh.Dump(); got != want {
		t.Errorf("the table after a full rewrite:\n%s\nwritten from nothing:\n%s", got, want)
	}
}
