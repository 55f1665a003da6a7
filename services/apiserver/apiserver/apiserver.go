// Package apiserver assembles the apiserver: etcd (embedded or external),
// one storage + watch cache + registry per kind, the gRPC server with its
// request chain, discovery, health and reflection, the metrics endpoint, and
// the maintenance loops (compaction, defragmentation, database size). The
// command in cmd/skiff-apiserver only turns flags into a Config.
package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"google.golang.org/grpc/test/bufconn"

	"skiff.dev/internal/client"
	"skiff.dev/internal/grpcmetrics"
	"skiff.dev/internal/object"
	"skiff.dev/internal/tracing"
	"skiff.dev/internal/version"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/audit"
	"skiff.dev/services/apiserver/authn"
	"skiff.dev/services/apiserver/authz"
	"skiff.dev/services/apiserver/encryption"
	"skiff.dev/services/apiserver/flowcontrol"
	"skiff.dev/services/apiserver/httpapi"
	"skiff.dev/services/apiserver/registry"
	"skiff.dev/services/apiserver/scheme"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/storage"
	"skiff.dev/services/apiserver/watchcache"
)

// Config is everything the apiserver is started with.
type Config struct {
	// DataDir holds the embedded etcd's data (DataDir/etcd). Ignored with EtcdServers.
	DataDir string
	// EtcdServers, when set, are the client URLs of an external etcd cluster.
	EtcdServers []string
	// EtcdCAFile verifies the external etcd's serving certificates;
	// EtcdCertFile and EtcdKeyFile are the client certificate shown to it
	// (kube-apiserver's --etcd-cafile, --etcd-certfile, --etcd-keyfile).
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// EtcdDialTimeout bounds the wait for an external etcd at start.
	EtcdDialTimeout time.Duration
	// Listen is the gRPC address ("127.0.0.1:0" picks a free port).
	Listen string
	// MetricsListen serves /metrics and /healthz over HTTP; "" disables it.
	MetricsListen string
	// CompactionInterval: every interval, revisions older than the previous
	// tick's are compacted. 0 disables compaction.
	CompactionInterval time.Duration
	// QuotaBackendBytes is the embedded etcd's backend size quota.
	QuotaBackendBytes int64
	// DefragThreshold: defragment after compaction when at least this many
	// bytes of the database are free (0: the default, 64 MiB; negative:
	// always).
	DefragThreshold int64
	// BookmarkInterval is how often watchers that asked get a BOOKMARK.
	BookmarkInterval time.Duration
	// WatchCacheWindow is how many recent events each watch cache keeps.
	WatchCacheWindow int
	// WatcherBuffer is how many events a watcher may lag before it is cut off.
	WatcherBuffer int
	// WatchBatchInterval is the least time between two batches of events
	// a watch cache publishes to its watchers (watchcache.Config); a
	// watcher sends a batch as one message. 0 means the default
	// (DefaultWatchBatchInterval); negative publishes every event at once.
	WatchBatchInterval time.Duration
	// EtcdUnsafeNoFsync skips fsync in the embedded etcd (tests only).
	EtcdUnsafeNoFsync bool
	// Cluster makes the embedded etcd a member of a cluster of
	// control-plane members (members.go); the zero value is a cluster of
	// one.
	Cluster ClusterOptions
	Logger  *zap.Logger
	// Registry receives every metric; nil makes a private one.
	Registry *prometheus.Registry
	// GitVersion and GitCommit are reported by discovery (empty: the
	// build's, internal/version).
	GitVersion string
	GitCommit  string
	// Now is the clock (tests inject one).
	Now func() time.Time

	// Security. The zero values are off: plain-text gRPC, every request is
	// user system:unsecured (in system:masters), everything is allowed, no
	// admission plugin, no limits, no audit log; in-process tests start so.
	// The command's flags turn them on (it refuses plain text without
	// --insecure).
	Authn       authn.Options
	Authz       authz.Options
	Admission   admission.Options
	FlowControl flowcontrol.Options
	Audit       audit.Options
	// Tracing exports spans of the API's calls and of the apiserver's own
	// (to etcd, to node agents); the zero value is off.
	Tracing tracing.Options
	// ServiceClusterIPRange is the IPv4 CIDR Services' cluster IPs are
	// allocated from (its first address is the kubernetes Service's);
	// ServiceNodePortRange the node ports' ("30000-32767").
	ServiceClusterIPRange string
	ServiceNodePortRange  string
	// ServiceRepairInterval is how often allocations no Service holds are
	// freed (0: DefaultServiceRepairInterval).
	ServiceRepairInterval time.Duration
	// AdvertiseAddress is the address the kubernetes Service's endpoint
	// names ("": the listen address, or this host's first IPv4 address).
	AdvertiseAddress string
	// EndpointLeaseDuration is the duration of the lease by which this
	// member is listed in the kubernetes Service's endpoints (0:
	// DefaultEndpointLeaseDuration); it is renewed every two thirds of it.
	EndpointLeaseDuration time.Duration
	// AccessLog logs an info line per request: user, verb, resource,
	// namespace, name, code, duration (server.Chain.AccessLog).
	AccessLog bool
	// EncryptionProviderConfig is the path of an EncryptionConfiguration
	// (package encryption): the resources it names are encrypted at rest.
	// Encryption, when set, is used instead of the file (tests).
	EncryptionProviderConfig string
	Encryption               *encryption.Configuration
}

