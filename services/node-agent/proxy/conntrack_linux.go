//go:build linux

package proxy

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"
)

// openNetns opens the nft binary and conntrack for the network namespace
// at path ("" is the agent's own).
func openNetns(path string) (knftables.Interface, ConntrackCleaner, func(), error) {
	if path == "" {
		nft, err := knftables.New(knftables.IPv4Family, TableName)
		if err != nil {
			return nil, nil, nil, err
		}
		h, err := netlink.NewHandle(unix.NETLINK_NETFILTER)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("netlink (conntrack): %w", err)
		}
		return nft, &netlinkConntrack{h: h}, h.Close, nil
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("network namespace %s: %w", path, err)
	}
	t, err := NewNetnsThread(ns)
	if err != nil {
		ns.Close()
		return nil, nil, nil, err
	}
	nft, err := NewNFTablesIn(t)
	if err != nil {
		t.Close()
		ns.Close()
		return nil, nil, nil, err
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_NETFILTER)
	if err != nil {
		t.Close()
		ns.Close()
		return nil, nil, nil, fmt.Errorf("netlink (conntrack) in %s: %w", path, err)
	}
	return nft, &netlinkConntrack{h: h}, func() { h.Close(); t.Close(); ns.Close() }, nil
}

// NewConntrackAt returns the ConntrackCleaner of network namespace ns.
// Close the handle it returns with the cleaner.
func NewConntrackAt(ns netns.NsHandle) (ConntrackCleaner, func(), error) {
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, nil, fmt.Errorf("netlink (conntrack): %w", err)
	}
	return &netlinkConntrack{h: h}, h.Close, nil
}

// netlinkConntrack deletes conntrack entries through netlink, as
// `conntrack -D -p udp --orig-dst ADDR --dport PORT --reply-src ENDPOINT`.
type netlinkConntrack struct{ h *netlink.Handle }

func (c *netlinkConntrack) ClearUDP(flows []StaleUDP) error {
	filters := make([]netlink.CustomConntrackFilter, 0, len(flows))
	var errs []error
	for _, f := range flows {
		cf := &netlink.ConntrackFilter{}
		err := errors.Join(
			cf.AddProtocol(unix.IPPROTO_UDP),
			cf.AddPort(netlink.ConntrackOrigDstPort, f.Port),
			cf.AddIP(netlink.ConntrackReplySrcIP, net.IP(f.Endpoint.AsSlice())),
		)
		if f.Addr.IsValid() {
			err = errors.Join(err, cf.AddIP(netlink.ConntrackOrigDstIP, net.IP(f.Addr.AsSlice())))
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		filters = append(filters, cf)
	}
	if len(filters) > 0 {
		if _, err := c.h.ConntrackDeleteFilters(netlink.ConntrackTable, unix.AF_INET, filters...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
