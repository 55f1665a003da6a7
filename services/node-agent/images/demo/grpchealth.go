package main

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// The grpc mode: with -grpc-listen the demo also serves the standard gRPC
// health service (grpc.health.v1.Health, grpc-go's health.Server) in plain
// text, for grpc probes. The overall service ("") is SERVING; the services
// of -grpc-services are registered at start, each "NAME" (SERVING) or
// "NAME=STATUS"; GET /grpc-health?service=NAME&status=STATUS sets one at
// run time (a liveness probe on it then fails).

// newHealth is the health server with the overall service SERVING and
// spec's services ("a,b=NOT_SERVING") at their statuses.
func newHealth(spec string) (*health.Server, error) {
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	for _, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, st, hasStatus := strings.Cut(entry, "=")
		status := healthpb.HealthCheckResponse_SERVING
		if hasStatus {
			var err error
			if status, err = parseServingStatus(st); err != nil {
				return nil, fmt.Errorf("service %q: %w", name, err)
			}
		}
		hs.SetServingStatus(name, status)
	}
	return hs, nil
}

// parseServingStatus reads a grpc.health.v1 status by name
// ("NOT_SERVING").
func parseServingStatus(s string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	v, ok := healthpb.HealthCheckResponse_ServingStatus_value[strings.ToUpper(s)]
	if !ok {
		return 0, fmt.Errorf("unknown serving status %q (want SERVING, NOT_SERVING, UNKNOWN or SERVICE_UNKNOWN)", s)
	}
	return healthpb.HealthCheckResponse_ServingStatus(v), nil
}

// serveGRPCHealth serves hs on ln until ln fails; it returns the gRPC
// server for the shutdown.
func serveGRPCHealth(ln net.Listener, hs *health.Server) *grpc.Server {
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	go func() { _ = gs.Serve(ln) }()
	return gs
}

// setGRPCHealth is GET /grpc-health?service=NAME&status=STATUS: it sets
// the service's status (404 without -grpc-listen).
func (s *server) setGRPCHealth(w http.ResponseWriter, r *http.Request) {
	if s.health == nil {
		http.Error(w, "no -grpc-listen (GRPC_PORT): no gRPC health service", http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	status, err := parseServingStatus(q.Get("status"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.health.SetServingStatus(q.Get("service"), status)
	fmt.Fprintf(w, "grpc health: service %q is %s\n", q.Get("service"), status)
}