// DefaultWatchBatchInterval bounds the latency batching adds to a watch.
const DefaultWatchBatchInterval = 10 * time.Millisecond

// Defaults fills unset fields.
func (c *Config) Defaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:6443"
	}
	if c.QuotaBackendBytes == 0 {
		c.QuotaBackendBytes = 8 << 30
	}
	if c.DefragThreshold == 0 {
		c.DefragThreshold = 64 << 20
	}
	if c.EtcdDialTimeout == 0 {
		c.EtcdDialTimeout = 10 * time.Second
	}
	if c.WatchBatchInterval == 0 {
		c.WatchBatchInterval = DefaultWatchBatchInterval
	}
	if c.BookmarkInterval == 0 {
		c.BookmarkInterval = time.Minute
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ServiceClusterIPRange == "" {
		c.ServiceClusterIPRange = DefaultServiceClusterIPRange
	}
	if c.ServiceNodePortRange == "" {
		c.ServiceNodePortRange = DefaultServiceNodePortRange
	}
	if c.GitVersion == "" {
		v := version.Get()
		c.GitVersion, c.GitCommit = v.GitVersion, v.GitCommit
	}
}

// Server is a running apiserver.
type Server struct {
	cfg    Config
	log    *zap.Logger
	now    func() time.Time
	scheme *scheme.Scheme
	routes server.Routes

	etcd *embeddedEtcd // nil with external etcd
	join *joinState    // a member joining a cluster (joinCluster), until its etcd started
	// leaderGuard ends writes lost with etcd's leader (members of a
	// cluster; nil otherwise).
	leaderGuard *storage.LeaderGuard
	client      *clientv3.Client
	// maintClient reaches etcd over gRPC for status and defragmentation.
	maintClient *clientv3.Client
	watcher     storage.Watcher
	storeM      *storage.Metrics
	encryption  *encryption.Set // nil: every value stored plain
	cacheM      *watchcache.Metrics
	caches      []runner
	counts      []func() (string, int)
	grpc        *grpc.Server
	methods     *server.Methods // the gRPC API's methods, for the HTTP API
	http        *http.Server    // the HTTP API (package httpapi), on the same port
	serverTLS   *tls.Config     // the port's (nil: plain text)
	serving     atomic.Bool     // caches loaded, post-start hooks done: readyz
	stopping    atomic.Bool     // shutting down: livez fails
	health      *health.Server
	logs        *logProxy // Pods.Logs, to the node agents
	lis         net.Listener
	metrics     *http.Server
	metricsL    net.Listener
	maint       *maintenanceMetrics
	// etcdClientTLS is the embedded etcd's client TLS, client side.
	etcdClientTLS transport.TLSInfo
	// objects counts what a List of each kind would read (flow control's
	// work estimate), by API group and resource; written by install only.
	objects map[groupResource]func(namespace string, upTo int) (int, error)
	// registries are the storage versions' registries by kinds.Kind.GVK
	// (*registry.Registry[S]); slots count each one's other served
	// versions; pods is the Pods server. Written by install only.
	registries map[string]any
	slots      map[string]int
	pods       *podsServer

	tracing *tracing.Tracing // nil: off

	tls           *authn.Material // nil with authentication off (wireTLS loads it)
	loopbackToken string
	// bootstrapTokens reads bootstrap tokens' Secrets (wireAuthn; nil
	// with authentication off).
	bootstrapTokens authn.SecretLookup
	loopbackLis     *bufconn.Listener
	loopback        *grpc.ClientConn
	postStart       []postStartHook
	services        *services // Services' cluster IPs and node ports
	// admissionTargets give each registry the admission chain (wire_admission.go).
	admissionTargets []func(registry.Admission)
}

