package scenarios

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	clusterdns "skiff.dev/services/node-agent/dns"
)

var (
	figDNSP99 = Figure{Name: "dns.query_p99_us", Unit: "us", Target: AtMost(1000)}
	figDNSP50 = Figure{Name: "dns.query_p50_us", Unit: "us"}
	figDNSCPU = Figure{Name: "dns.query_cpu_us_per_query", Unit: "us CPU/query"}
)

// The dns scenario's load: dnsServices Services indexed, queried by name
// at dnsRate queries per second over dnsSockets UDP sockets.
const (
	dnsServices = 1000
	dnsRate     = 5000
	dnsSockets  = 8
	// dnsDrain bounds the wait for the last answers after the last query;
	// a query still unanswered then counts with this latency.
	dnsDrain = time.Second
)

func dnsScenario() *Scenario {
	return &Scenario{
		Name: "dns",
		Summary: fmt.Sprintf("the node agent's cluster DNS server on loopback, %d Services indexed, A queries for their names at %d/s (open loop, paced)",
			dnsServices, dnsRate),
		Figures: []Figure{figDNSP99, figDNSP50, figDNSCPU},
		Run:     runDNS,
	}
}

func runDNS(ctx context.Context, env *Env, rs *Results) error {
	srv, err := clusterdns.New(clusterdns.Config{
		Listen: "127.0.0.1:0",
		// Never asked: every query is for a cluster name. Port 9 of
		// loopback (discard) keeps the server from reading resolv.conf.
		Upstreams:  []string{"127.0.0.1:9"},
		Logger:     zap.NewNop(),
		Registerer: prometheus.NewRegistry(),
	}, clusterdns.Informers{})
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(sctx) }()
	defer func() {
		stop()
		<-done
	}()
	names := make([]string, dnsServices)
	for i := range dnsServices {
		name := "svc-" + strconv.Itoa(i)
		srv.Index().SetService(&corev1.Service{
			Metadata: &metav1.ObjectMeta{Namespace: "bench", Name: name, ResourceVersion: "1"},
			Spec: &corev1.ServiceSpec{
				Type: "ClusterIP", ClusterIp: fmt.Sprintf("10.96.%d.%d", i/250, i%250+1),
				Ports: []*corev1.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}},
			},
		})
		names[i] = name + ".bench.svc.cluster.local."
	}
	env.logf("dns: %d Services indexed, server on %s", dnsServices, srv.Addr())

	if _, err := dnsLoad(ctx, srv.Addr(), names, env.Config.Warmup); err != nil {
		return fmt.Errorf("warmup: %w", err)
	}
	res, err := dnsLoad(ctx, srv.Addr(), names, env.Config.Duration)
	if err != nil {
		return err
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	h := &res.latency
	rate := float64(res.sent) / res.elapsed.Seconds()
	note := fmt.Sprintf("%d queries over %d UDP sockets at %.0f/s in %.1fs; p50 %.0f us, p99 %.0f us, max %.0f us; %d unanswered within %v, %d not NOERROR with an answer",
		res.sent, dnsSockets, rate, res.elapsed.Seconds(), us(h.Percentile(50)), us(h.Percentile(99)), us(h.Max()), res.lost, dnsDrain, res.bad)
	rs.Add(figDNSP99, us(h.Percentile(99)), note)
	rs.Add(figDNSP50, us(h.Percentile(50)), "from each query's send to its answer's arrival")
	cpu := 0.0
	if res.sent > 0 {
		cpu = float64(res.cpu.Microseconds()) / float64(res.sent)
	}
	rs.Add(figDNSCPU, cpu, "process CPU (DNS server + load generator, same process) / queries")
	if res.bad > 0 {
		return fmt.Errorf("%d of %d answers were not NOERROR with an answer", res.bad, res.sent)
	}
	return nil
}

// dnsResult is what one run of the load measured.
type dnsResult struct {
	sent, lost, bad int64
	elapsed, cpu    time.Duration
	latency         Histogram
}

