package client

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/apierrors"
)

// refusingHealth refuses the first calls of each method as the apiserver's
// flow control does, then answers.
type refusingHealth struct {
	healthpb.UnimplementedHealthServer
	refuse   int32 // refusals before answering
	noHint   bool  // refuse with ResourceExhausted but no retry hint
	checks   atomic.Int32
	watches  atomic.Int32
	mu       sync.Mutex
	services []string // the request of every Watch, to see it resent
}

func (h *refusingHealth) refusal() error {
	if h.noHint {
		return status.Error(codes.ResourceExhausted, "message too large")
	}
	return apierrors.NewTooManyRequests(`too many requests from user "flooder", retry after 1 s`, 1)
}

func (h *refusingHealth) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if h.checks.Add(1) <= h.refuse {
		return nil, h.refusal()
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (h *refusingHealth) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	h.mu.Lock()
	h.services = append(h.services, req.GetService())
	h.mu.Unlock()
	if h.watches.Add(1) <= h.refuse {
		return h.refusal()
	}
	return stream.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
}

// throttleEnv serves h on a real gRPC server and dials it with r; the
// waits r asks for are recorded instead of slept.
func throttleEnv(t *testing.T, h *refusingHealth, r ThrottleRetry) (healthpb.HealthClient, *[]time.Duration) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, h)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	var waits []time.Duration
	if r.sleep == nil {
		r.sleep = func(ctx context.Context, d time.Duration) error {
			waits = append(waits, d)
			return ctx.Err()
		}
	}
	conn, err := grpc.NewClient(lis.Addr().String(), append(r.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return healthpb.NewHealthClient(conn), &waits
}

func TestRetryThrottledUnary(t *testing.T) {
	h := &refusingHealth{refuse: 2}
	hc, waits := throttleEnv(t, h, ThrottleRetry{})
	resp, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("Check after two refusals: %v", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING || h.checks.Load() != 3 {
		t.Errorf("status %v after %d calls, want SERVING after 3", resp.GetStatus(), h.checks.Load())
	}
	if len(*waits) != 2 {
		t.Fatalf("waits %v, want two", *waits)
	}
	for _, w := range *waits {
		if w < time.Second || w > time.Second+time.Duration(DefaultThrottleJitter*float64(time.Second)) {
			t.Errorf("wait %v: want the 1 s hint plus at most %v jitter", w, DefaultThrottleJitter)
		}
	}
}

func TestRetryThrottledGivesUp(t *testing.T) {
	cases := []struct {
		name      string
		h         *refusingHealth
		r         ThrottleRetry
		ctx       func() (context.Context, context.CancelFunc)
		wantCalls int32
	}{
		{"after Attempts calls", &refusingHealth{refuse: 100}, ThrottleRetry{Attempts: 3}, nil, 3},
		{"without a retry hint", &refusingHealth{refuse: 100, noHint: true}, ThrottleRetry{}, nil, 1},
		{"when the wait would pass the deadline", &refusingHealth{refuse: 100}, ThrottleRetry{},
			func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 500*time.Millisecond)
			}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hc, _ := throttleEnv(t, tc.h, tc.r)
			ctx, cancel := context.WithCancel(context.Background())
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
			if status.Code(err) != codes.ResourceExhausted {
				t.Errorf("err %v, want the server's ResourceExhausted", err)
			}
			if got := tc.h.checks.Load(); got != tc.wantCalls {
				t.Errorf("%d calls, want %d", got, tc.wantCalls)
			}
		})
	}
}

func TestRetryThrottledStopsWithContext(t *testing.T) {
	h := &refusingHealth{refuse: 100}
	ctx, cancel := context.WithCancel(context.Background())
	hc, _ := throttleEnv(t, h, ThrottleRetry{sleep: func(ctx context.Context, d time.Duration) error {
		cancel() // the caller gives up during the wait
		return sleepCtx(ctx, d)
	}})
	_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Canceled || h.checks.Load() != 1 {
		t.Errorf("err %v after %d calls, want Canceled after 1", err, h.checks.Load())
	}
}

func TestRetryThrottledStream(t *testing.T) {
	h := &refusingHealth{refuse: 1}
	hc, waits := throttleEnv(t, h, ThrottleRetry{})
	stream, err := hc.Watch(context.Background(), &healthpb.HealthCheckRequest{Service: "skiff"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatalf("Recv after a refused start: %v", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING || len(*waits) != 1 {
		t.Errorf("status %v after waits %v", resp.GetStatus(), *waits)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.services) != 2 || h.services[0] != "skiff" || h.services[1] != "skiff" {
		t.Errorf("requests seen by the server %q, want the same request twice", h.services)
	}
}
