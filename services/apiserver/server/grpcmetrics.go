package server

import (
	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// NewGRPCMetrics registers on reg the gRPC server metrics that Go gRPC
// servers have (go-grpc-middleware's, as etcd's and most others'):
// grpc_server_started_total, grpc_server_handled_total (with grpc_code),
// grpc_server_msg_received_total, grpc_server_msg_sent_total and
// grpc_server_handling_seconds, by grpc_service, grpc_method and grpc_type.
// Its interceptors go first in the server's chain, so that calls the
// request chain refuses (unauthenticated, throttled, forbidden) are
// counted too, with the code the client gets.
func NewGRPCMetrics(reg prometheus.Registerer) *grpcprom.ServerMetrics {
	m := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramBuckets(requestBuckets)))
	if reg != nil {
		reg.MustRegister(m)
	}
	return m
}
