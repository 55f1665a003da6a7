package agent

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
)

// serveGRPC serves gRPC on loopback (with the health service when h is
// not nil) and returns its port.
func serveGRPC(t *testing.T, h healthpb.HealthServer) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	if h != nil {
		healthpb.RegisterHealthServer(s, h)
	}
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// slowHealth answers Check only when the call ends.
type slowHealth struct {
	healthpb.UnimplementedHealthServer
}

func (slowHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// The grpc prober against real gRPC health servers on loopback: the
// kubelet's verdicts and messages.
func TestGRPCProbe(t *testing.T) {
	hs := health.NewServer()
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	healthy := serveGRPC(t, hs)
	bare := serveGRPC(t, nil)
	slow := serveGRPC(t, slowHealth{})
	refused := func() int32 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return int32(l.Addr().(*net.TCPAddr).Port)
	}()

	r := newProbeRunner(nil, nil)
	c := &corev1.Container{Name: "app"}
	for _, tc := range []struct {
		name    string
		port    int32
		service *string
		ok      bool
		msg     string // prefix
	}{
		{"serving", healthy, nil, true, ""},
		{"the server's health by name \"\"", healthy, proto.String(""), true, ""},
		{"not serving", healthy, proto.String("db"), false, `service unhealthy (responded with "NOT_SERVING")`},
		{"unknown service", healthy, proto.String("cache"), false, "error: health rpc probe failed: rpc error: code = NotFound"},
		{"no health service", bare, nil, false, "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): "},
		{"timeout", slow, nil, false, "timeout: health rpc did not complete within 1s"},
		// The kubelet's dial blocks until connected or the timeout.
		{"refused", refused, nil, false, `timeout: failed to connect service "127.0.0.1:` + strconv.Itoa(int(refused)) + `" within 1s: context deadline exceeded`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := &corev1.Probe{Grpc: &corev1.GRPCAction{Port: tc.port, Service: tc.service}, TimeoutSeconds: 1}
			start := time.Now()
			ok, msg := r.run(context.Background(), pr, c, "", "127.0.0.1")
			if ok != tc.ok || !strings.HasPrefix(msg, tc.msg) {
				t.Errorf("run = %v, %q; want %v, %q...", ok, msg, tc.ok, tc.msg)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("took %v, beyond the probe's timeout", d)
			}
		})
	}
}
