package network

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"

	corev1 "skiff.dev/proto/core/v1"
)

// Backend is how the other nodes' pod subnets are reached.
type Backend string

// The backends (--pod-network-backend).
const (
	// BackendRoutes routes each subnet through its node's InternalIP: the
	// nodes must share an L2 segment (routes.go).
	BackendRoutes Backend = "routes"
	// BackendVXLAN routes each subnet through a VXLAN device to its node,
	// in UDP packets between the InternalIPs, as flannel's vxlan backend
	// does: the nodes need only reach each other over IP (vxlan.go).
	BackendVXLAN Backend = "vxlan"
)

// ParseBackend reads a backend's name.
func ParseBackend(s string) (Backend, error) {
	switch b := Backend(s); b {
	case BackendRoutes, BackendVXLAN:
		return b, nil
	}
	return "", fmt.Errorf("pod network backend %q: want %s or %s", s, BackendRoutes, BackendVXLAN)
}

// The VXLAN backend's fixed settings and defaults.
const (
	// VXLANDevice is the VXLAN device's name (at most IFNAMSIZ-1 = 15
	// bytes). Flannel's is flannel.<VNI>.
	VXLANDevice = "skiff.vxlan"
	// AnnVTEPMAC is the Node annotation holding the MAC address of its
	// VXLAN device (its VTEP), which the other nodes put in their FDB and
	// neighbour entries. Flannel's is flannel.alpha.coreos.com/backend-data.
	AnnVTEPMAC = "skiff.dev/vxlan-vtep-mac"
	// DefaultVNI and DefaultVXLANPort are flannel's defaults on Linux
	// (8472, the kernel's historical port, not IANA's 4789).
	DefaultVNI       = 1
	DefaultVXLANPort = 8472
	// VXLANOverhead is what encapsulation adds to a packet (IPv4 20, UDP
	// 8, VXLAN 8, inner Ethernet 14): the device's MTU is the underlying
	// device's less this.
	VXLANOverhead = 50
)

// VXLAN configures the VXLAN backend. Zero fields take the defaults.
type VXLAN struct {
	VNI  int // the VXLAN network identifier (DefaultVNI), the same on every node
	Port int // the UDP port (DefaultVXLANPort), the same on every node
}

func (v VXLAN) withDefaults() VXLAN {
	if v.VNI == 0 {
		v.VNI = DefaultVNI
	}
	if v.Port == 0 {
		v.Port = DefaultVXLANPort
	}
	return v
}

// Device is a node's VXLAN device as wanted.
type Device struct {
	Name string
	VNI  int
	Port int
	// Local is the node's InternalIP: the packets' source, and the address
	// whose device carries them (its MTU less VXLANOverhead is this one's).
	Local netip.Addr
	// Addr is the first address of the node's pod subnet, as a host
	// prefix (10.244.1.0/32): the source of packets the node itself sends
	// to other nodes' pods, and the gateway other nodes route its subnet
	// through.
	Addr netip.Prefix
}

func (d Device) String() string {
	return fmt.Sprintf("%s (vni %d, port %d, local %s, address %s)", d.Name, d.VNI, d.Port, d.Local, d.Addr)
}

// Table is one of the VXLAN device's tables of entries.
type Table string

// The tables.
const (
	// FDB maps a node's VTEP MAC to its InternalIP: where the device
	// sends frames for that MAC (`bridge fdb`).
	FDB Table = "fdb"
	// Neighbors maps a node's gateway address to its VTEP MAC, permanent
	// (`ip neigh ... nud permanent`): no ARP crosses the overlay.
	Neighbors Table = "neighbor"
)

// Entry is an FDB entry (MAC -> IP, the VTEP's underlay address) or a
// neighbour entry (IP, the gateway, -> MAC).
type Entry struct {
	IP  netip.Addr
	MAC string // net.HardwareAddr.String(): lower case, colons
}

func (e Entry) String() string { return e.MAC + " " + e.IP.String() }