type runner interface {
	Run(ctx context.Context)
	WaitReady(ctx context.Context) error
}

// newRegistry wires storage and watch cache for one kind.
func newRegistry[S object.Object](s *Server, strategy *registry.Strategy[S], newObj func() S) *registry.Registry[S] {
	k := strategy.Kind
	store := storage.New(s.client, s.watcher, k.GVK.Group, k.Resource, newObj, s.storeM)
	if t := s.encryption.For(k.GVK.Group, k.Resource); t != nil {
		store.SetTransformer(t)
	}
	store.SetLeaderGuard(s.leaderGuard)
	// Every selectable field must name a field of the type: a typo is a
	// bug, caught by any test that starts an apiserver.
	pruner, err := storage.NewFieldPruner(newObj().ProtoReflect().Descriptor(), k.FieldSelectors)
	if err != nil {
		panic(fmt.Sprintf("kind %s: %v", k.GVK.Kind, err))
	}
	cache := watchcache.New(watchcache.Config[S]{
		Store:            store,
		Fields:           strategy.FieldSet,
		FieldPruner:      pruner,
		WindowSize:       s.cfg.WatchCacheWindow,
		WatcherBuffer:    s.cfg.WatcherBuffer,
		BookmarkInterval: s.cfg.BookmarkInterval,
		BatchInterval:    max(s.cfg.WatchBatchInterval, 0),
		Logger:           s.log,
		Metrics:          s.cacheM,
	})
	s.caches = append(s.caches, cache)
	s.counts = append(s.counts, func() (string, int) { return k.Resource, cache.Count() })
	reg := registry.New(strategy, store, cache, s.now)
	if s.objects == nil {
		s.objects = map[groupResource]func(string, int) (int, error){}
	}
	s.objects[groupResource{k.GVK.Group, k.Resource}] = reg.CountObjects
	s.admissionTargets = append(s.admissionTargets, reg.SetAdmission)
	return reg
}

// New starts etcd (or connects to it) and builds the server. Call Run.
func New(cfg Config) (*Server, error) {
	cfg.Defaults()
	tr, err := tracing.New(context.Background(), cfg.Tracing, ServiceName, cfg.Logger)
	if err != nil {
		return nil, err
	}
	s, err := newServer(cfg, tr)
	if err != nil {
		_ = tr.Shutdown(context.Background())
		return nil, err
	}
	return s, nil
}

