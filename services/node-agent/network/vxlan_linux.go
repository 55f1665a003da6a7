//go:build linux

package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NetlinkOverlay is the Overlay of a network namespace, through netlink.
// It needs CAP_NET_ADMIN.
type NetlinkOverlay struct{ netlinkHandle }

// NewNetlinkOverlay returns the Overlay of the agent's own network
// namespace.
func NewNetlinkOverlay() (*NetlinkOverlay, error) {
	n, err := openNetlink(nil)
	return &NetlinkOverlay{n}, err
}

// NewNetlinkOverlayAt returns the Overlay of the network namespace ns.
func NewNetlinkOverlayAt(ns netns.NsHandle) (*NetlinkOverlay, error) {
	n, err := openNetlink(&ns)
	return &NetlinkOverlay{n}, err
}

// DefaultOverlay is the Overlay of the agent's own network namespace.
func DefaultOverlay() (Overlay, error) { return NewNetlinkOverlay() }

// Ensure implements Overlay: `ip link add NAME type vxlan id VNI local
// LOCAL dev <LOCAL's device> dstport PORT nolearning`, MTU the underlying
// device's less VXLANOverhead, `ip addr` ADDR only, `ip link set up`. A
// device of that name that is not such a VXLAN device (another VNI, port,
// local address or underlying device, learning on: a VXLAN device's
// settings cannot change in place) is deleted and made again.
func (o *NetlinkOverlay) Ensure(_ context.Context, d Device) (string, int, error) {
	under, err := o.deviceOf(d.Local)
	if err != nil {
		return "", 0, fmt.Errorf("vxlan device %s: %w", d.Name, err)
	}
	mtu := under.Attrs().MTU - VXLANOverhead
	link, err := o.h.LinkByName(d.Name)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		link = nil
	case err != nil:
		return "", 0, fmt.Errorf("vxlan device %s: %w", d.Name, err)
	case !sameVXLAN(link, d, under.Attrs().Index):
		if err := o.h.LinkDel(link); err != nil {
			return "", 0, fmt.Errorf("vxlan device %s: deleting the one with other settings: %w", d.Name, err)
		}
		link = nil
	}
	if link == nil {
		la := netlink.NewLinkAttrs()
		la.Name, la.MTU = d.Name, mtu
		if err := o.h.LinkAdd(&netlink.Vxlan{LinkAttrs: la, VxlanId: d.VNI, VtepDevIndex: under.Attrs().Index,
			SrcAddr: d.Local.AsSlice(), Port: d.Port, Learning: false}); err != nil {
			return "", 0, fmt.Errorf("vxlan device %s: creating it: %w", d, err)
		}
		if link, err = o.h.LinkByName(d.Name); err != nil {
			return "", 0, fmt.Errorf("vxlan device %s: %w", d.Name, err)
		}
	} else if link.Attrs().MTU != mtu {
		if err := o.h.LinkSetMTU(link, mtu); err != nil {
			return "", 0, fmt.Errorf("vxlan device %s: MTU %d: %w", d.Name, mtu, err)
		}
	}
	if err := o.onlyAddress(link, d.Addr); err != nil {
		return "", 0, fmt.Errorf("vxlan device %s: %w", d.Name, err)
	}
	if err := o.h.LinkSetUp(link); err != nil {
		return "", 0, fmt.Errorf("vxlan device %s: up: %w", d.Name, err)
	}
	return link.Attrs().HardwareAddr.String(), mtu, nil
}

// sameVXLAN reports whether link is the VXLAN device d over the device of
// index under.
func sameVXLAN(link netlink.Link, d Device, under int) bool {
	v, ok := link.(*netlink.Vxlan)
	if !ok {
		return false
	}
	local, _ := netip.AddrFromSlice(v.SrcAddr)
	return v.VxlanId == d.VNI && v.Port == d.Port && local.Unmap() == d.Local && v.VtepDevIndex == under && !v.Learning
}

