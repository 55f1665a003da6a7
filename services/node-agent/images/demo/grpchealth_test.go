package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// TestGRPCHealth: the health service answers over a real gRPC connection,
// SERVING overall, -grpc-services at their statuses, unknown services
// NotFound; GET /grpc-health turns a service's status at run time.
func TestGRPCHealth(t *testing.T) {
	hs, err := newHealth("live, ready=NOT_SERVING,")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := serveGRPCHealth(ln, hs)
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	check := func(service string) (healthpb.HealthCheckResponse_ServingStatus, codes.Code) {
		t.Helper()
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		return resp.GetStatus(), status.Code(err)
	}
	for service, want := range map[string]healthpb.HealthCheckResponse_ServingStatus{
		"":      healthpb.HealthCheckResponse_SERVING,
		"live":  healthpb.HealthCheckResponse_SERVING,
		"ready": healthpb.HealthCheckResponse_NOT_SERVING,
	} {
		if got, code := check(service); got != want || code != codes.OK {
			t.Errorf("Check(%q) = %v, %v; want %v", service, got, code, want)
		}
	}
	if _, code := check("nope"); code != codes.NotFound {
		t.Errorf("Check(nope): %v, want NotFound", code)
	}

	s, _, out, ts := newTestServer(t, 0)
	if code, _ := get(t, ts.URL+"/grpc-health?service=live&status=NOT_SERVING"); code != 404 {
		t.Errorf("GET /grpc-health without -grpc-listen = %d, want 404", code)
	}
	s.health = hs
	if code, body := get(t, ts.URL+"/grpc-health?service=live&status=not_serving"); code != 200 || body != "grpc health: service \"live\" is NOT_SERVING\n" {
		t.Errorf("GET /grpc-health = %d %q", code, body)
	}
	if got, _ := check("live"); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("Check(live) after GET /grpc-health = %v, want NOT_SERVING", got)
	}
	if code, _ := get(t, ts.URL+"/grpc-health?service=ready&status=SERVING"); code != 200 {
		t.Errorf("GET /grpc-health ready SERVING = %d", code)
	}
	if got, _ := check("ready"); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("Check(ready) after GET /grpc-health = %v, want SERVING", got)
	}
	if code, body := get(t, ts.URL+"/grpc-health?service=live&status=sick"); code != 400 || !strings.Contains(body, `unknown serving status "sick"`) {
		t.Errorf("GET /grpc-health with a bad status = %d %q, want 400", code, body)
	}
	if !strings.Contains(out.String(), "GET /grpc-health?service=live&status=not_serving 200\n") {
		t.Errorf("request log lacks the call:\n%s", out.String())
	}

	if _, err := newHealth("x=MAYBE"); err == nil || !strings.Contains(err.Error(), `service "x": unknown serving status "MAYBE"`) {
		t.Errorf("newHealth(x=MAYBE): %v", err)
	}
}