func newServer(cfg Config, tr *tracing.Tracing) (*Server, error) {
	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		now:     cfg.Now,
		scheme:  scheme.New(),
		routes:  server.Routes{},
		tracing: tr,
	}
	reg := cfg.Registry
	if err := s.loadEncryption(); err != nil {
		return nil, err
	}
	// A joining member receives the cluster's CA with the answer to its
	// join: before its TLS material is loaded, which etcd's peer TLS uses.
	if err := s.joinCluster(); err != nil {
		return nil, err
	}
	serverTLS, loopbackCreds, err := s.wireTLS()
	if err != nil {
		return nil, err
	}
	if err := s.connectEtcd(); err != nil {
		return nil, err
	}
	if s.services, err = newServices(s); err != nil {
		s.closeEtcd()
		return nil, err
	}
	s.storeM = storage.NewMetrics(reg)
	s.cacheM = watchcache.NewMetrics(reg)
	s.maint = newMaintenanceMetrics(reg)

	chain := server.NewChain(s.routes, server.NewMetrics(reg), s.log)
	chain.AccessLog = cfg.AccessLog
	grpcMetrics := grpcmetrics.New(reg)
	if err := s.newLoopback(loopbackCreds); err != nil {
		s.closeEtcd()
		return nil, err
	}
	opts := []grpc.ServerOption{
		// The port's Split has done the TLS handshake (httpapi.Split).
		grpc.Creds(httpapi.Handshaken{}),
		grpc.ForceServerCodecV2(server.NewCodec()),
		grpc.ChainUnaryInterceptor(grpcMetrics.UnaryServerInterceptor(), chain.Unary),
		grpc.ChainStreamInterceptor(grpcMetrics.StreamServerInterceptor(), chain.Stream),
		grpc.StatsHandler(chain.StatsHandler()),
		grpc.MaxRecvMsgSize(storage.MaxObjectBytes + (512 << 10)),
		// Reused handler goroutines keep their grown stacks: no stack
		// copying per request (a new goroutine per call when all are busy).
		grpc.NumStreamWorkers(128),
		grpc.InitialWindowSize(client.StreamWindowBytes), grpc.InitialConnWindowSize(client.ConnWindowBytes),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
	}
	s.grpc = grpc.NewServer(append(opts, s.tracing.ServerOptions()...)...)
	s.methods = server.NewMethods(chain)
	s.install(s.methods.Registrar(s.grpc))
	s.logs.dial = s.tracing.DialOptions()
	if err := s.wireSecurity(chain); err != nil {
		s.closeEtcd()
		return nil, err
	}
	discoveryv1.RegisterDiscoveryServer(s.grpc, &server.Discovery{Scheme: s.scheme, GitVersion: cfg.GitVersion, GitCommit: cfg.GitCommit})
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)

	if s.lis, err = net.Listen("tcp", cfg.Listen); err != nil {
		s.closeEtcd()
		return nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	s.serverTLS = serverTLS
	s.http = &http.Server{
		Handler: s.withMembers(httpapi.New(httpapi.Config{
			GRPC:    s.grpc,
			Methods: s.methods,
			Version: version.Info{GitVersion: cfg.GitVersion, GitCommit: cfg.GitCommit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH},
			Ready:   s.serving.Load,
			Live:    func() bool { return !s.stopping.Load() },
			Log:     s.log,
		})),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          zap.NewStdLog(s.log.Named("http")),
	}
	if cfg.MetricsListen != "" {
		if s.metricsL, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			s.lis.Close()
			s.closeEtcd()
			return nil, fmt.Errorf("metrics listen %s: %w", cfg.MetricsListen, err)
		}
		mux := http.NewServeMux()
		// Ours, plus the default registry: Go runtime, process, and the embedded etcd's own metrics.
		mux.Handle("/metrics", promhttp.HandlerFor(prometheus.Gatherers{reg, etcdMetrics{prometheus.DefaultGatherer}}, promhttp.HandlerOpts{}))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
			if resp, _ := s.health.Check(r.Context(), &healthpb.HealthCheckRequest{}); resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ok\n"))
		})
		s.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	}
	return s, nil
}

// Addr is the gRPC address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// MetricsAddr is the HTTP metrics address, or "".
func (s *Server) MetricsAddr() string {
	if s.metricsL == nil {
		return ""
	}
	return s.metricsL.Addr().String()
}

// EtcdClient is the client the apiserver uses (in-process for embedded etcd).
func (s *Server) EtcdClient() *clientv3.Client { return s.client }