// dnsLoad sends A queries for names, round robin, at dnsRate per second
// for d, spread over dnsSockets connected UDP sockets, each with a sender
// paced on its own schedule (open loop: a send never waits for an answer)
// and a reader timing the answers by their ID.
func dnsLoad(ctx context.Context, addr string, names []string, d time.Duration) (*dnsResult, error) {
	// The queries, packed once; each send writes its ID into a copy.
	packed := make([][]byte, len(names))
	for i, n := range names {
		m := new(dns.Msg)
		m.SetQuestion(n, dns.TypeA)
		b, err := m.Pack()
		if err != nil {
			return nil, err
		}
		packed[i] = b
	}
	settle()
	type socket struct {
		conn     *net.UDPConn
		sentAt   [1 << 16]atomic.Int64 // by ID: ns since base, 0 when answered
		sent     atomic.Int64
		answered atomic.Int64
		bad      atomic.Int64
		hist     Histogram
	}
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	socks := make([]*socket, dnsSockets)
	for i := range socks {
		c, err := net.DialUDP("udp", nil, raddr)
		if err != nil {
			for _, s := range socks[:i] {
				s.conn.Close()
			}
			return nil, err
		}
		socks[i] = &socket{conn: c}
	}
	base := time.Now()
	var finished atomic.Bool                // every query is sent
	wake := make(chan struct{}, dnsSockets) // a socket has all its answers
	var readers sync.WaitGroup
	for _, s := range socks {
		readers.Add(1)
		go func() {
			defer readers.Done()
			buf := make([]byte, 4096)
			for {
				n, err := s.conn.Read(buf)
				if err != nil {
					return // closed
				}
				now := int64(time.Since(base))
				if n < 12 {
					s.bad.Add(1)
					continue
				}
				id := binary.BigEndian.Uint16(buf[0:2])
				at := s.sentAt[id].Swap(0)
				if at == 0 {
					continue // a duplicate, or an answer counted as lost
				}
				s.hist.Record(time.Duration(now - at))
				if rcode, ancount := buf[3]&0xf, binary.BigEndian.Uint16(buf[6:8]); rcode != dns.RcodeSuccess || ancount == 0 {
					s.bad.Add(1)
				}
				if n := s.answered.Add(1); finished.Load() && n >= s.sent.Load() {
					select {
					case wake <- struct{}{}:
					default:
					}
				}
			}
		}()
	}

	interval := time.Second * dnsSockets / dnsRate // per socket
	total := int(d / interval)                     // per socket
	cpu0, start := cpuTime(), time.Now()
	var senders sync.WaitGroup
	var sendErr atomic.Pointer[error]
	for si, s := range socks {
		senders.Add(1)
		go func() {
			defer senders.Done()
			// Staggered so that the sockets' sends interleave.
			first := start.Add(interval * time.Duration(si) / dnsSockets)
			q := make([]byte, len(packed[0])+64)
			for i := range total {
				if ctx.Err() != nil {
					return
				}
				if wait := time.Until(first.Add(interval * time.Duration(i))); wait > 0 {
					time.Sleep(wait)
				}
				id := uint16(i)
				p := packed[(i*dnsSockets+si)%len(packed)]
				q = append(q[:0], p...)
				binary.BigEndian.PutUint16(q[0:2], id)
				s.sentAt[id].Store(max(int64(time.Since(base)), 1))
				if _, err := s.conn.Write(q); err != nil {
					sendErr.CompareAndSwap(nil, &err)
					return
				}
				s.sent.Add(1)
			}
		}()
	}
	senders.Wait()
	elapsed := time.Since(start)
	// The last answers: wait for them (a few hundred µs) up to dnsDrain.
	finished.Store(true)
	drain := time.NewTimer(dnsDrain)
	defer drain.Stop()
drained:
	for {
		complete := 0
		for _, s := range socks {
			if s.answered.Load() >= s.sent.Load() {
				complete++
			}
		}
		if complete == len(socks) {
			break
		}
		select {
		case <-wake:
		case <-drain.C:
			break drained
		}
	}
	cpu := cpuTime() - cpu0
	for _, s := range socks {
		s.conn.Close()
	}
	readers.Wait()
	res := &dnsResult{elapsed: elapsed, cpu: cpu}
	for _, s := range socks {
		res.sent += s.sent.Load()
		res.bad += s.bad.Load()
		lost := s.sent.Load() - s.answered.Load()
		res.lost += lost
		for range lost {
			s.hist.Record(dnsDrain)
		}
		res.latency.Merge(&s.hist)
	}
	if p := sendErr.Load(); p != nil {
		return res, fmt.Errorf("sending a query: %w", *p)
	}
	if ctx.Err() != nil {
		return res, errors.Join(ctx.Err(), errors.New("the dns load was interrupted"))
	}
	return res, nil
}
