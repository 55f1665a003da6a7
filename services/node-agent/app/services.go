package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/services/node-agent/agent"
	"skiff.dev/services/node-agent/dns"
	"skiff.dev/services/node-agent/proxy"
)

// DefaultClusterDNS is the address pods with dnsPolicy ClusterFirst send
// their queries to: the agent's DNS server on it, on every node. It is
// NodeLocal DNSCache's well-known link-local address: no machine routes
// it, and each node has it on its loopback interface, which pods reach
// through their default route.
const DefaultClusterDNS = "169.254.20.10"

// ServiceOptions are the flags of the service proxy and the DNS server.
type ServiceOptions struct {
	// ProxyMode is "nftables" (program the node's packet filter for
	// Services) or "none".
	ProxyMode string
	// ClusterDNS is the nameserver of ClusterFirst pods ("": none, they
	// get the node's resolv.conf); ClusterDomain the cluster's domain;
	// ResolvConf the node's resolvers (forwarded to, and the search
	// domains added to pods').
	ClusterDNS, ClusterDomain, ResolvConf string
	// DNSListen is where the DNS server serves: "" is ClusterDNS:53,
	// "none" no server (pods then need another one at ClusterDNS).
	DNSListen string
}

func (o *ServiceOptions) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.ProxyMode, "proxy-mode", "nftables", `the service proxy: "nftables" programs the node's packet filter (table ip skiff-proxy; needs the nft binary and CAP_NET_ADMIN) so that Services' cluster IPs and node ports reach their ready endpoints; "none" leaves Services to someone else`)
	fs.StringVar(&o.ClusterDNS, "cluster-dns", DefaultClusterDNS, "the nameserver pods with dnsPolicy ClusterFirst use (the agent's DNS server listens on it, added to the loopback interface when no interface has it); empty: such pods get the node's resolv.conf")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", agent.DefaultClusterDomain, "the cluster's DNS domain: <service>.<namespace>.svc.<domain>")
	fs.StringVar(&o.ResolvConf, "resolv-conf", "/etc/resolv.conf", "the node's resolv.conf: names outside the cluster are forwarded to its nameservers, its search domains are added to pods'")
	fs.StringVar(&o.DNSListen, "dns-listen", "", `address of the DNS server (UDP and TCP): empty is --cluster-dns port 53; "none" runs no DNS server`)
}

// check validates the options.
func (o *ServiceOptions) check() error {
	switch o.ProxyMode {
	case "nftables", "none":
	default:
		return fmt.Errorf("--proxy-mode %q: want nftables or none", o.ProxyMode)
	}
	if o.ClusterDNS != "" {
		if a, err := netip.ParseAddr(o.ClusterDNS); err != nil || !a.Is4() {
			return fmt.Errorf("--cluster-dns %q: want an IPv4 address (default %s)", o.ClusterDNS, DefaultClusterDNS)
		}
	}
	if o.DNSListen == "" && o.ClusterDNS == "" {
		o.DNSListen = "none"
	}
	if o.DNSListen != "none" && o.DNSListen != "" {
		if _, err := netip.ParseAddrPort(o.DNSListen); err != nil {
			return fmt.Errorf("--dns-listen %q: want an address and port such as 169.254.20.10:53, or none", o.DNSListen)
		}
	}
	return nil
}

// dnsListen is where the DNS server listens ("" for none).
func (o *ServiceOptions) dnsListen() string {
	switch o.DNSListen {
	case "none":
		return ""
	case "":
		return net.JoinHostPort(o.ClusterDNS, "53")
	}
	return o.DNSListen
}

// agentDNS is what the agent writes into ClusterFirst pods' resolv.conf.
func (o *ServiceOptions) agentDNS() (servers []string, domain, resolvConf string) {
	if o.ClusterDNS != "" {
		servers = []string{o.ClusterDNS}
	}
	return servers, o.ClusterDomain, o.ResolvConf
}

// services runs the service proxy and the DNS server of one node from
// shared informers of Services and EndpointSlices.
type services struct {
	factory *informer.Factory
	proxy   *proxy.Proxier
	feed    *proxy.InformerFeed
	dns     *dns.Server
	log     *zap.Logger
}

// startServices builds the proxy and the DNS server the options ask for
// (nil when neither).
func startServices(o *Options, conn grpc.ClientConnInterface, nodeIP string, log *zap.Logger, reg prometheus.Registerer) (*services, error) {
	so := &o.Services
	listen := so.dnsListen()
	if so.ProxyMode == "none" && listen == "" {
		return nil, nil
	}
	s := &services{factory: informer.NewFactory(informer.FactoryOptions{Logger: log, Metrics: informer.NewMetrics(reg)}), log: log}
	svcs := informer.For(s.factory, client.Services(conn))
	slices := informer.For(s.factory, client.EndpointSlices(conn))
	if so.ProxyMode == "nftables" {
		cfg := proxy.Config{NodeName: o.NodeName, ClusterCIDR: o.ClusterCIDR, Logger: log, Registerer: reg}
		if a, err := netip.ParseAddr(nodeIP); err == nil && a.Is4() {
			cfg.NodeIPs = []netip.Addr{a}
		}
		p, feed, err := proxy.NewFromInformers(cfg, svcs, slices)
		if err != nil {
			return nil, fmt.Errorf("--proxy-mode nftables: %w", err)
		}
		s.proxy, s.feed = p, feed
	}
	if listen != "" {
		if err := ensureLocal(listen); err != nil {
			return nil, fmt.Errorf("--dns-listen %s: %w", listen, err)
		}
		d, err := dns.New(dns.Config{Listen: listen, Zone: so.ClusterDomain, ResolvConf: so.ResolvConf, Logger: log, Registerer: reg},
			dns.Informers{Services: svcs, EndpointSlices: slices, Namespaces: informer.For(s.factory, client.Namespaces(conn))})
		if err != nil {
			return nil, fmt.Errorf("the DNS server on %s: %w", listen, err)
		}
		s.dns = d
	}
	return s, nil
}

// ensureLocal gives this network namespace the address of listen when it
// is not a loopback or unspecified address it has anyway.
func ensureLocal(listen string) error {
	ap, err := netip.ParseAddrPort(listen)
	if err != nil {
		return err
	}
	if a := ap.Addr(); a.IsLoopback() || a.IsUnspecified() {
		return nil
	}
	return ensureLocalAddress(ap.Addr())
}

// run runs the informers, the proxy and the DNS server until ctx ends.
func (s *services) run(ctx context.Context) error {
	if s == nil {
		<-ctx.Done()
		return nil
	}
	s.factory.Start(ctx)
	defer s.factory.Wait()
	errc := make(chan error, 2)
	n := 0
	if s.proxy != nil {
		n++
		go func() {
			defer s.proxy.Close()
			s.feed.Run(ctx)
			errc <- nil
		}()
	}
	if s.dns != nil {
		n++
		go func() { errc <- s.dns.Run(ctx) }()
	}
	var first error
	for range n {
		if err := <-errc; err != nil && !errors.Is(err, context.Canceled) && first == nil {
			first = err
		}
	}
	return first
}

// describe is for the start log.
func (o *ServiceOptions) describe() string {
	return "proxy " + o.ProxyMode + ", dns " + strconv.Quote(o.dnsListen())
}