// EtcdEndpoint is the embedded etcd's client URL ("" with external etcd).
func (s *Server) EtcdEndpoint() string {
	if s.etcd == nil {
		return ""
	}
	return s.etcd.clientURL
}

// EtcdClientTLS names the files of the embedded etcd's client TLS: its
// CA and the client certificate it requires (zero with external etcd).
func (s *Server) EtcdClientTLS() transport.TLSInfo { return s.etcdClientTLS }

// Scheme is the server's scheme.
func (s *Server) Scheme() *scheme.Scheme { return s.scheme }

// Run serves until ctx ends, then shuts down gracefully: health turns
// NOT_SERVING, watches end with a clean status, in-flight calls finish, and
// etcd is closed last.
func (s *Server) Run(ctx context.Context) error {
	defer s.tracing.Stop(s.log) // last: the spans of the shutdown too
	runCtx, stopCaches := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, c := range s.caches {
		wg.Add(1)
		go func() { defer wg.Done(); c.Run(runCtx) }()
	}
	for _, c := range s.caches {
		if err := c.WaitReady(ctx); err != nil {
			stopCaches()
			wg.Wait()
			s.closeEtcd()
			return fmt.Errorf("watch caches did not load: %w", err)
		}
	}
	s.measure(ctx) // the size metrics exist from the first scrape
	wg.Add(1)
	go func() { defer wg.Done(); s.maintain(runCtx) }()
	errc := make(chan error, 3)
	// One port, two protocols (httpapi.Split); the loopback's connections
	// are all gRPC.
	grpcL, httpL := httpapi.Split(s.lis, s.serverTLS, s.log)
	loopL, _ := httpapi.Split(s.loopbackLis, s.serverTLS, s.log)
	go func() { errc <- s.grpc.Serve(grpcL) }()
	go func() { _ = s.grpc.Serve(loopL) }()
	go func() {
		if err := s.http.Serve(httpL); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			errc <- err
		}
	}()
	hooksCtx, stopHooks := context.WithCancel(runCtx)
	defer stopHooks()
	for _, h := range s.postStart {
		if err := h.run(hooksCtx); err != nil {
			s.log.Error("post-start hook failed", zap.String("hook", h.name), zap.Error(err))
			s.grpc.Stop()
			stopCaches()
			wg.Wait()
			s.closeEtcd()
			return fmt.Errorf("%s: %w", h.name, err)
		}
	}
	wg.Add(1)
	go func() { defer wg.Done(); s.repairServices(runCtx) }()
	endpointsCtx, stopEndpoints := context.WithCancel(runCtx)
	endpointsDone := make(chan struct{})
	go func() { defer close(endpointsDone); s.reconcileEndpointsLoop(endpointsCtx) }()
	if s.metrics != nil {
		go func() {
			if err := s.metrics.Serve(s.metricsL); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.serving.Store(true)
	s.log.Info("apiserver serving", zap.String("grpc", s.Addr()), zap.String("metrics", s.MetricsAddr()), zap.String("etcd", s.EtcdEndpoint()), zap.Int("kinds", len(s.scheme.Kinds())))

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		s.log.Error("server failed", zap.Error(err))
	}
	s.log.Info("apiserver shutting down")
	// Out of the kubernetes Service's endpoints first, while the loopback
	// still serves: clients in pods move to the other members.
	stopEndpoints()
	<-endpointsDone
	{
		ectx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := s.reconcileEndpoints(ectx, false); err != nil {
			s.log.Warn("removing this member from the kubernetes Service's endpoints", zap.Error(err))
		}
		cancel()
	}
	s.stopping.Store(true)
	s.serving.Store(false)
	s.health.Shutdown()
	stopCaches() // ends every watch with a ServiceUnavailable status
	done := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.grpc.Stop()
	}
	s.logs.close()
	_ = s.loopback.Close()
	{
		hctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.http.Shutdown(hctx)
		cancel()
	}
	if s.metrics != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.metrics.Shutdown(sctx)
		cancel()
	}
	wg.Wait()
	s.closeEtcd()
	s.log.Info("apiserver stopped")
	return err
}
