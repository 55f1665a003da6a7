// Package apiservertest starts a real apiserver in-process, on an embedded
// etcd in a temporary directory, for tests and benchmarks of every
// component. It owns nothing but the start and the cleanup.
package apiservertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/user"
)

// Server is a running in-process apiserver with a client connection.
type Server struct {
	*apiserver.Server
	// Conn is a client connection: with security on (Secure), as user
	// AdminUser in system:masters.
	Conn     *grpc.ClientConn
	Registry *prometheus.Registry
	DataDir  string
	// Security is the TLS material and credentials helpers when the server
	// runs with TLS and authentication (Secure); nil otherwise.
	*Security
	stop context.CancelFunc
	done chan error
	once sync.Once
}

// Option adjusts the config before start.
type Option func(*apiserver.Config)

// WithConfig changes the config.
func WithConfig(fn func(*apiserver.Config)) Option { return Option(fn) }

// Secure starts the server with TLS and authentication on (its CA and
// certificates in the test's data directory), as skiff-apiserver runs
// without --insecure. Conn is then an admin (system:masters); ConnAs,
// ConnWithToken and ClientConfig give other identities.
func Secure() Option { return func(c *apiserver.Config) { c.Authn.Enabled = true } }

// Start starts an apiserver for tb and stops it when tb ends.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	dir := tb.TempDir()
	var log *zap.Logger
	if t, ok := tb.(*testing.T); ok && testing.Verbose() {
		log = zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	} else {
		log = zap.NewNop()
	}
	reg := prometheus.NewRegistry()
	cfg := apiserver.Config{
		DataDir:           dir,
		Listen:            "127.0.0.1:0",
		MetricsListen:     "127.0.0.1:0",
		Logger:            log,
		Registry:          reg,
		EtcdUnsafeNoFsync: true,
		BookmarkInterval:  time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := StartConfig(cfg)
	if err != nil {
		tb.Fatalf("starting apiserver: %v", err)
	}
	s.DataDir = dir
	tb.Cleanup(s.Stop)
	return s
}

// StartConfig starts an apiserver from cfg and waits until it serves.
func StartConfig(cfg apiserver.Config) (*Server, error) {
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	srv, err := apiserver.New(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Server: srv, Registry: cfg.Registry, stop: cancel, done: make(chan error, 1)}
	go func() { s.done <- srv.Run(ctx) }()
	var conn *grpc.ClientConn
	if cfg.Authn.Enabled {
		if s.Security, err = newSecurity(srv.Addr(), cfg.Authn, cfg.DataDir); err == nil {
			conn, err = s.dialAs(AdminUser, user.Masters)
		}
	} else {
		conn, err = grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if err != nil {
		s.Stop()
		return nil, err
	}
	s.Conn = conn
	// Ready means health says SERVING (caches loaded).
	hc := healthpb.NewHealthClient(conn)
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	stream, err := hc.Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		s.Stop()
		return nil, err
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			s.Stop()
			return nil, err
		}
		if resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return s, nil
		}
	}
}

// Stop shuts the server down and waits for it.
func (s *Server) Stop() {
	s.once.Do(func() {
		if s.Conn != nil {
			s.Conn.Close()
		}
		s.stop()
		<-s.done
	})
}
