package agent

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/node-agent/crienv"
)

// grpc probes on a real containerd (crienv, the demo image serving the
// standard grpc.health.v1 service with GRPC_PORT): the prober reaches the
// pod's IP through the bridge. Startup and readiness probes on serving
// services let the container start and be Ready; a liveness probe on a
// service turned NOT_SERVING restarts it, with the kubelet's Unhealthy
// event; a readiness probe on a port nothing listens on keeps the pod
// unready with the kubelet's connect timeout. Skipped where containerd
// cannot run (unless CI=true).
func TestContainerdGRPCProbes(t *testing.T) {
	ce := crienv.Start(t)
	e := newEnv(t, ce.Conn, nil, func(c *Config) {
		c.PodLogDir = ce.PodLogDir
		c.RelistPeriod = 200 * time.Millisecond
		c.CrashLoopBackOff, c.CrashLoopBackOffMax = time.Second, 4*time.Second
	})
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	grpcProbe := func(port int32, service string) *corev1.Probe {
		return &corev1.Probe{Grpc: &corev1.GRPCAction{Port: port, Service: proto.String(service)}, PeriodSeconds: 1, TimeoutSeconds: 1}
	}

	served := demoPod("served", func() *corev1.Container {
		c := demo(ce, "app", "GRPC_PORT=9090", "GRPC_SERVICES=live,ready")
		c.Ports = append(c.Ports, &corev1.ContainerPort{Name: "grpc", ContainerPort: 9090})
		c.StartupProbe = grpcProbe(9090, "")
		c.StartupProbe.FailureThreshold = 30
		c.ReadinessProbe = grpcProbe(9090, "ready")
		c.LivenessProbe = grpcProbe(9090, "live")
		c.LivenessProbe.FailureThreshold = 1
		return c
	}())
	nobody := demoPod("nobody", func() *corev1.Container {
		c := demo(ce, "app", "GRPC_PORT=9090")
		c.ReadinessProbe = grpcProbe(9999, "")
		return c
	}())
	for _, p := range []*corev1.Pod{served, nobody} {
		e.create(p)
	}

	t.Run("startup and readiness probes on serving services: started and Ready", func(t *testing.T) {
		got := e.untilRunning("served")
		if cs := containerStatusOf(got, "app"); !cs.GetStarted() || !cs.GetReady() || cs.GetRestartCount() != 0 {
			t.Errorf("app: %v", cs)
		}
	})

	t.Run("a liveness probe on a service turned NOT_SERVING restarts the container", func(t *testing.T) {
		before := e.pod("served")
		id := containerStatusOf(before, "app").GetContainerId()
		url := fmt.Sprintf("http://%s/grpc-health?service=live&status=NOT_SERVING", net.JoinHostPort(before.GetStatus().GetPodIp(), "8080"))
		if code, body, err := get(ctx, url); err != nil || code != 200 {
			t.Fatalf("GET /grpc-health: %d %q %v", code, body, err)
		}
		got := e.untilPod("served", "restarted by its liveness probe, started and Ready again", func(p *corev1.Pod) (bool, string) {
			cs := containerStatusOf(p, "app")
			return cs.GetRestartCount() >= 1 && cs.GetContainerId() != id && cs.GetState().GetRunning() != nil &&
				cs.GetStarted() && cs.GetReady() && condition(p, "Ready") == "True", ""
		})
		if ls := containerStatusOf(got, "app").GetLastState().GetTerminated(); ls.GetContainerId() != id {
			t.Errorf("last state %v, want the killed container %s", ls, id)
		}
		e.until("Unhealthy and Killing events", func() (bool, string) {
			evs := e.eventsOf("served")
			return slicesContain(evs, `Unhealthy: Liveness probe failed: service unhealthy (responded with "NOT_SERVING")`) &&
				slicesContain(evs, "Killing: Container app failed liveness probe, will be restarted"), strings.Join(evs, "; ")
		})
	})

	t.Run("a readiness probe on a port nothing listens on: not Ready, with the connect timeout", func(t *testing.T) {
		got := e.untilPod("nobody", "Running, not Ready", func(p *corev1.Pod) (bool, string) {
			return p.GetStatus().GetPhase() == "Running" && p.GetStatus().GetPodIp() != "" && condition(p, "Ready") == "False", ""
		})
		want := fmt.Sprintf(`Unhealthy: Readiness probe failed: timeout: failed to connect service %q within 1s: context deadline exceeded`,
			net.JoinHostPort(got.GetStatus().GetPodIp(), "9999"))
		e.until("the readiness probe's failure event", func() (bool, string) {
			evs := e.eventsOf("nobody")
			return slicesContain(evs, want), strings.Join(evs, "; ")
		})
		if cs := containerStatusOf(e.pod("nobody"), "app"); cs.GetReady() || cs.GetRestartCount() != 0 || cs.GetState().GetRunning() == nil {
			t.Errorf("app: %v; want running, not ready, never restarted", cs)
		}
	})
}
