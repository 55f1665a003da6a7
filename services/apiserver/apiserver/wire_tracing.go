package apiserver

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// ServiceName is the apiserver's service.name in traces.
const ServiceName = "skiff-apiserver"

// The spans (internal/tracing, with cfg.Tracing): the gRPC server's
// stats handler makes one of each call served, the child of the caller's
// when the call carries a W3C traceparent; the connections to etcd
// (connectEtcd) and to node agents (logProxy) one of each call made.

// tracingShutdownTimeout bounds the last export at stop: a collector away
// does not hold the apiserver's exit.
const tracingShutdownTimeout = 5 * time.Second

// shutdownTracing sends the spans not sent yet; nothing with tracing off.
func (s *Server) shutdownTracing() {
	if s.tracing == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingShutdownTimeout)
	defer cancel()
	if err := s.tracing.Shutdown(ctx); err != nil {
		s.log.Warn("tracing: the last spans were not sent", zap.Error(err))
	}
}
