package dns

import (
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"

	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
)

// cluster feeds the index a small cluster: a ClusterIP Service with two
// named ports, a headless one with three endpoints (one not ready), a
// headless one publishing not-ready addresses, an ExternalName one.
func cluster(x *Index) {
	x.SetService(service("default", "web", func(s *corev1.ServiceSpec) {
		s.ClusterIp, s.ClusterIps = "10.96.0.10", []string{"10.96.0.10"}
		s.Ports = []*corev1.ServicePort{port("http", "TCP", 80), port("dns", "UDP", 53)}
	}))
	x.SetEndpointSlice(slice("default", "web-1", "web", []*discoveryv1.EndpointPort{epPort("http", "TCP", 8080)},
		ep{"10.244.1.2", "", true}))
	x.SetService(service("default", "db", func(s *corev1.ServiceSpec) {
		s.ClusterIp = "None"
		s.Ports = []*corev1.ServicePort{port("pg", "TCP", 5432)}
	}))
	x.SetEndpointSlice(slice("default", "db-a", "db", []*discoveryv1.EndpointPort{epPort("pg", "TCP", 5432)},
		ep{"10.244.1.5", "db-0", true}, ep{"10.244.2.6", "", true}, ep{"10.244.3.7", "db-2", false}))
	x.SetService(service("other", "peers", func(s *corev1.ServiceSpec) {
		s.ClusterIp = "None"
		s.PublishNotReadyAddresses = true
	}))
	x.SetEndpointSlice(slice("other", "peers-a", "peers", nil, ep{"10.244.4.1", "", false}, ep{"10.244.4.2", "", true}))
	x.SetService(service("default", "ext", func(s *corev1.ServiceSpec) {
		s.Type, s.ExternalName = "ExternalName", "www.example.org"
	}))
}

