package network

import (
	"context"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// node is a Node with pod CIDRs and addresses ("type=address").
func node(name string, podCIDRs []string, addrs ...string) *corev1.Node {
	n := &corev1.Node{Metadata: &metav1.ObjectMeta{Name: name}, Spec: &corev1.NodeSpec{}, Status: &corev1.NodeStatus{}}
	if len(podCIDRs) > 0 {
		n.Spec.PodCidr, n.Spec.PodCidrs = podCIDRs[0], podCIDRs
	}
	for _, a := range addrs {
		typ, addr, _ := strings.Cut(a, "=")
		n.Status.Addresses = append(n.Status.Addresses, &corev1.NodeAddress{Type: typ, Address: addr})
	}
	return n
}

func route(dst, via string) Route {
	return Route{Dst: netip.MustParsePrefix(dst), Via: netip.MustParseAddr(via)}
}

var cluster = netip.MustParsePrefix("10.244.0.0/16")

func TestDesiredRoutes(t *testing.T) {
	nodes := []*corev1.Node{
		node("self", []string{"10.244.1.0/24"}, "InternalIP=172.18.0.2"),
		node("b", []string{"10.244.2.0/24"}, "Hostname=b", "InternalIP=172.18.0.3"),
		node("a", []string{"10.244.3.0/24", "fd00::/64"}, "InternalIP=fd00:1::3", "InternalIP=172.18.0.4"),
		node("no-cidr", nil, "InternalIP=172.18.0.5"),
		node("no-ip", []string{"10.244.4.0/24"}, "Hostname=no-ip"),
		node("outside", []string{"192.168.1.0/24"}, "InternalIP=172.18.0.6"),
		node("like-self", []string{"10.244.1.128/25"}, "InternalIP=172.18.0.7"),
		node("like-b", []string{"10.244.2.0/24"}, "InternalIP=172.18.0.8"),
		node("bad", []string{"nonsense"}, "InternalIP=172.18.0.9"),
	}
	got, skipped := DesiredRoutes(nodes, "self", cluster)
	want := []Route{route("10.244.2.0/24", "172.18.0.3"), route("10.244.3.0/24", "172.18.0.4")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("routes %v, want %v", got, want)
	}
	all := strings.Join(skipped, "\n")
	for _, s := range []string{
		"node no-ip: no InternalIP address for its pod CIDR 10.244.4.0/24",
		"node outside: pod CIDR 192.168.1.0/24 outside the cluster CIDR 10.244.0.0/16",
		"node like-self: pod CIDR 10.244.1.128/25 overlaps this node's 10.244.1.0/24",
		"node like-b: pod CIDR 10.244.2.0/24 overlaps node b's 10.244.2.0/24",
		`node bad: pod CIDR "nonsense"`,
	} {
		if !strings.Contains(all, s) {
			t.Errorf("skipped lacks %q:\n%s", s, all)
		}
	}
	if strings.Contains(all, "fd00::/64") || strings.Contains(all, "no-cidr") {
		t.Errorf("skipped mentions the other family or a node without pod CIDR:\n%s", all)
	}
}

func TestPlan(t *testing.T) {
	desired := []Route{
		route("10.244.2.0/24", "172.18.0.3"), // in place
		route("10.244.3.0/24", "172.18.0.9"), // moved
		route("10.244.4.0/24", "172.18.0.5"), // new
	}
	current := []Route{
		route("10.244.2.0/24", "172.18.0.3"),
		route("10.244.3.0/24", "172.18.0.4"),
		route("10.244.7.0/24", "172.18.0.7"), // node gone
		route("10.99.0.0/24", "172.18.0.8"),  // outside the cluster CIDR: not ours to judge
	}
	replace, remove := Plan(desired, current, cluster)
	if want := []Route{route("10.244.3.0/24", "172.18.0.9"), route("10.244.4.0/24", "172.18.0.5")}; !reflect.DeepEqual(replace, want) {
		t.Errorf("replace %v, want %v", replace, want)
	}
	if want := []Route{route("10.244.7.0/24", "172.18.0.7")}; !reflect.DeepEqual(remove, want) {
		t.Errorf("remove %v, want %v", remove, want)
	}
	if r, d := Plan(desired, nil, netip.MustParsePrefix("10.0.0.0/16")); r != nil || d != nil {
		t.Errorf("desired routes outside the cluster CIDR planned: %v, %v", r, d)
	}
}

func TestMemoryRouter(t *testing.T) {
	ctx := context.Background()
	var r MemoryRouter
	if err := r.Replace(ctx, route("10.244.2.0/24", "172.18.0.3")); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, route("10.244.2.0/24", "172.18.0.4")); err == nil {
		t.Error("deleting a route through another address succeeded")
	}
	if err := r.Delete(ctx, route("10.244.2.0/24", "172.18.0.3")); err != nil {
		t.Error(err)
	}
	if l, _ := r.List(ctx); len(l) != 0 {
		t.Errorf("after delete: %v", l)
	}
}