// Overlay reads and changes the VXLAN device and its FDB and neighbour
// entries, the kernel side of the VXLAN backend beside the Router (which
// installs its routes).
type Overlay interface {
	// Ensure creates the device d describes, or brings an existing one in
	// line with it (recreating it when what cannot change differs), with
	// Addr its only address, and up; it returns the device's MAC and MTU.
	Ensure(ctx context.Context, d Device) (mac string, mtu int, err error)
	// List returns the device's entries in t: the FDB's with a
	// destination, the permanent neighbours.
	List(ctx context.Context, t Table) ([]Entry, error)
	// Replace installs e in t, replacing the entry of its MAC (FDB) or IP
	// (neighbours).
	Replace(ctx context.Context, t Table, e Entry) error
	// Delete removes e from t.
	Delete(ctx context.Context, t Table, e Entry) error
}

// VXLANState is what a node's VXLAN backend wants in the kernel.
type VXLANState struct {
	// Device is the node's VXLAN device; zero until the node has a pod
	// subnet inside the cluster CIDR and an InternalIP of its family.
	Device Device
	// Routes are the other nodes' pod subnets via their gateways (the
	// first address of each), on the device, onlink.
	Routes []Route
	// FDB sends each other node's VTEP MAC to its InternalIP.
	FDB []Entry
	// Neighbors resolve each gateway to its node's VTEP MAC.
	Neighbors []Entry
}

// DesiredVXLAN is what the VXLAN backend of the node named self needs,
// for the other nodes as DesiredRoutes chooses them: for each of their pod
// subnets of the device's family, the route through its gateway, the
// gateway's neighbour entry and the FDB entry of its node's VTEP MAC
// (annotation AnnVTEPMAC). Nodes without one are left out, with the reason
// in skipped, as is everything while self has no device.
func DesiredVXLAN(nodes []*corev1.Node, self string, cluster netip.Prefix, opts VXLAN) (want VXLANState, skipped []string) {
	opts = opts.withDefaults()
	for _, n := range nodes {
		if n.GetMetadata().GetName() != self {
			continue
		}
		cidrs, _ := PodCIDRs(n)
		local, ok := internalIP(n, cluster.Addr().Is4())
		for _, c := range cidrs {
			if ok && inside(c, cluster) {
				want.Device = Device{Name: VXLANDevice, VNI: opts.VNI, Port: opts.Port, Local: local, Addr: netip.PrefixFrom(c.Addr(), c.Addr().BitLen())}
				break
			}
		}
	}
	if !want.Device.Local.IsValid() {
		return want, []string{fmt.Sprintf("node %s: no VXLAN device without a pod CIDR inside %s and an InternalIP of its family", self, cluster)}
	}
	peers, skipped := peerSubnets(nodes, self, cluster)
	for _, p := range peers {
		name := p.node.GetMetadata().GetName()
		s := p.node.GetMetadata().GetAnnotations()[AnnVTEPMAC]
		mac, err := net.ParseMAC(s)
		switch {
		case s == "":
			skipped = append(skipped, fmt.Sprintf("node %s: no VTEP MAC yet (annotation %s) for its pod CIDR %s", name, AnnVTEPMAC, p.subnet))
			continue
		case err != nil || len(mac) != 6:
			skipped = append(skipped, fmt.Sprintf("node %s: annotation %s=%q is not a MAC address", name, AnnVTEPMAC, s))
			continue
		}
		gw := p.subnet.Addr()
		want.Routes = append(want.Routes, Route{Dst: p.subnet, Via: gw, Dev: VXLANDevice})
		want.Neighbors = append(want.Neighbors, Entry{IP: gw, MAC: mac.String()})
		want.FDB = append(want.FDB, Entry{IP: p.internalIP, MAC: mac.String()})
	}
	// Two subnets of one node share its FDB entry.
	want.FDB = slices.Compact(slices.SortedFunc(slices.Values(want.FDB), compareEntries))
	return want, skipped
}

