package dns

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/pkg/v3/traceutil.(*Trace).Log"),
	)
}

// patience bounds every wait for something that should happen.
const patience = 15 * time.Second

func testLogger(t *testing.T) *zap.Logger {
	if testing.Verbose() {
		return zaptest.NewLogger(t)
	}
	return zap.NewNop()
}

// running is a Server serving on a loopback port for the test's duration.
type running struct {
	*Server
	reg *prometheus.Registry
}

// startServer starts a server on 127.0.0.1:0 with cfg (Listen, Logger and
// Registerer filled in) and inf; the test's cleanup stops it and checks
// that Run returned nil.
func startServer(t *testing.T, cfg Config, inf Informers) *running {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Listen = "127.0.0.1:0"
	cfg.Logger = testLogger(t)
	cfg.Registerer = reg
	if len(cfg.Upstreams) == 0 && cfg.ResolvConf == "" {
		cfg.Upstreams = []string{unreachable(t)}
	}
	s, err := New(cfg, inf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(patience):
			t.Errorf("Run did not return %v after its context ended", patience)
		}
	})
	return &running{Server: s, reg: reg}
}

// unreachable returns a loopback UDP address nothing listens on (a port
// just closed): queries to it are refused at once.
func unreachable(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := c.LocalAddr().String()
	c.Close()
	return addr
}

// ask sends one query over proto (udp or tcp), with EDNS0 when edns.
func ask(t *testing.T, proto, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Net: proto, Timeout: patience}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s %s: %v", proto, dns.TypeToString[qtype], name, err)
	}
	return r
}

// rrs renders records without their TTL-independent noise, sorted: "A
// 10.96.0.10", "SRV 0 100 80 web.default.svc.cluster.local.", "CNAME x.".
func rrs(list []dns.RR) []string {
	var out []string
	for _, rr := range list {
		if _, ok := rr.(*dns.OPT); ok {
			continue
		}
		f := strings.Fields(rr.String())
		// name ttl class type rdata...
		out = append(out, strings.Join(append([]string{f[0], f[3]}, f[4:]...), " "))
	}
	sort.Strings(out)
	return out
}

// service builds a Service.
func service(ns, name string, mod func(*corev1.ServiceSpec)) *corev1.Service {
	s := &corev1.Service{
		Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"},
		Spec:     &corev1.ServiceSpec{Type: "ClusterIP"},
	}
	mod(s.Spec)
	return s
}

func port(name, proto string, n int32) *corev1.ServicePort {
	return &corev1.ServicePort{Name: name, Protocol: proto, Port: n}
}

// ep is an endpoint: address, hostname ("" none), ready.
type ep struct {
	ip       string
	hostname string
	ready    bool
}

// slice builds an EndpointSlice of Service svc.
func slice(ns, name, svc string, ports []*discoveryv1.EndpointPort, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1",
			Labels: map[string]string{LabelServiceName: svc}},
		AddressType: "IPv4",
		Ports:       ports,
	}
	for _, e := range eps {
		ready := e.ready
		x := &discoveryv1.Endpoint{Addresses: []string{e.ip}, Conditions: &discoveryv1.EndpointConditions{Ready: &ready}}
		if e.hostname != "" {
			h := e.hostname
			x.Hostname = &h
		}
		s.Endpoints = append(s.Endpoints, x)
	}
	return s
}

func epPort(name, proto string, n int32) *discoveryv1.EndpointPort {
	return &discoveryv1.EndpointPort{Name: &name, Protocol: &proto, Port: &n}
}

// fakeUpstream is a DNS server on loopback (UDP and TCP, one port) that
// answers from a table, counting the queries it gets by protocol; names
// in truncate are answered over UDP with the TC bit and no records.
type fakeUpstream struct {
	addr     string
	answers  map[string][]dns.RR // by "name type"
	truncate map[string]bool

	mu      sync.Mutex
	queries map[string]int // by protocol
}

// listenUDPAndTCP binds a UDP port and TCP on the same port, tried again
// with another port when TCP has the one UDP got taken (as Server.listen
// does: CI saw "bind: address already in use").
func listenUDPAndTCP(t *testing.T) (net.PacketConn, net.Listener) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, l
		}
		pc.Close()
		if attempt == 10 || !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatal(err)
		}
	}
}

func startUpstream(t *testing.T, answers map[string][]dns.RR, truncate map[string]bool) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{answers: answers, truncate: truncate, queries: map[string]int{}}
	pc, l := listenUDPAndTCP(t)
	u.addr = pc.LocalAddr().String()
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the Shutdowns below: cleanups run last first
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: u}, {Listener: l, Handler: u}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv.ActivateAndServe()
		}()
		<-started
		t.Cleanup(func() { srv.Shutdown() })
	}
	return u
}

func (u *fakeUpstream) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	proto := "udp"
	if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		proto = "tcp"
	}
	q := req.Question[0]
	key := strings.ToLower(q.Name) + " " + dns.TypeToString[q.Qtype]
	u.mu.Lock()
	u.queries[proto]++
	u.mu.Unlock()
	m := new(dns.Msg)
	m.SetReply(req)
	m.RecursionAvailable = true
	if proto == "udp" && u.truncate[key] {
		m.Truncated = true
	} else if ans, ok := u.answers[key]; ok {
		m.Answer = ans
	} else {
		m.Rcode = dns.RcodeNameError
	}
	w.WriteMsg(m)
}

func (u *fakeUpstream) count(proto string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.queries[proto]
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func mustRR(t *testing.T, s string) dns.RR {
	t.Helper()
	rr, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return rr
}
