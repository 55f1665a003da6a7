// Package grpcmetrics is the grpc_server_* metrics of Skiff's gRPC
// servers (the apiserver's API, the node agent's NodeAgent service): those
// of go-grpc-middleware's providers/prometheus, which etcd's and most Go
// gRPC servers have, so the usual gRPC dashboards read them. It owns the
// metrics and their interceptors, not the servers.
package grpcmetrics

import (
	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
)

// Buckets are the latency buckets of grpc_server_handling_seconds: 0.5 ms
// to 30 s.
var Buckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// New registers on reg (nil: nowhere) grpc_server_started_total,
// grpc_server_handled_total (with grpc_code), grpc_server_msg_received_total,
// grpc_server_msg_sent_total and grpc_server_handling_seconds, by
// grpc_service, grpc_method and grpc_type. Its UnaryServerInterceptor and
// StreamServerInterceptor measure a server's calls: put them first in the
// server's chain, so that calls the others refuse count too, with the code
// the client got.
func New(reg prometheus.Registerer) *grpcprom.ServerMetrics {
	m := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramBuckets(Buckets)))
	if reg != nil {
		reg.MustRegister(m)
	}
	return m
}

// ServerOptions are m's interceptors as server options, to go before the
// server's other options.
func ServerOptions(m *grpcprom.ServerMetrics) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(m.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(m.StreamServerInterceptor()),
	}
}
