package network

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	corev1 "skiff.dev/proto/core/v1"
)

// RouteProtocol marks the routes the agent installs (the rtm_protocol of
// a route: "proto 83" in `ip route`): the routes it lists as its own, and
// the only ones it ever deletes.
const RouteProtocol = 83

// Route is a route to a pod subnet through a node's address.
type Route struct {
	Dst netip.Prefix // a node's pod subnet
	Via netip.Addr   // that node's InternalIP, or its VXLAN gateway (vxlan.go)
	// Dev is the device of an overlay route, whose Via is reached on the
	// device without an address of its subnet there ("onlink"); "" for a
	// route through a neighbour's address on whichever device has it.
	Dev string
}

func (r Route) String() string {
	if r.Dev != "" {
		return r.Dst.String() + " via " + r.Via.String() + " dev " + r.Dev + " onlink"
	}
	return r.Dst.String() + " via " + r.Via.String()
}

// A Router reads and changes the routes the agent installed in the main
// routing table.
type Router interface {
	// List returns the routes marked RouteProtocol in the main table.
	List(ctx context.Context) ([]Route, error)
	// Replace installs r, marked RouteProtocol, replacing any route to
	// r.Dst.
	Replace(ctx context.Context, r Route) error
	// Delete removes r.
	Delete(ctx context.Context, r Route) error
}

// DesiredRoutes are the routes a node named self needs: for every other
// node, a route from each of its pod subnets (spec.podCIDRs, or podCIDR)
// inside cluster to its InternalIP of the same family. Subnets that
// overlap self's own (its pods are local, on the bridge) or an earlier
// node's (by name) are left out, with the reason in skipped, as are nodes
// without an address to route through.
func DesiredRoutes(nodes []*corev1.Node, self string, cluster netip.Prefix) (routes []Route, skipped []string) {
	peers, skipped := peerSubnets(nodes, self, cluster)
	for _, p := range peers {
		routes = append(routes, Route{Dst: p.subnet, Via: p.internalIP})
	}
	return routes, skipped
}

// peerSubnet is another node's pod subnet to reach, and its InternalIP of
// the subnet's family.
type peerSubnet struct {
	node       *corev1.Node
	subnet     netip.Prefix
	internalIP netip.Addr
}

// peerSubnets are the other nodes' pod subnets self reaches, in address
// order, with the ones left out and why; see DesiredRoutes.
func peerSubnets(nodes []*corev1.Node, self string, cluster netip.Prefix) (peers []peerSubnet, skipped []string) {
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b *corev1.Node) int {
		return cmp.Compare(a.GetMetadata().GetName(), b.GetMetadata().GetName())
	})
	var own []netip.Prefix
	for _, n := range nodes {
		if n.GetMetadata().GetName() == self {
			own, _ = PodCIDRs(n)
		}
	}
	taken := map[netip.Prefix]string{}
	for _, n := range nodes {
		name := n.GetMetadata().GetName()
		if name == self {
			continue
		}
		cidrs, err := PodCIDRs(n)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("node %s: %v", name, err))
			continue
		}
	cidr:
		for _, dst := range cidrs {
			if !inside(dst, cluster) {
				if dst.Addr().Is4() == cluster.Addr().Is4() { // the other family is not ours to route
					skipped = append(skipped, fmt.Sprintf("node %s: pod CIDR %s outside the cluster CIDR %s", name, dst, cluster))
				}
				continue
			}
			for _, o := range own {
				if o.Overlaps(dst) {
					skipped = append(skipped, fmt.Sprintf("node %s: pod CIDR %s overlaps this node's %s", name, dst, o))
					continue cidr
				}
			}
			for p, owner := range taken {
				if p.Overlaps(dst) {
					skipped = append(skipped, fmt.Sprintf("node %s: pod CIDR %s overlaps node %s's %s", name, dst, owner, p))
					continue cidr
				}
			}
			via, ok := internalIP(n, dst.Addr().Is4())
			if !ok {
				skipped = append(skipped, fmt.Sprintf("node %s: no InternalIP address for its pod CIDR %s", name, dst))
				continue
			}
			taken[dst] = name
			peers = append(peers, peerSubnet{node: n, subnet: dst, internalIP: via})
		}
	}
	slices.SortFunc(peers, func(a, b peerSubnet) int { return a.subnet.Addr().Compare(b.subnet.Addr()) })
	return peers, skipped
}

