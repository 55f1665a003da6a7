package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/crienv"
)

// The native sidecar story on a real containerd: a Job-like pod
// (restartPolicy Never) starts its init containers in order, the regular
// one only once the sidecar before it passed its startup probe, and its
// main container once every init container is through; the main container
// talks to the sidecar over localhost and exits 0; the pod is Succeeded
// and its sidecars are stopped after it, the last declared first. A
// sidecar that exits is restarted beside a running main container, even
// under restartPolicy Never. Skipped where containerd cannot run (unless
// CI=true).
func TestContainerdSidecars(t *testing.T) {
	ce := crienv.Start(t)
	e := newEnv(t, ce.Conn, nil, func(c *Config) {
		c.PodLogDir = ce.PodLogDir
		c.RelistPeriod = 200 * time.Millisecond
		c.CrashLoopBackOff, c.CrashLoopBackOffMax = time.Second, 4*time.Second
	})
	always := func(c *corev1.Container) *corev1.Container {
		c.RestartPolicy = proto.String("Always")
		return c
	}
	tool := func(name string, args ...string) *corev1.Container {
		return &corev1.Container{Name: name, Image: ce.DemoImage("v1"), ImagePullPolicy: "IfNotPresent", Command: append([]string{"/demo"}, args...)}
	}

	job := demoPod("job", tool("main", "get", "http://localhost:9090/"))
	job.Spec.RestartPolicy = "Never"
	job.Spec.InitContainers = []*corev1.Container{
		always(func() *corev1.Container {
			c := demo(ce, "proxy", "PORT=9090", "READY_AFTER=2s")
			c.Ports = nil
			c.StartupProbe = &corev1.Probe{HttpGet: &corev1.HTTPGetAction{Path: "/ready", Port: intPort(9090)}, PeriodSeconds: 1, FailureThreshold: 30}
			c.ReadinessProbe = &corev1.Probe{HttpGet: &corev1.HTTPGetAction{Path: "/ready", Port: intPort(9090)}, PeriodSeconds: 1}
			return c
		}()),
		tool("setup", "get", "http://localhost:9090/"), // fails unless the sidecar serves
		always(func() *corev1.Container {
			c := demo(ce, "logger", "PORT=9091")
			c.Ports = nil
			return c
		}()),
	}

	flaky := demoPod("flaky", demo(ce, "app"))
	flaky.Spec.RestartPolicy = "Never"
	flaky.Spec.InitContainers = []*corev1.Container{always(func() *corev1.Container {
		c := demo(ce, "side", "PORT=9092", "EXIT_AFTER=1s", "EXIT_CODE=0")
		c.Ports = nil
		return c
	}())}

	e.create(job)
	e.create(flaky)

	t.Run("a Job's pod with sidecars succeeds, its sidecars stopped after it, in reverse order", func(t *testing.T) {
		p := e.untilPod("job", "Succeeded, its sidecars terminated", func(p *corev1.Pod) (bool, string) {
			return p.GetStatus().GetPhase() == "Succeeded" &&
				containerStatusOf(p, "proxy").GetState().GetTerminated() != nil &&
				containerStatusOf(p, "logger").GetState().GetTerminated() != nil, ""
		})
		if condition(p, "Initialized") != "True" {
			t.Errorf("Initialized = %q; status: %s", condition(p, "Initialized"), brief(p.GetStatus()))
		}
		term := func(name string) *corev1.ContainerStateTerminated {
			cs := containerStatusOf(p, name)
			tt := cs.GetState().GetTerminated()
			if tt == nil {
				t.Fatalf("%s not terminated: %s", name, brief(p.GetStatus()))
			}
			if cs.GetRestartCount() != 0 {
				t.Errorf("%s restarted %d times", name, cs.GetRestartCount())
			}
			return tt
		}
		proxy, setup, logger, main := term("proxy"), term("setup"), term("logger"), term("main")
		if setup.GetExitCode() != 0 || main.GetExitCode() != 0 {
			t.Errorf("setup exited %d, main %d; want 0 (the sidecar served them)", setup.GetExitCode(), main.GetExitCode())
		}
		at := func(ts interface{ AsTime() time.Time }) time.Time { return ts.AsTime() }
		for _, o := range []struct {
			what         string
			before, then time.Time
			atLeast      time.Duration
		}{
			{"the regular init container waits for the sidecar's startup probe (ready after 2s)", at(proxy.GetStartedAt()), at(setup.GetStartedAt()), 2 * time.Second},
			{"the next sidecar starts once the init container completed", at(setup.GetFinishedAt()), at(logger.GetStartedAt()), 0},
			{"the main container starts after the sidecars", at(logger.GetStartedAt()), at(main.GetStartedAt()), 0},
			{"the last sidecar stops after the main container", at(main.GetFinishedAt()), at(logger.GetFinishedAt()), 0},
			{"the first sidecar stops last", at(logger.GetFinishedAt()), at(proxy.GetFinishedAt()), 0},
		} {
			if d := o.then.Sub(o.before); d < o.atLeast {
				t.Errorf("%s: %s then %s (%v apart)", o.what, o.before.Format(time.StampMicro), o.then.Format(time.StampMicro), d)
			}
		}
	})

	t.Run("a sidecar that exits is restarted beside the running container, even under Never", func(t *testing.T) {
		p := e.untilPod("flaky", "the sidecar restarted", func(p *corev1.Pod) (bool, string) {
			side, app := containerStatusOf(p, "side"), containerStatusOf(p, "app")
			return side.GetRestartCount() >= 1 && app.GetState().GetRunning() != nil, ""
		})
		if ph := p.GetStatus().GetPhase(); ph != "Running" {
			t.Errorf("phase %s, want Running", ph)
		}
		if app := containerStatusOf(p, "app"); app.GetRestartCount() != 0 {
			t.Errorf("app restarted %d times", app.GetRestartCount())
		}
		if side := containerStatusOf(p, "side"); side.GetLastState().GetTerminated().GetExitCode() != 0 {
			t.Errorf("side's last state %v, want terminated with 0", side.GetLastState())
		}
	})

	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	for _, name := range []string{"job", "flaky"} {
		if _, err := e.pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: name}); err != nil {
			t.Fatal(err)
		}
		e.until(fmt.Sprintf("pod %s gone", name), func() (bool, string) { return e.pod(name) == nil, "" })
	}
}
