package dns

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"skiff.dev/internal/await"
)

func TestForwardRetriesTruncatedOverTCP(t *testing.T) {
	up := startUpstream(t, map[string][]dns.RR{
		"big.example.org. A": {mustRR(t, "big.example.org. 60 IN A 192.0.2.1"), mustRR(t, "big.example.org. 60 IN A 192.0.2.2")},
	}, map[string]bool{"big.example.org. A": true})
	s := startServer(t, Config{Upstreams: []string{up.addr}}, Informers{})
	r := ask(t, "udp", s.Addr(), "big.example.org.", dns.TypeA)
	if got := rrs(r.Answer); len(got) != 2 || r.Truncated {
		t.Errorf("answer %v (truncated %v), want the two records from the TCP retry", got, r.Truncated)
	}
	if u, c := up.count("udp"), up.count("tcp"); u != 1 || c != 1 {
		t.Errorf("upstream saw %d UDP and %d TCP queries, want 1 and 1", u, c)
	}
}

func TestForwardGoesToTheNextUpstream(t *testing.T) {
	up := startUpstream(t, map[string][]dns.RR{"www.example.org. A": {mustRR(t, "www.example.org. 60 IN A 192.0.2.80")}}, nil)
	s := startServer(t, Config{Upstreams: []string{unreachable(t), up.addr}, Timeout: 10 * time.Second}, Informers{})
	start := time.Now()
	r := ask(t, "udp", s.Addr(), "www.example.org.", dns.TypeA)
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Fatalf("%s with %v, want the second upstream's answer", dns.RcodeToString[r.Rcode], rrs(r.Answer))
	}
	// A refused port fails at once: the second upstream answers well
	// before its share of the timeout (half of it) would have run out.
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the answer took %v", d)
	}
	if n := testutil.ToFloat64(s.m.upstream.WithLabelValues(s.fwd.names[0])); n != 1 {
		t.Errorf("errors counted for the refused upstream: %v, want 1", n)
	}
}

// blackhole is a UDP socket that reads queries and never answers.
func blackhole(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 65535)
		for {
			if _, _, err := c.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { c.Close(); wg.Wait() })
	return c.LocalAddr().String()
}

func TestForwardServfailWithinTheTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	cases := []struct {
		name      string
		upstreams []string
		reason    string
	}{
		{"an upstream that never answers", []string{blackhole(t)}, failTimeout},
		{"two that never answer", []string{blackhole(t), blackhole(t)}, failTimeout},
		{"an unreachable one", []string{unreachable(t)}, failError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, Config{Upstreams: tc.upstreams, Timeout: timeout}, Informers{})
			m := new(dns.Msg)
			m.SetQuestion("www.example.org.", dns.TypeA)
			m.SetEdns0(1232, false)
			c := &dns.Client{Net: "udp", Timeout: patience}
			start := time.Now()
			r, _, err := c.Exchange(m, s.Addr())
			elapsed := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if r.Rcode != dns.RcodeServerFailure {
				t.Errorf("rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
			}
			if elapsed > timeout+time.Second {
				t.Errorf("SERVFAIL after %v, want within the timeout (%v) and a little", elapsed, timeout)
			}
			var ede *dns.EDNS0_EDE
			if opt := r.IsEdns0(); opt != nil {
				for _, o := range opt.Option {
					if e, ok := o.(*dns.EDNS0_EDE); ok {
						ede = e
					}
				}
			}
			if ede == nil || ede.InfoCode != dns.ExtendedErrorCodeNoReachableAuthority || !strings.Contains(ede.ExtraText, tc.upstreams[0]) {
				t.Errorf("extended error %v, want No Reachable Authority naming %s", ede, tc.upstreams[0])
			}
			if n := testutil.ToFloat64(s.m.failures.WithLabelValues(tc.reason)); n != 1 {
				t.Errorf("skiff_node_dns_forward_failures_total{reason=%q} = %v, want 1", tc.reason, n)
			}
		})
	}
}

