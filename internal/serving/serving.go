// Package serving is the HTTP side every Skiff program shares: /metrics
// from the program's own registry, /healthz (the process answers) and
// /readyz (the program's own check). It owns no gRPC and no metric.
package serving

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// NewRegistry returns a registry with the Go runtime's and the process's
// collectors, for a program's metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Options configure Start.
type Options struct {
	Addr     string // host:port; port 0 picks one
	Registry *prometheus.Registry
	// Ready answers /readyz: nil means ready, an error is the reason not
	// to be (503 with its text). A nil Ready is always ready.
	Ready  func() error
	Logger *zap.Logger
}

// Server serves the endpoints until Close.
type Server struct {
	srv  *http.Server
	addr string
}

// Start listens on o.Addr and serves in the background.
func Start(o Options) (*Server, error) {
	l, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{Registry: o.Registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if o.Ready != nil {
			if err := o.Ready(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, addr: l.Addr().String()}
	go func() {
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", zap.Error(err))
		}
	}()
	return s, nil
}

// Addr is the address served.
func (s *Server) Addr() string { return s.addr }

// Close stops serving.
func (s *Server) Close() error { return s.srv.Close() }
