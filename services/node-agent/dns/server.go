package dns

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"go.uber.org/zap"

	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
)

// Informers feed the server's Index. The server only adds handlers (and,
// for TrackNamespaces, nothing else): whoever made them runs them, as the
// agent's shared informer factory does. All nil: the index is fed by hand
// (Server.Index), and counts as synced.
type Informers struct {
	Services       *informer.Informer[*corev1.Service]
	EndpointSlices *informer.Informer[*discoveryv1.EndpointSlice]
	// Namespaces is optional: with it, names of a namespace that does not
	// exist are NXDOMAIN (Index.TrackNamespaces).
	Namespaces *informer.Informer[*corev1.Namespace]
}

// Server is the cluster DNS server; see the package documentation.
type Server struct {
	cfg    Config
	log    *zap.Logger
	zone   string // lower case, fully qualified
	index  *Index
	fwd    *forwarder
	m      *metrics
	synced func() bool
	// shuffle orders the A and SRV records of an answer (rand.Shuffle).
	shuffle func(n int, swap func(i, j int))

	udp net.PacketConn
	tcp net.Listener

	mu      sync.Mutex
	ran     bool
	baseCtx context.Context // ends when Run ends: forwards in flight stop
}

// New builds a server: its index (fed by inf's handlers) and its UDP and
// TCP sockets, bound at once so that an address in use is an error here.
// Call Run to serve, or Close.
func New(cfg Config, inf Informers) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if (inf.Services == nil) != (inf.EndpointSlices == nil) {
		return nil, errors.New("dns: Informers.Services and Informers.EndpointSlices are given together or not at all")
	}
	ups, err := cfg.upstreams()
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		zone:    fqdn(cfg.Zone),
		index:   NewIndex(cfg.Zone),
		shuffle: rand.Shuffle,
		baseCtx: context.Background(),
	}
	s.m = newMetrics(cfg.Registerer, s.index)
	if err := s.listen(); err != nil {
		return nil, err
	}
	listen, _ := netip.ParseAddrPort(s.Addr())
	kept, dropped := withoutSelf(ups, listen, localAddrs())
	if len(dropped) > 0 {
		s.log.Info("Left out upstream resolvers that are this server itself", zap.Stringers("upstreams", dropped))
	}
	if len(kept) == 0 {
		s.log.Warn("No upstream resolver: names outside the cluster get SERVFAIL",
			zap.Strings("configured", cfg.Upstreams), zap.String("resolvConf", cfg.ResolvConf))
	}
	s.fwd = newForwarder(kept, cfg.Timeout, cfg.MaxConcurrentForwards, s.m, s.log)
	s.synced = func() bool { return true }
	if inf.Services != nil {
		s.feed(inf)
	}
	return s, nil
}

// feed registers the index's handlers on the informers.
func (s *Server) feed(inf Informers) {
	x := s.index
	inf.Services.AddHandler(informer.Handler[*corev1.Service]{
		OnAdd:    x.SetService,
		OnUpdate: func(_, cur *corev1.Service) { x.SetService(cur) },
		OnDelete: func(o *corev1.Service) { x.DeleteService(o.GetMetadata().GetNamespace(), o.GetMetadata().GetName()) },
	})
	inf.EndpointSlices.AddHandler(informer.Handler[*discoveryv1.EndpointSlice]{
		OnAdd:    x.SetEndpointSlice,
		OnUpdate: func(_, cur *discoveryv1.EndpointSlice) { x.SetEndpointSlice(cur) },
		OnDelete: func(o *discoveryv1.EndpointSlice) {
			x.DeleteEndpointSlice(o.GetMetadata().GetNamespace(), o.GetMetadata().GetName())
		},
	})
	synced := []interface{ HasSynced() bool }{inf.Services, inf.EndpointSlices}
	if inf.Namespaces != nil {
		x.TrackNamespaces()
		inf.Namespaces.AddHandler(informer.Handler[*corev1.Namespace]{
			OnAdd:    func(o *corev1.Namespace) { x.SetNamespace(o.GetMetadata().GetName()) },
			OnDelete: func(o *corev1.Namespace) { x.DeleteNamespace(o.GetMetadata().GetName()) },
		})
		synced = append(synced, inf.Namespaces)
	}
	s.synced = func() bool {
		for _, i := range synced {
			if !i.HasSynced() {
				return false
			}
		}
		return true
	}
}

// listen binds UDP, then TCP on the same port (with port 0, the port UDP
// got: tried again a few times if TCP has it taken).
func (s *Server) listen() error {
	host, port, _ := net.SplitHostPort(s.cfg.Listen)
	for attempt := 0; ; attempt++ {
		udp, err := net.ListenPacket("udp", s.cfg.Listen)
		if err != nil {
			return fmt.Errorf("dns: listening on udp %s: %w", s.cfg.Listen, err)
		}
		addr := net.JoinHostPort(host, strconv.Itoa(udp.LocalAddr().(*net.UDPAddr).Port))
		tcp, err := net.Listen("tcp", addr)
		if err == nil {
			// A process stall (CPU contention, GC) queues queries in the
			// socket instead of dropping them: a dropped query costs its
			// client a retry after seconds (glibc's timeout is 5 s). The
			// kernel caps the size at net.core.rmem_max.
			if err := udp.(*net.UDPConn).SetReadBuffer(UDPReadBuffer); err != nil {
				s.log.Warn("Could not enlarge the UDP receive buffer", zap.Error(err))
			}
			s.udp, s.tcp = udp, tcp
			return nil
		}
		udp.Close()
		if port != "0" || attempt == 10 || !errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("dns: listening on tcp %s: %w", addr, err)
		}
	}
}