func TestNoUpstreamServfail(t *testing.T) {
	// A resolv.conf without nameservers: a forwarded query is SERVFAIL at
	// once.
	dir := t.TempDir()
	conf := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(conf, []byte("search example.org\noptions ndots:5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Config{ResolvConf: conf}, Informers{})
	if r := ask(t, "udp", s.Addr(), "www.example.org.", dns.TypeA); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("%s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	if n := testutil.ToFloat64(s.m.failures.WithLabelValues(failNone)); n != 1 {
		t.Errorf("failures{reason=no_upstream} = %v, want 1", n)
	}
}

func TestReadResolvConf(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	content := "# generated\nsearch example.org\nnameserver 192.0.2.53\nnameserver  fd00::53 \noptions ndots:2\nnameserver 127.0.0.53\nnameserver fe80::1%eth0\n"
	if err := os.WriteFile(conf, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Config{ResolvConf: conf}
	got, err := c.upstreams()
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.AddrPort{
		netip.MustParseAddrPort("192.0.2.53:53"), netip.MustParseAddrPort("[fd00::53]:53"), netip.MustParseAddrPort("127.0.0.53:53"),
		netip.MustParseAddrPort("[fe80::1%eth0]:53"),
	}
	if !slices.Equal(got, want) {
		t.Errorf("upstreams %v, want %v", got, want)
	}
	bad := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(bad, []byte("nameserver dns.example.org\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c = Config{ResolvConf: bad}
	if _, err := c.upstreams(); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a host name: error %v, want one naming %s", err, bad)
	}
}

func TestWithoutSelf(t *testing.T) {
	ap := netip.MustParseAddrPort
	local := []netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("127.0.0.1")}
	cases := []struct {
		name    string
		ups     []string
		listen  string
		dropped []string
	}{
		{"its own address", []string{"10.0.0.5:53", "192.0.2.53:53"}, "10.0.0.5:53", []string{"10.0.0.5:53"}},
		{"same address, other port", []string{"10.0.0.5:5353"}, "10.0.0.5:53", nil},
		{"another local address, specific listen", []string{"127.0.0.1:53"}, "10.0.0.5:53", nil},
		{"every address: any local one and loopback", []string{"10.0.0.5:53", "127.0.0.53:53", "192.0.2.53:53"}, "0.0.0.0:53",
			[]string{"10.0.0.5:53", "127.0.0.53:53"}},
		{"every address: other port", []string{"127.0.0.53:53"}, "0.0.0.0:5353", nil},
		{"IPv4-mapped", []string{"[::ffff:10.0.0.5]:53"}, "10.0.0.5:53", []string{"[::ffff:10.0.0.5]:53"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ups []netip.AddrPort
			for _, u := range tc.ups {
				ups = append(ups, ap(u))
			}
			kept, dropped := withoutSelf(ups, ap(tc.listen), local)
			var got []string
			for _, d := range dropped {
				got = append(got, d.String())
			}
			if !slices.Equal(got, tc.dropped) {
				t.Errorf("dropped %v, want %v", got, tc.dropped)
			}
			if len(kept)+len(dropped) != len(ups) {
				t.Errorf("kept %v and dropped %v of %v", kept, dropped, ups)
			}
		})
	}
}

func TestServerNeverForwardsToItself(t *testing.T) {
	// Listen on a port first known, then name the server itself in
	// resolv.conf: New leaves it out. The port is free for UDP a moment
	// before New binds it for UDP and TCP: another process may hold or
	// take it for TCP meanwhile (seen in CI), so another is tried then.
	var s *Server
	for attempt := 1; s == nil; attempt++ {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := c.LocalAddr().String()
		c.Close()
		conf := filepath.Join(t.TempDir(), "resolv.conf")
		if err := os.WriteFile(conf, []byte("nameserver "+addr+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err = New(Config{Listen: addr, ResolvConf: conf, Logger: testLogger(t)}, Informers{})
		if err != nil && (attempt == 5 || !strings.Contains(err.Error(), "address already in use")) {
			t.Fatalf("New on %s (free a moment ago): %v", addr, err)
		}
	}
	defer s.Close()
	if len(s.fwd.ups) != 0 {
		t.Errorf("upstreams %v, want none (the only one was the server itself)", s.fwd.ups)
	}
}

func TestForwardsInFlightAreBounded(t *testing.T) {
	first := make(chan struct{})
	t.Cleanup(func() { <-first }) // after the server stops: it ends the forward in flight
	s := startServer(t, Config{Upstreams: []string{blackhole(t)}, Timeout: patience, MaxConcurrentForwards: 1}, Informers{})
	// The first query waits on an upstream that never answers, holding
	// the only slot until the server stops (Run's end cancels it).
	c := &dns.Client{Net: "udp", Timeout: patience}
	m := new(dns.Msg)
	m.SetQuestion("slow.example.org.", dns.TypeA)
	go func() {
		defer close(first)
		c.Exchange(m, s.Addr()) // answered SERVFAIL when the server stops
	}()
	var never await.Signal
	never.Until(t, patience, "the first query to hold the slot", nil, func() (bool, string) {
		return len(s.fwd.slots) == 1, "no query in flight"
	})
	start := time.Now()
	r := ask(t, "udp", s.Addr(), "www.example.org.", dns.TypeA)
	if r.Rcode != dns.RcodeRefused || time.Since(start) > time.Second {
		t.Errorf("a query beyond the bound: %s after %v, want REFUSED at once", dns.RcodeToString[r.Rcode], time.Since(start))
	}
	if n := testutil.ToFloat64(s.m.failures.WithLabelValues(failOverloaded)); n != 1 {
		t.Errorf("failures{reason=overloaded} = %v, want 1", n)
	}
	// The cluster's names are not forwarded: still answered.
	if r := ask(t, "udp", s.Addr(), "x.default.svc.cluster.local.", dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Errorf("a cluster name meanwhile: %s, want NXDOMAIN", dns.RcodeToString[r.Rcode])
	}
}