func compareEntries(a, b Entry) int {
	if c := a.IP.Compare(b.IP); c != 0 {
		return c
	}
	switch {
	case a.MAC < b.MAC:
		return -1
	case a.MAC > b.MAC:
		return 1
	}
	return 0
}

// PlanEntries is what turns a table's entries current into desired: the
// entries to install and the ones to delete first. FDB entries are
// wanted exactly (a VTEP MAC may have several destinations: those not
// wanted go), neighbours by their IP.
func PlanEntries(t Table, desired, current []Entry) (replace, remove []Entry) {
	if t == FDB {
		return planBy(desired, current, func(e Entry) Entry { return e })
	}
	return planBy(desired, current, func(e Entry) netip.Addr { return e.IP })
}

// MemoryOverlay is an Overlay in memory, for tests and simulated nodes.
// The zero value has no device.
type MemoryOverlay struct {
	mu      sync.Mutex
	device  Device
	created int // devices created, a recreation counting
	ensured int // Ensure calls
	tables  map[Table]map[Entry]bool
	// Fail, when set, is asked before each change and fails it with its
	// error.
	Fail func(op string, t Table, e Entry) error
}

// MemoryOverlayMTU is the MTU of a MemoryOverlay's device: an underlying
// device's 1500 less VXLANOverhead.
const MemoryOverlayMTU = 1500 - VXLANOverhead

// memoryMAC is the MemoryOverlay's device's MAC: a locally administered
// one, another for each device created.
func memoryMAC(n int) string {
	return net.HardwareAddr{0x02, 0x53, 0x4b, 0, byte(n >> 8), byte(n)}.String()
}

// Ensure implements Overlay. A device with another VNI, port or local
// address is recreated, losing its entries, as the kernel's would be.
func (m *MemoryOverlay) Ensure(_ context.Context, d Device) (string, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ensured++
	if err := m.failLocked("ensure", "", Entry{}); err != nil {
		return "", 0, err
	}
	if m.created == 0 || m.device.Name != d.Name || m.device.VNI != d.VNI || m.device.Port != d.Port || m.device.Local != d.Local {
		m.created++
		m.tables = nil
	}
	m.device = d
	return memoryMAC(m.created), MemoryOverlayMTU, nil
}

// Device is the device as last ensured, how many were created, and how
// many times Ensure was called.
func (m *MemoryOverlay) Device() (d Device, created, ensured int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.device, m.created, m.ensured
}

// List implements Overlay.
func (m *MemoryOverlay) List(_ context.Context, t Table) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Entry, 0, len(m.tables[t]))
	for e := range m.tables[t] {
		out = append(out, e)
	}
	slices.SortFunc(out, compareEntries)
	return out, nil
}

// Replace implements Overlay.
func (m *MemoryOverlay) Replace(_ context.Context, t Table, e Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.failLocked("replace", t, e); err != nil {
		return err
	}
	if m.created == 0 {
		return fmt.Errorf("replace %s entry %s: no device", t, e)
	}
	if m.tables == nil {
		m.tables = map[Table]map[Entry]bool{}
	}
	if m.tables[t] == nil {
		m.tables[t] = map[Entry]bool{}
	}
	for have := range m.tables[t] {
		if have.MAC == e.MAC && t == FDB || have.IP == e.IP && t == Neighbors {
			delete(m.tables[t], have)
		}
	}
	m.tables[t][e] = true
	return nil
}

// Delete implements Overlay.
func (m *MemoryOverlay) Delete(_ context.Context, t Table, e Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.failLocked("delete", t, e); err != nil {
		return err
	}
	if !m.tables[t][e] {
		return fmt.Errorf("delete %s entry %s: no such entry", t, e)
	}
	delete(m.tables[t], e)
	return nil
}

func (m *MemoryOverlay) failLocked(op string, t Table, e Entry) error {
	if m.Fail == nil {
		return nil
	}
	return m.Fail(op, t, e)
}
