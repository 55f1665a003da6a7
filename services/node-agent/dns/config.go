package dns

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Defaults of Config.
const (
	DefaultZone       = "cluster.local"
	DefaultResolvConf = "/etc/resolv.conf"
	DefaultTimeout    = 2 * time.Second
	// DefaultMaxConcurrentForwards bounds the forwarded queries in flight
	// (each holds a socket until its answer or the timeout).
	DefaultMaxConcurrentForwards = 1000
	// TTL of the cluster's records, CoreDNS's kubernetes plugin's default.
	TTL = 5
	// UDPReadBuffer is the receive buffer asked for the UDP socket (the
	// kernel caps it at net.core.rmem_max): some 4,000 queries.
	UDPReadBuffer = 4 << 20
	// SchemaVersion is the Kubernetes DNS specification version served
	// as TXT at dns-version.<zone>.
	SchemaVersion = "1.1.0"
)

// Config configures a Server. Zero fields take the defaults.
type Config struct {
	// Listen is the address served over UDP and TCP ("10.244.1.1:53");
	// required. Port 0 picks a free port, the same for both (Server.Addr).
	Listen string
	// Zone is the cluster domain (DefaultZone).
	Zone string
	// Upstreams are the resolvers everything outside the cluster's names
	// goes to, "host" or "host:port"; when empty, the nameservers of
	// ResolvConf. Addresses of the server itself are dropped from either
	// list, so it never forwards to itself.
	Upstreams []string
	// ResolvConf is read, once, when Upstreams is empty (DefaultResolvConf).
	ResolvConf string
	// Timeout bounds a forwarded query over all upstreams
	// (DefaultTimeout); the client gets SERVFAIL when it ends.
	Timeout time.Duration
	// MaxConcurrentForwards bounds the forwarded queries in flight
	// (DefaultMaxConcurrentForwards); a query beyond it is REFUSED at
	// once, as with CoreDNS's forward max_concurrent, rather than opening
	// sockets without end while the upstreams are unreachable.
	MaxConcurrentForwards int

	Logger     *zap.Logger
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() error {
	if c.Listen == "" {
		return errors.New("dns: Config.Listen is required")
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("dns: Config.Listen %q: %w", c.Listen, err)
	}
	if c.Zone == "" {
		c.Zone = DefaultZone
	}
	if _, ok := dns.IsDomainName(c.Zone); !ok || strings.Trim(c.Zone, ".") == "" {
		return fmt.Errorf("dns: Config.Zone %q: not a domain name", c.Zone)
	}
	if c.ResolvConf == "" {
		c.ResolvConf = DefaultResolvConf
	}
	if c.Timeout < 0 {
		return fmt.Errorf("dns: Config.Timeout %v: must not be negative", c.Timeout)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxConcurrentForwards < 0 {
		return fmt.Errorf("dns: Config.MaxConcurrentForwards %d: must not be negative", c.MaxConcurrentForwards)
	}
	if c.MaxConcurrentForwards == 0 {
		c.MaxConcurrentForwards = DefaultMaxConcurrentForwards
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return nil
}

// upstreams returns the upstream resolvers as "ip:port": c.Upstreams, or
// the nameservers of c.ResolvConf.
func (c *Config) upstreams() ([]netip.AddrPort, error) {
	list, from := c.Upstreams, "Config.Upstreams"
	if len(list) == 0 {
		ns, err := readResolvConf(c.ResolvConf)
		if err != nil {
			return nil, err
		}
		list, from = ns, c.ResolvConf
	}
	out := make([]netip.AddrPort, 0, len(list))
	for _, s := range list {
		ap, err := parseUpstream(s)
		if err != nil {
			return nil, fmt.Errorf("dns: %s: upstream %q: %w", from, s, err)
		}
		out = append(out, ap)
	}
	return out, nil
}

// parseUpstream reads "1.1.1.1", "1.1.1.1:5353", "[fd00::1]:53" or "fd00::1".
func parseUpstream(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if ap.Port() == 0 {
			return netip.AddrPort{}, errors.New("port 0")
		}
		return ap, nil
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.AddrPort{}, errors.New("not an IP address, with or without a port")
	}
	return netip.AddrPortFrom(ip.Unmap(), 53), nil
}

// readResolvConf returns the nameserver lines of a resolv.conf.
func readResolvConf(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dns: reading upstream resolvers: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "nameserver" {
			out = append(out, fields[1])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dns: reading %s: %w", path, err)
	}
	return out, nil
}

// withoutSelf drops from ups the addresses that are the server's own:
// listen itself and, when it listens on every address (0.0.0.0), each of
// the host's addresses with its port. local lists the host's addresses.
func withoutSelf(ups []netip.AddrPort, listen netip.AddrPort, local []netip.Addr) (kept, dropped []netip.AddrPort) {
	self := func(u netip.AddrPort) bool {
		if u.Port() != listen.Port() {
			return false
		}
		if u.Addr().Unmap() == listen.Addr().Unmap() {
			return true
		}
		if !listen.Addr().IsUnspecified() {
			return false
		}
		if u.Addr().IsLoopback() || u.Addr().IsUnspecified() {
			return true
		}
		for _, a := range local {
			if a.Unmap() == u.Addr().Unmap() {
				return true
			}
		}
		return false
	}
	for _, u := range ups {
		if self(u) {
			dropped = append(dropped, u)
		} else {
			kept = append(kept, u)
		}
	}
	return kept, dropped
}

// localAddrs lists the host's interface addresses (none on error: only the
// listen address itself is then recognised).
func localAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out
}
