package tracing_test

import (
	"context"
	"flag"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"skiff.dev/internal/tracing"
	"skiff.dev/internal/tracing/tracingtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestOffWithoutEndpoint: the default (no --tracing-endpoint) makes no
// tracer provider and no exporter, and adds no gRPC option.
func TestOffWithoutEndpoint(t *testing.T) {
	var o tracing.Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.AddFlags(fs, 0)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	tr, err := tracing.New(context.Background(), o, "skiff-test", zap.NewNop())
	if err != nil || tr != nil {
		t.Fatalf("New without an endpoint = %v, %v; want nil, nil", tr, err)
	}
	if d, s := tr.DialOptions(), tr.ServerOptions(); d != nil || s != nil {
		t.Fatalf("off: dial options %v, server options %v; want none", d, s)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no port", []string{"--tracing-endpoint", "localhost"}, `--tracing-endpoint "localhost": want the host:port`},
		{"a URL", []string{"--tracing-endpoint", "http://localhost:4317"}, `--tracing-endpoint "http://localhost:4317": want the host:port`},
		{"no host", []string{"--tracing-endpoint", ":4317"}, "host and port are required"},
		{"rate too high", []string{"--tracing-sampling-rate-per-million", "1000001"}, "--tracing-sampling-rate-per-million 1000001: must be between 0 and 1000000"},
		{"negative rate", []string{"--tracing-sampling-rate-per-million", "-1"}, "--tracing-sampling-rate-per-million -1: must be between 0 and 1000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o tracing.Options
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o.AddFlags(fs, 0)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			_, err := tracing.New(context.Background(), o, "skiff-test", zap.NewNop())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New(%v) = %v; want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestClientAndServerSpansShareTrace: a client that samples every trace
// calls a server that samples none of its own; the server's span is the
// child of the client's (W3C traceparent), both reach the collector with
// their programs' service.name.
func TestClientAndServerSpansShareTrace(t *testing.T) {
	col := tracingtest.Start(t)
	ctx := context.Background()
	serverTr, err := tracing.New(ctx, tracing.Options{Endpoint: col.Endpoint()}, "skiff-server", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	clientTr, err := tracing.New(ctx, tracing.Options{Endpoint: col.Endpoint(), SamplingRatePerMillion: tracing.MaxSamplingRatePerMillion}, "skiff-client", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(serverTr.ServerOptions()...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(l) }()
	defer func() { srv.Stop(); <-served }()
	conn, err := grpc.NewClient(l.Addr().String(), append(clientTr.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	// Shutdown sends what the batchers hold.
	if err := clientTr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := serverTr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	const method = "grpc.health.v1.Health/Check"
	client := col.WaitFor(t, "skiff-client", method, 10*time.Second)
	server := col.WaitFor(t, "skiff-server", method, 10*time.Second)
	if client.GetKind() != tracepb.Span_SPAN_KIND_CLIENT || server.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("kinds: client %v, server %v", client.GetKind(), server.GetKind())
	}
	if client.TraceID() != server.TraceID() {
		t.Errorf("trace ids differ: client %s, server %s", client.TraceID(), server.TraceID())
	}
	if server.ParentSpanID() != client.SpanID() {
		t.Errorf("the server span's parent is %q, want the client span %s", server.ParentSpanID(), client.SpanID())
	}
}