// Addr is the address served, "ip:port", the same for UDP and TCP.
func (s *Server) Addr() string { return s.udp.LocalAddr().String() }

// Index is the server's index: tests and benchmarks feed it directly.
func (s *Server) Index() *Index { return s.index }

// Close releases the sockets of a server that was never Run.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ran {
		return errors.New("dns: Close after Run: end Run's context instead")
	}
	s.ran = true
	return errors.Join(s.udp.Close(), s.tcp.Close())
}

// Run serves over UDP and TCP until ctx ends, then stops the forwards in
// flight, closes the sockets and waits for the handlers; it returns nil
// then, or the first error of a listener that failed before.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.ran {
		s.mu.Unlock()
		return errors.New("dns: Run called twice, or after Close")
	}
	s.ran = true
	base, cancel := context.WithCancel(context.Background())
	s.baseCtx = base
	s.mu.Unlock()
	defer cancel()

	servers := []*dns.Server{
		{PacketConn: s.udp, Handler: s},
		{Listener: s.tcp, Handler: s, ReadTimeout: 10 * time.Second, IdleTimeout: func() time.Duration { return 10 * time.Second }},
	}
	errc := make(chan error, len(servers))
	started := make(chan struct{}, len(servers))
	for _, srv := range servers {
		srv.NotifyStartedFunc = func() { started <- struct{}{} }
		go func() { errc <- srv.ActivateAndServe() }()
	}
	s.log.Info("Cluster DNS serving", zap.String("addr", s.Addr()), zap.String("zone", s.zone),
		zap.Stringers("upstreams", s.fwd.ups))

	var firstErr error
	running := 0
	for pending := len(servers); pending > 0; pending-- {
		select {
		case <-started:
			running++
		case err := <-errc:
			firstErr = errors.Join(firstErr, err)
		}
	}
	if firstErr == nil {
		select {
		case <-ctx.Done():
		case err := <-errc:
			firstErr = err
			running--
		}
	}
	cancel() // forwards in flight end now
	for _, srv := range servers {
		// A server that failed already has returned; its Shutdown says
		// "not started", which is no news.
		_ = srv.Shutdown()
	}
	for ; running > 0; running-- {
		if err := <-errc; err != nil && firstErr == nil {
			firstErr = err
		}
	}
	// Sockets of a server that never started are closed here.
	s.udp.Close()
	s.tcp.Close()
	if firstErr != nil {
		return fmt.Errorf("dns: serving %s: %w", s.Addr(), firstErr)
	}
	return nil
}

func (s *Server) ctx() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.baseCtx
}

// ServeDNS answers one query: names of the zone and known reverse names
// from the index, everything else from the upstream resolvers.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	start := time.Now()
	resp, source := s.answer(req)
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = max(int(opt.UDPSize()), dns.MinMsgSize)
		}
		resp.Truncate(size)
	}
	if err := w.WriteMsg(resp); err != nil {
		s.log.Debug("Writing a DNS answer failed", zap.Error(err))
	}
	qtype := uint16(0)
	if len(req.Question) > 0 {
		qtype = req.Question[0].Qtype
	}
	s.m.requests.WithLabelValues(typeLabel(qtype), rcodeLabel(resp.Rcode)).Inc()
	s.m.duration.WithLabelValues(source).Observe(time.Since(start).Seconds())
}

// answer computes the reply to req and says who made it.
func (s *Server) answer(req *dns.Msg) (*dns.Msg, string) {
	if req.Opcode != dns.OpcodeQuery {
		return reply(req, dns.RcodeNotImplemented), sourceServer
	}
	if len(req.Question) != 1 {
		return reply(req, dns.RcodeFormatError), sourceServer
	}
	q := req.Question[0]
	qname := fqdn(q.Name)
	if q.Qclass == dns.ClassINET {
		if base, ok := inZone(qname, s.zone); ok {
			return s.withEdns(req, s.answerZone(s.ctx(), req, base)), sourceCluster
		}
		if ip, ok := parseReverse(qname); ok {
			if m, ok := s.answerReverse(req, ip); ok {
				return s.withEdns(req, m), sourceCluster
			}
		}
	}
	resp, err := s.fwd.exchange(s.ctx(), req)
	if err != nil {
		s.log.Debug("Forwarding a query failed", zapName(q.Name), zap.Error(err))
		reason := failError
		var fe *forwardError
		if errors.As(err, &fe) {
			reason = fe.reason
		}
		s.m.failures.WithLabelValues(reason).Inc()
		if reason == failOverloaded {
			return s.withEdns(req, reply(req, dns.RcodeRefused)), sourceForward
		}
		m := s.withEdns(req, reply(req, dns.RcodeServerFailure))
		if opt := m.IsEdns0(); opt != nil {
			// RFC 8914: say why, for dig and the curious.
			opt.Option = append(opt.Option, &dns.EDNS0_EDE{
				InfoCode:  dns.ExtendedErrorCodeNoReachableAuthority,
				ExtraText: "skiff cluster DNS: " + err.Error(),
			})
		}
		return m, sourceForward
	}
	return resp, sourceForward
}

func reply(req *dns.Msg, rcode int) *dns.Msg {
	m := new(dns.Msg)
	m.SetRcode(req, rcode)
	m.RecursionAvailable = true
	return m
}

// withEdns adds an OPT record to m when req has one (RFC 6891).
func (s *Server) withEdns(req, m *dns.Msg) *dns.Msg {
	if opt := req.IsEdns0(); opt != nil {
		m.SetEdns0(max(opt.UDPSize(), dns.MinMsgSize), opt.Do())
	}
	return m
}

func zapName(n string) zap.Field { return zap.String("name", n) }
func zapErr(err error) zap.Field { return zap.Error(err) }