// deviceOf is the device holding the address a.
func (o *NetlinkOverlay) deviceOf(a netip.Addr) (netlink.Link, error) {
	addrs, err := o.h.AddrList(nil, family(a))
	if err != nil {
		return nil, fmt.Errorf("listing addresses: %w", err)
	}
	for _, x := range addrs {
		if ip, ok := netip.AddrFromSlice(x.IP); ok && ip.Unmap() == a {
			return o.h.LinkByIndex(x.LinkIndex)
		}
	}
	return nil, fmt.Errorf("no device has the node's InternalIP %s", a)
}

// onlyAddress makes p the only address of link's family.
func (o *NetlinkOverlay) onlyAddress(link netlink.Link, p netip.Prefix) error {
	addrs, err := o.h.AddrList(link, family(p.Addr()))
	if err != nil {
		return fmt.Errorf("listing addresses: %w", err)
	}
	found := false
	for _, a := range addrs {
		ones, _ := a.Mask.Size()
		ip, _ := netip.AddrFromSlice(a.IP)
		if netip.PrefixFrom(ip.Unmap(), ones) == p {
			found = true
			continue
		}
		if err := o.h.AddrDel(link, &a); err != nil {
			return fmt.Errorf("deleting address %s: %w", a.IPNet, err)
		}
	}
	if found {
		return nil
	}
	if err := o.h.AddrAdd(link, &netlink.Addr{IPNet: ipNet(p)}); err != nil {
		return fmt.Errorf("adding address %s: %w", p, err)
	}
	return nil
}

// List implements Overlay.
func (o *NetlinkOverlay) List(_ context.Context, t Table) ([]Entry, error) {
	link, err := o.h.LinkByName(VXLANDevice)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil, nil // nothing to list yet
	}
	if err != nil {
		return nil, fmt.Errorf("list %s entries: %w", t, err)
	}
	fam := netlink.FAMILY_ALL
	if t == FDB {
		fam = unix.AF_BRIDGE
	}
	neighs, err := o.h.NeighList(link.Attrs().Index, fam)
	if err != nil {
		return nil, fmt.Errorf("list %s entries: %w", t, err)
	}
	var out []Entry
	for _, n := range neighs {
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok || len(n.HardwareAddr) != 6 || n.State&netlink.NUD_PERMANENT == 0 {
			continue // an FDB entry without destination, a neighbour someone else's (not permanent)
		}
		out = append(out, Entry{IP: ip.Unmap(), MAC: n.HardwareAddr.String()})
	}
	return out, nil
}

// Replace implements Overlay: `bridge fdb replace MAC dev DEV dst IP
// self permanent` or `ip neigh replace IP lladdr MAC dev DEV nud
// permanent`.
func (o *NetlinkOverlay) Replace(_ context.Context, t Table, e Entry) error {
	n, err := o.neigh(t, e)
	if err == nil {
		err = o.h.NeighSet(n)
	}
	if err != nil {
		return fmt.Errorf("replace %s entry %s: %w", t, e, err)
	}
	return nil
}

// Delete implements Overlay.
func (o *NetlinkOverlay) Delete(_ context.Context, t Table, e Entry) error {
	n, err := o.neigh(t, e)
	if err == nil {
		err = o.h.NeighDel(n)
	}
	if err != nil {
		return fmt.Errorf("delete %s entry %s: %w", t, e, err)
	}
	return nil
}

func (o *NetlinkOverlay) neigh(t Table, e Entry) (*netlink.Neigh, error) {
	link, err := o.h.LinkByName(VXLANDevice)
	if err != nil {
		return nil, err
	}
	mac, err := net.ParseMAC(e.MAC)
	if err != nil {
		return nil, err
	}
	n := &netlink.Neigh{LinkIndex: link.Attrs().Index, State: netlink.NUD_PERMANENT, IP: e.IP.AsSlice(), HardwareAddr: mac}
	if t == FDB {
		n.Family, n.Flags = unix.AF_BRIDGE, netlink.NTF_SELF
	} else {
		n.Family, n.Type = family(e.IP), unix.RTN_UNICAST
	}
	return n, nil
}

func family(a netip.Addr) int {
	if a.Is4() {
		return netlink.FAMILY_V4
	}
	return netlink.FAMILY_V6
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