// PodCIDRs are a node's pod subnets: spec.podCIDRs, or spec.podCIDR.
func PodCIDRs(n *corev1.Node) ([]netip.Prefix, error) {
	list := n.GetSpec().GetPodCidrs()
	if len(list) == 0 && n.GetSpec().GetPodCidr() != "" {
		list = []string{n.GetSpec().GetPodCidr()}
	}
	var out []netip.Prefix
	for _, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("pod CIDR %q: %v", s, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// internalIP is the node's first InternalIP of the family.
func internalIP(n *corev1.Node, is4 bool) (netip.Addr, bool) {
	for _, a := range n.GetStatus().GetAddresses() {
		if a.GetType() != "InternalIP" {
			continue
		}
		ip, err := netip.ParseAddr(a.GetAddress())
		if err == nil && ip.Unmap().Is4() == is4 {
			return ip.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// Plan is what turns the routes current into desired, among those inside
// cluster: the routes to install (new, or through another address or
// device) and the ones to delete. Routes outside cluster are never
// touched.
func Plan(desired, current []Route, cluster netip.Prefix) (replace, remove []Route) {
	in := func(r Route) bool { return inside(r.Dst, cluster) }
	return planBy(slices.DeleteFunc(slices.Clone(desired), not(in)), slices.DeleteFunc(slices.Clone(current), not(in)),
		func(r Route) netip.Prefix { return r.Dst })
}

// planBy is what turns the entries current into desired, entries being
// keyed by key (one entry per key is wanted): the desired entries to
// install, replacing any of their key, where current has not exactly
// them, and the current entries to delete, whose key is not wanted. The
// deletions go first: an install replaces what it replaces, a deletion
// deletes what it names.
func planBy[T comparable, K comparable](desired, current []T, key func(T) K) (replace, remove []T) {
	have := map[K][]T{}
	for _, c := range current {
		have[key(c)] = append(have[key(c)], c)
	}
	want := map[K]bool{}
	for _, d := range desired {
		want[key(d)] = true
		if h := have[key(d)]; len(h) != 1 || h[0] != d {
			replace = append(replace, d)
		}
	}
	for _, c := range current {
		if !want[key(c)] {
			remove = append(remove, c)
		}
	}
	return replace, remove
}

func not[T any](f func(T) bool) func(T) bool { return func(x T) bool { return !f(x) } }

func inside(p, cluster netip.Prefix) bool {
	return p.Addr().Is4() == cluster.Addr().Is4() && p.Bits() >= cluster.Bits() && cluster.Contains(p.Addr())
}

// MemoryRouter is a Router over a routing table in memory, for tests and
// simulated nodes. The zero value is empty and ready.
type MemoryRouter struct {
	mu     sync.Mutex
	routes map[netip.Prefix]Route
	// Fail, when set, is asked before each change and fails it with its
	// error.
	Fail func(op string, r Route) error
}

// List implements Router.
func (m *MemoryRouter) List(context.Context) ([]Route, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Route, 0, len(m.routes))
	for _, r := range m.routes {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Route) int { return a.Dst.Addr().Compare(b.Dst.Addr()) })
	return out, nil
}

// Replace implements Router.
func (m *MemoryRouter) Replace(_ context.Context, r Route) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.failLocked("replace", r); err != nil {
		return err
	}
	if m.routes == nil {
		m.routes = map[netip.Prefix]Route{}
	}
	m.routes[r.Dst] = r
	return nil
}

// Delete implements Router.
func (m *MemoryRouter) Delete(_ context.Context, r Route) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.failLocked("delete", r); err != nil {
		return err
	}
	if have, ok := m.routes[r.Dst]; !ok || have != r {
		return fmt.Errorf("delete route %s: no such route", r)
	}
	delete(m.routes, r.Dst)
	return nil
}

func (m *MemoryRouter) failLocked(op string, r Route) error {
	if m.Fail == nil {
		return nil
	}
	return m.Fail(op, r)
}