func TestAnswers(t *testing.T) {
	up := startUpstream(t, map[string][]dns.RR{
		"www.example.org. A": {mustRR(t, "www.example.org. 60 IN A 192.0.2.80")},
	}, nil)
	s := startServer(t, Config{Upstreams: []string{up.addr}}, Informers{})
	cluster(s.Index())
	const soa = "cluster.local. SOA ns.dns.cluster.local. hostmaster.cluster.local."

	cases := []struct {
		name   string
		qname  string
		qtype  uint16
		rcode  int
		answer []string
		extra  []string
		ns     string // prefix of the authority section's one record
	}{
		{"ClusterIP service", "web.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			[]string{"web.default.svc.cluster.local. A 10.96.0.10"}, nil, ""},
		{"names are case-insensitive, the answer uses the asked case", "Web.DEFAULT.svc.Cluster.Local.", dns.TypeA, dns.RcodeSuccess,
			[]string{"Web.DEFAULT.svc.Cluster.Local. A 10.96.0.10"}, nil, ""},
		{"no AAAA for an existing name: NODATA", "web.default.svc.cluster.local.", dns.TypeAAAA, dns.RcodeSuccess, nil, nil, soa},
		{"missing service: NXDOMAIN", "nosuch.default.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil, nil, soa},
		{"missing service, AAAA: NXDOMAIN", "nosuch.default.svc.cluster.local.", dns.TypeAAAA, dns.RcodeNameError, nil, nil, soa},
		{"service in another namespace is not there", "web.other.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil, nil, soa},
		{"headless: the ready endpoints", "db.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			[]string{"db.default.svc.cluster.local. A 10.244.1.5", "db.default.svc.cluster.local. A 10.244.2.6"}, nil, ""},
		{"headless endpoint by hostname", "db-0.db.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			[]string{"db-0.db.default.svc.cluster.local. A 10.244.1.5"}, nil, ""},
		{"headless endpoint by dashed address", "10-244-2-6.db.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			[]string{"10-244-2-6.db.default.svc.cluster.local. A 10.244.2.6"}, nil, ""},
		{"a not-ready endpoint has no name", "db-2.db.default.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil, nil, soa},
		{"publishNotReadyAddresses: every endpoint", "peers.other.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			[]string{"peers.other.svc.cluster.local. A 10.244.4.1", "peers.other.svc.cluster.local. A 10.244.4.2"}, nil, ""},
		{"SRV of a named port: the service", "_http._tcp.web.default.svc.cluster.local.", dns.TypeSRV, dns.RcodeSuccess,
			[]string{"_http._tcp.web.default.svc.cluster.local. SRV 0 100 80 web.default.svc.cluster.local."},
			[]string{"web.default.svc.cluster.local. A 10.96.0.10"}, ""},
		{"SRV of a UDP port", "_dns._udp.web.default.svc.cluster.local.", dns.TypeSRV, dns.RcodeSuccess,
			[]string{"_dns._udp.web.default.svc.cluster.local. SRV 0 100 53 web.default.svc.cluster.local."},
			[]string{"web.default.svc.cluster.local. A 10.96.0.10"}, ""},
		{"SRV with the wrong protocol: NXDOMAIN", "_http._udp.web.default.svc.cluster.local.", dns.TypeSRV, dns.RcodeNameError, nil, nil, soa},
		{"SRV of the service name: every port", "web.default.svc.cluster.local.", dns.TypeSRV, dns.RcodeSuccess,
			[]string{"web.default.svc.cluster.local. SRV 0 50 53 web.default.svc.cluster.local.",
				"web.default.svc.cluster.local. SRV 0 50 80 web.default.svc.cluster.local."},
			[]string{"web.default.svc.cluster.local. A 10.96.0.10"}, ""},
		{"SRV of a headless port: each endpoint", "_pg._tcp.db.default.svc.cluster.local.", dns.TypeSRV, dns.RcodeSuccess,
			[]string{"_pg._tcp.db.default.svc.cluster.local. SRV 0 50 5432 10-244-2-6.db.default.svc.cluster.local.",
				"_pg._tcp.db.default.svc.cluster.local. SRV 0 50 5432 db-0.db.default.svc.cluster.local."},
			[]string{"10-244-2-6.db.default.svc.cluster.local. A 10.244.2.6", "db-0.db.default.svc.cluster.local. A 10.244.1.5"}, ""},
		{"A of a port name", "_http._tcp.web.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			[]string{"_http._tcp.web.default.svc.cluster.local. A 10.96.0.10"}, nil, ""},
		{"SRV of a headless service without ports: NODATA", "peers.other.svc.cluster.local.", dns.TypeSRV, dns.RcodeSuccess, nil, nil, soa},
		{"ExternalName: CNAME", "ext.default.svc.cluster.local.", dns.TypeCNAME, dns.RcodeSuccess,
			[]string{"ext.default.svc.cluster.local. CNAME www.example.org."}, nil, ""},
		{"ExternalName: A follows the CNAME upstream", "ext.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			[]string{"ext.default.svc.cluster.local. CNAME www.example.org.", "www.example.org. A 192.0.2.80"}, nil, ""},
		{"ExternalName: no SRV", "_http._tcp.ext.default.svc.cluster.local.", dns.TypeSRV, dns.RcodeNameError, nil, nil, soa},
		{"pod name echoes the address", "10-244-9-9.default.pod.cluster.local.", dns.TypeA, dns.RcodeSuccess,
			[]string{"10-244-9-9.default.pod.cluster.local. A 10.244.9.9"}, nil, ""},
		{"pod name that is no address", "10-244-9.default.pod.cluster.local.", dns.TypeA, dns.RcodeNameError, nil, nil, soa},
		{"pod name, AAAA: NODATA", "10-244-9-9.default.pod.cluster.local.", dns.TypeAAAA, dns.RcodeSuccess, nil, nil, soa},
		{"PTR of a ClusterIP", "10.0.96.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess,
			[]string{"10.0.96.10.in-addr.arpa. PTR web.default.svc.cluster.local."}, nil, ""},
		{"PTR of a headless endpoint with a hostname", "5.1.244.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess,
			[]string{"5.1.244.10.in-addr.arpa. PTR db-0.db.default.svc.cluster.local."}, nil, ""},
		{"PTR of a headless endpoint without one", "6.2.244.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess,
			[]string{"6.2.244.10.in-addr.arpa. PTR 10-244-2-6.db.default.svc.cluster.local."}, nil, ""},
		{"PTR of a ClusterIP Service's endpoint (CoreDNS answers every endpoint)", "2.1.244.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess,
			[]string{"2.1.244.10.in-addr.arpa. PTR 10-244-1-2.web.default.svc.cluster.local."}, nil, ""},
		{"PTR of an address the cluster does not name goes upstream", "9.9.9.10.in-addr.arpa.", dns.TypePTR, dns.RcodeNameError, nil, nil, ""},
		{"the zone's SOA", "cluster.local.", dns.TypeSOA, dns.RcodeSuccess, []string{soa + " SERIAL 7200 1800 86400 5"}, nil, ""},
		{"the zone: NODATA", "cluster.local.", dns.TypeA, dns.RcodeSuccess, nil, nil, soa},
		{"svc.<zone>: NODATA", "svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, nil, nil, soa},
		{"pod.<zone>: NODATA", "pod.cluster.local.", dns.TypeA, dns.RcodeSuccess, nil, nil, soa},
		{"<ns>.svc.<zone>: NODATA", "default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, nil, nil, soa},
		{"an unknown second label: NXDOMAIN", "foo.cluster.local.", dns.TypeA, dns.RcodeNameError, nil, nil, soa},
		{"too many labels: NXDOMAIN", "a.b.c.d.default.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil, nil, soa},
		{"a search-path expansion: NXDOMAIN", "www.example.org.default.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil, nil, soa},
		{"the schema version", "dns-version.cluster.local.", dns.TypeTXT, dns.RcodeSuccess,
			[]string{`dns-version.cluster.local. TXT "1.1.0"`}, nil, ""},
		{"other types of an existing name: NODATA", "web.default.svc.cluster.local.", dns.TypeMX, dns.RcodeSuccess, nil, nil, soa},
		{"other types of a missing name: NXDOMAIN", "nosuch.default.svc.cluster.local.", dns.TypeMX, dns.RcodeNameError, nil, nil, soa},
		{"outside the zone: forwarded", "www.example.org.", dns.TypeA, dns.RcodeSuccess,
			[]string{"www.example.org. A 192.0.2.80"}, nil, ""},
	}
	for _, proto := range []string{"udp", "tcp"} {
		for _, tc := range cases {
			t.Run(proto+"/"+tc.name, func(t *testing.T) {
				r := ask(t, proto, s.Addr(), tc.qname, tc.qtype)
				if r.Rcode != tc.rcode {
					t.Errorf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
				}
				got := rrs(r.Answer)
				for i := range got { // the SOA serial changes with the index
					if strings.Contains(got[i], " SOA ") {
						f := strings.Fields(got[i])
						f[4] = "SERIAL"
						got[i] = strings.Join(f, " ")
					}
				}
				if !slices.Equal(got, tc.answer) {
					t.Errorf("answer:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.answer, "\n"))
				}
				if got := rrs(r.Extra); !slices.Equal(got, tc.extra) {
					t.Errorf("additional:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.extra, "\n"))
				}
				if tc.ns != "" {
					if ns := rrs(r.Ns); len(ns) != 1 || !strings.HasPrefix(ns[0], tc.ns) {
						t.Errorf("authority %q, want one record %q...", ns, tc.ns)
					}
				}
				for _, rr := range r.Answer {
					if want := uint32(TTL); rr.Header().Ttl != want && strings.HasSuffix(rr.Header().Name, "cluster.local.") {
						t.Errorf("TTL of %s is %d, want %d", rr, rr.Header().Ttl, want)
					}
				}
				if inCluster := strings.HasSuffix(strings.ToLower(tc.qname), "cluster.local.") ||
					(len(r.Answer) > 0 && r.Answer[0].Header().Rrtype == dns.TypePTR); inCluster && !r.Authoritative {
					t.Error("an answer from the cluster's names is not authoritative")
				}
			})
		}
	}
	if n := testutil.ToFloat64(s.m.requests.WithLabelValues("A", "NXDOMAIN")); n == 0 {
		t.Error("skiff_node_dns_requests_total{type=A,rcode=NXDOMAIN} is 0 after NXDOMAIN answers")
	}
	if n := testutil.ToFloat64(s.m.forwarded); n == 0 {
		t.Error("skiff_node_dns_forward_requests_total is 0 after forwarded queries")
	}
}

func TestUpdates(t *testing.T) {
	s := startServer(t, Config{}, Informers{})
	x := s.Index()
	cluster(x)
	addr := s.Addr()
	aOf := func(name string) (int, []string) {
		r := ask(t, "udp", addr, name, dns.TypeA)
		var ips []string
		for _, rr := range r.Answer {
			ips = append(ips, rr.(*dns.A).A.String())
		}
		slices.Sort(ips)
		return r.Rcode, ips
	}

	t.Run("a deleted service disappears, with its PTR", func(t *testing.T) {
		x.DeleteService("default", "web")
		if rc, _ := aOf("web.default.svc.cluster.local."); rc != dns.RcodeNameError {
			t.Errorf("A of a deleted service: %s, want NXDOMAIN", dns.RcodeToString[rc])
		}
		if ptr := x.ptr(mustAddr("10.96.0.10")); len(ptr) != 0 {
			t.Errorf("PTR of a deleted service's ClusterIP: %v, want none", ptr)
		}
	})
	t.Run("an endpoint becoming ready appears in the headless answer", func(t *testing.T) {
		x.SetEndpointSlice(slice("default", "db-a", "db", []*discoveryv1.EndpointPort{epPort("pg", "TCP", 5432)},
			ep{"10.244.1.5", "db-0", true}, ep{"10.244.2.6", "", true}, ep{"10.244.3.7", "db-2", true}))
		_, ips := aOf("db.default.svc.cluster.local.")
		if want := []string{"10.244.1.5", "10.244.2.6", "10.244.3.7"}; !slices.Equal(ips, want) {
			t.Errorf("headless A: %v, want %v", ips, want)
		}
		if _, ips := aOf("db-2.db.default.svc.cluster.local."); !slices.Equal(ips, []string{"10.244.3.7"}) {
			t.Errorf("the new endpoint's name: %v", ips)
		}
	})
	t.Run("a second slice adds its endpoints, its deletion removes them", func(t *testing.T) {
		x.SetEndpointSlice(slice("default", "db-b", "db", nil, ep{"10.244.5.5", "", true}))
		if _, ips := aOf("db.default.svc.cluster.local."); len(ips) != 4 {
			t.Errorf("headless A with two slices: %v, want 4 addresses", ips)
		}
		x.DeleteEndpointSlice("default", "db-b")
		if _, ips := aOf("db.default.svc.cluster.local."); len(ips) != 3 {
			t.Errorf("headless A after the slice's deletion: %v, want 3 addresses", ips)
		}
	})
	t.Run("a headless service without ready endpoints: NXDOMAIN, as CoreDNS", func(t *testing.T) {
		x.SetEndpointSlice(slice("default", "db-a", "db", nil, ep{"10.244.1.5", "db-0", false}))
		if rc, ips := aOf("db.default.svc.cluster.local."); rc != dns.RcodeNameError {
			t.Errorf("A: %s %v, want NXDOMAIN", dns.RcodeToString[rc], ips)
		}
		if ptr := x.ptr(mustAddr("10.244.1.5")); len(ptr) != 0 {
			t.Errorf("PTR of a no longer ready endpoint: %v", ptr)
		}
	})
	t.Run("a service changing type changes its answer", func(t *testing.T) {
		x.SetService(service("default", "db", func(s *corev1.ServiceSpec) {
			s.Type, s.ExternalName = "ExternalName", "db.example.org."
		}))
		r := ask(t, "udp", addr, "db.default.svc.cluster.local.", dns.TypeCNAME)
		if got := rrs(r.Answer); !slices.Equal(got, []string{"db.default.svc.cluster.local. CNAME db.example.org."}) {
			t.Errorf("CNAME: %v", got)
		}
	})
	t.Run("a slice without its service label counts for no service", func(t *testing.T) {
		s := slice("default", "stray", "web", nil, ep{"10.244.7.7", "", true})
		delete(s.Metadata.Labels, LabelServiceName)
		x.SetEndpointSlice(s)
		if ptr := x.ptr(mustAddr("10.244.7.7")); len(ptr) != 0 {
			t.Errorf("PTR of an unlabelled slice's endpoint: %v", ptr)
		}
	})
}

func TestNamespacesTracked(t *testing.T) {
	s := startServer(t, Config{}, Informers{})
	x := s.Index()
	x.TrackNamespaces()
	x.SetNamespace("default")
	cases := []struct {
		qname string
		rcode int
	}{
		{"default.svc.cluster.local.", dns.RcodeSuccess},
		{"nosuch.svc.cluster.local.", dns.RcodeNameError},
		{"10-1-2-3.default.pod.cluster.local.", dns.RcodeSuccess},
		{"10-1-2-3.nosuch.pod.cluster.local.", dns.RcodeNameError},
	}
	for _, tc := range cases {
		if r := ask(t, "udp", s.Addr(), tc.qname, dns.TypeA); r.Rcode != tc.rcode {
			t.Errorf("%s: %s, want %s", tc.qname, dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
		}
	}
	x.DeleteNamespace("default")
	if r := ask(t, "udp", s.Addr(), "default.svc.cluster.local.", dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Errorf("a deleted namespace: %s, want NXDOMAIN", dns.RcodeToString[r.Rcode])
	}
}

func TestLargeAnswerTruncatedOverUDP(t *testing.T) {
	s := startServer(t, Config{}, Informers{})
	x := s.Index()
	x.SetService(service("default", "big", func(s *corev1.ServiceSpec) { s.ClusterIp = "None" }))
	var eps []ep
	for i := range 100 {
		eps = append(eps, ep{"10.244.8." + strconv.Itoa(i+1), "", true})
	}
	x.SetEndpointSlice(slice("default", "big-a", "big", nil, eps...))
	udp := ask(t, "udp", s.Addr(), "big.default.svc.cluster.local.", dns.TypeA)
	if !udp.Truncated || len(udp.Answer) >= 100 {
		t.Errorf("UDP answer of 100 addresses without EDNS0: truncated %v with %d records, want TC and fewer", udp.Truncated, len(udp.Answer))
	}
	tcp := ask(t, "tcp", s.Addr(), "big.default.svc.cluster.local.", dns.TypeA)
	if tcp.Truncated || len(tcp.Answer) != 100 {
		t.Errorf("TCP answer: truncated %v with %d records, want all 100", tcp.Truncated, len(tcp.Answer))
	}
}

func TestNotSyncedIsServfailNotNXDOMAIN(t *testing.T) {
	s := startServer(t, Config{}, Informers{})
	synced := false
	s.synced = func() bool { return synced }
	s.Index().SetService(service("default", "web", func(s *corev1.ServiceSpec) { s.ClusterIp = "10.96.0.10" }))
	if r := ask(t, "udp", s.Addr(), "web.default.svc.cluster.local.", dns.TypeA); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Errorf("a known name before sync: %s with %d records, want its answer", dns.RcodeToString[r.Rcode], len(r.Answer))
	}
	if r := ask(t, "udp", s.Addr(), "nosuch.default.svc.cluster.local.", dns.TypeA); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("an unknown name before sync: %s, want SERVFAIL (it may exist)", dns.RcodeToString[r.Rcode])
	}
}

func TestRunStopsWhenContextEnds(t *testing.T) {
	// startServer's cleanup checks that Run returns, and goleak that
	// nothing of it is left; here also that the port is free again.
	var addr string
	t.Run("serve", func(t *testing.T) {
		s := startServer(t, Config{}, Informers{})
		addr = s.Addr()
		ask(t, "tcp", addr, "x.default.svc.cluster.local.", dns.TypeA)
	})
	c := &dns.Client{Net: "tcp", Timeout: time.Second}
	m := new(dns.Msg)
	m.SetQuestion("x.default.svc.cluster.local.", dns.TypeA)
	if _, _, err := c.Exchange(m, addr); err == nil {
		t.Error("the server still answers over TCP after Run returned")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no listen address", Config{Upstreams: []string{"192.0.2.1"}}, "Config.Listen is required"},
		{"listen without a port", Config{Listen: "127.0.0.1", Upstreams: []string{"192.0.2.1"}}, "Config.Listen"},
		{"bad zone", Config{Listen: "127.0.0.1:0", Zone: "a..b", Upstreams: []string{"192.0.2.1"}}, "Config.Zone"},
		{"bad upstream", Config{Listen: "127.0.0.1:0", Upstreams: []string{"dns.example"}}, `upstream "dns.example"`},
		{"negative timeout", Config{Listen: "127.0.0.1:0", Timeout: -time.Second, Upstreams: []string{"192.0.2.1"}}, "Config.Timeout"},
		{"missing resolv.conf", Config{Listen: "127.0.0.1:0", ResolvConf: "/nonexistent/resolv.conf"}, "/nonexistent/resolv.conf"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.cfg, Informers{})
			if err == nil {
				s.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
		})
	}
	t.Run("address in use", func(t *testing.T) {
		s := startServer(t, Config{}, Informers{})
		if s2, err := New(Config{Listen: s.Addr(), Upstreams: []string{"192.0.2.1"}}, Informers{}); err == nil {
			s2.Close()
			t.Error("New on a port in use succeeded")
		}
	})
}

func TestUDPReceiveBufferEnlarged(t *testing.T) {
	s := startServer(t, Config{}, Informers{})
	raw, err := s.udp.(*net.UDPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size int
	var serr error
	if err := raw.Control(func(fd uintptr) { size, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	b, err := os.ReadFile("/proc/sys/net/core/rmem_max")
	if err != nil {
		t.Fatal(err)
	}
	limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Linux reports twice what was set (its bookkeeping overhead).
	if want := 2 * min(UDPReadBuffer, limit); size < want {
		t.Errorf("SO_RCVBUF %d, want %d (2 x min(%d, rmem_max %d))", size, want, UDPReadBuffer, limit)
	}
}
