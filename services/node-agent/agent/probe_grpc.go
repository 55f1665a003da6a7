package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	corev1 "skiff.dev/proto/core/v1"
)

// runGRPC probes the standard gRPC health service (grpc.health.v1.Health
// Check) at podIP:port for the probe's service, in plain text, within
// timeout (ctx carries it): SERVING is a success, anything else a failure
// with the kubelet's message.
func (r *probeRunner) runGRPC(ctx context.Context, g *corev1.GRPCAction, podIP string, timeout time.Duration) (bool, string) {
	addr := net.JoinHostPort(podIP, strconv.Itoa(int(g.GetPort())))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithUserAgent("kube-probe/skiff"),
		grpc.WithTransportCredentials(insecure.NewCredentials()), // as the kubelet: no TLS
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return r.dial(ctx, "tcp", addr)
		}),
	)
	if err != nil {
		return false, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err)
	}
	defer conn.Close()
	// The kubelet dials blocking (grpc.WithBlock): a server not
	// listening yet is retried until the timeout, which says so.
	if err := waitConnected(ctx, conn); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return false, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err)
		}
		return false, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err)
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: g.GetService()},
		grpc.WaitForReady(false))
	if err != nil {
		return false, grpcProbeError(err, timeout)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return false, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())
	}
	return true, ""
}

// waitConnected connects conn and waits until it is ready, as a blocking
// dial does: failed attempts are retried (with gRPC's backoff) until ctx
// ends, whose error it returns.
func waitConnected(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if !conn.WaitForStateChange(ctx, s) {
			return ctx.Err()
		}
	}
}

// grpcProbeError is the kubelet's message for a failed Check.
func grpcProbeError(err error, timeout time.Duration) string {
	st, ok := status.FromError(err)
	switch {
	case ok && st.Code() == codes.Unimplemented:
		return fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message())
	case ok && st.Code() == codes.DeadlineExceeded, errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
	}
	return fmt.Sprintf("error: health rpc probe failed: %+v", err)
}
