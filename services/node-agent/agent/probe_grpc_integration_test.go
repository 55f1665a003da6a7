package agent

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/node-agent/sim"
)

// grpc startup, readiness and liveness probes through the agent: the
// simulated pods' addresses lead to a real gRPC health server on loopback
// (TestContainerdGRPCProbes does it on a real containerd, the demo image
// serving grpc.health.v1).
func TestGRPCProbes(t *testing.T) {
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	hs.SetServingStatus("ready", healthpb.HealthCheckResponse_NOT_SERVING)
	port := serveGRPC(t, hs)
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	e := start(t, sim.Options{Subnet: "10.67.0.0/24"}, func(c *Config) {
		c.CrashLoopBackOff = 100 * time.Millisecond
		c.ProbeDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if strings.HasPrefix(addr, "10.67.0.") {
				addr = target
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}
	})
	app := ctr("app", "demo:v1")
	app.StartupProbe = &corev1.Probe{Grpc: &corev1.GRPCAction{Port: 9090}, PeriodSeconds: 1, FailureThreshold: 30, TimeoutSeconds: 1}
	app.ReadinessProbe = &corev1.Probe{Grpc: &corev1.GRPCAction{Port: 9090, Service: proto.String("ready")}, PeriodSeconds: 1, TimeoutSeconds: 1}
	app.LivenessProbe = &corev1.Probe{Grpc: &corev1.GRPCAction{Port: 9090}, PeriodSeconds: 1, FailureThreshold: 1, TimeoutSeconds: 1}
	e.create(pod("grpc", app))

	e.untilPod("grpc", "running, not started", func(p *corev1.Pod) (bool, string) {
		cs := containerStatusOf(p, "app")
		return cs.GetState().GetRunning() != nil && !cs.GetStarted(), ""
	})
	e.until("the startup probe's failures reported", func() (bool, string) {
		evs := e.eventsOf("grpc")
		for _, ev := range evs {
			if ev == `Unhealthy: Startup probe failed: service unhealthy (responded with "NOT_SERVING")` {
				return true, ""
			}
		}
		return false, strings.Join(evs, "; ")
	})
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	e.untilPod("grpc", "started, not ready", func(p *corev1.Pod) (bool, string) {
		cs := containerStatusOf(p, "app")
		return cs.GetStarted() && !cs.GetReady() && cs.GetRestartCount() == 0, ""
	})
	hs.SetServingStatus("ready", healthpb.HealthCheckResponse_SERVING)
	e.untilRunning("grpc")

	// The server's health turns: the liveness probe restarts the container.
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	e.untilPod("grpc", "restarted by its liveness probe", func(p *corev1.Pod) (bool, string) {
		return containerStatusOf(p, "app").GetRestartCount() >= 1, ""
	})
}
