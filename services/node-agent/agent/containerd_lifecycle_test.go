package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/crienv"
)

// Lifecycle hooks and termination messages on a real containerd (crienv,
// the demo image): postStart runs in the container before it counts as
// started, a failing one kills it with an event and it restarts; preStop
// runs before the stop and its time comes out of the grace period; a
// container's termination message comes from its file, or from its log
// with FallbackToLogsOnError.
func TestContainerdLifecycle(t *testing.T) {
	ce := crienv.Start(t)
	e := newEnv(t, ce.Conn, nil, func(c *Config) {
		c.PodLogDir = ce.PodLogDir
		c.RelistPeriod = 200 * time.Millisecond
		c.CrashLoopBackOff, c.CrashLoopBackOffMax = time.Second, 4*time.Second
	})
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	out := t.TempDir() // a hostPath the preStop hooks write to, read after the pods are gone
	exec := func(cmd ...string) *corev1.LifecycleHandler {
		return &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cmd}}
	}
	withOut := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Volumes = []*corev1.Volume{{Name: "out", HostPath: &corev1.HostPathVolumeSource{Path: out}}}
		p.Spec.Containers[0].VolumeMounts = []*corev1.VolumeMount{{Name: "out", MountPath: "/out"}}
		return p
	}

	hooked := demoPod("hooked", demo(ce, "app"))
	hooked.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: exec("/demo", "write", "/tmp/hooked", "by postStart")}

	badStart := demoPod("badstart", demo(ce, "app"))
	badStart.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: exec("/demo", "exit", "3")}

	preStop := withOut(demoPod("prestop", demo(ce, "app")))
	preStop.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: exec("/demo", "write", "/out/prestop", "ran")}

	sleepy := withOut(demoPod("sleepy", demo(ce, "app")))
	sleepy.Spec.TerminationGracePeriodSeconds = proto.Int64(10)
	sleepy.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 3}}}

	msg := demoPod("msg", func() *corev1.Container {
		c := demo(ce, "default")
		c.Command = []string{"/demo", "write", "/dev/termination-log", "bye from the default path"}
		return c
	}(), func() *corev1.Container {
		c := demo(ce, "custom")
		c.TerminationMessagePath = "/tmp/last-words"
		c.Command = []string{"/demo", "write", "/tmp/last-words", "bye from /tmp/last-words"}
		return c
	}(), func() *corev1.Container {
		c := demo(ce, "fallback", "EXIT_AFTER=100ms", "EXIT_CODE=3")
		c.TerminationMessagePolicy = policyFallbackToLogsOnError
		return c
	}(), func() *corev1.Container {
		c := demo(ce, "nofallback", "EXIT_AFTER=100ms", "EXIT_CODE=3")
		c.Ports = nil
		c.Env = append(c.Env, &corev1.EnvVar{Name: "PORT", Value: "8081"})
		return c
	}())
	msg.Spec.RestartPolicy = "Never"

	// The waiting states of badstart's app, as the watch delivers them.
	var mu sync.Mutex
	var waited []*corev1.ContainerStateWaiting
	e.podInf.AddHandler(informer.Handler[*corev1.Pod]{OnUpdate: func(_, p *corev1.Pod) {
		if w := containerStatusOf(p, "app").GetState().GetWaiting(); w != nil && p.GetMetadata().GetName() == "badstart" {
			mu.Lock()
			waited = append(waited, w)
			mu.Unlock()
		}
	}})
	for _, p := range []*corev1.Pod{hooked, badStart, preStop, sleepy, msg} {
		e.create(p)
	}

	t.Run("postStart runs in the container before it counts as started", func(t *testing.T) {
		got := e.untilRunning("hooked")
		code, body, err := get(ctx, fmt.Sprintf("http://%s:8080/file?path=/tmp/hooked", got.GetStatus().GetPodIp()))
		if err != nil || code != 200 || body != "by postStart\n" {
			t.Fatalf("the file postStart wrote, seen by the container: %d %q %v", code, body, err)
		}
		if cs := containerStatusOf(got, "app"); cs.GetRestartCount() != 0 {
			t.Errorf("restarted: %v", cs)
		}
	})

	t.Run("a failing postStart kills the container with an event, and it restarts", func(t *testing.T) {
		e.untilPod("badstart", "killed and restarted twice", func(p *corev1.Pod) (bool, string) {
			cs := containerStatusOf(p, "app")
			return cs.GetRestartCount() >= 2 && cs.GetLastState().GetTerminated() != nil, ""
		})
		e.until("FailedPostStartHook and Killing events", func() (bool, string) {
			evs := e.eventsOf("badstart")
			return slicesContain(evs, "FailedPostStartHook: PostStartHook failed") && slicesContain(evs, "Killing: FailedPostStartHook"), fmt.Sprint(evs)
		})
		mu.Lock()
		defer mu.Unlock()
		var reasons []string
		seen := false
		for _, w := range waited {
			reasons = append(reasons, w.GetReason())
			if w.GetReason() == reasonPostStartHookError {
				seen = true
				if want := `Exec lifecycle hook ([/demo exit 3]) for Container "app" in Pod "badstart_default(`; !strings.HasPrefix(w.GetMessage(), want) {
					t.Errorf("PostStartHookError message %q, want %q...", w.GetMessage(), want)
				}
			}
		}
		if !seen || !slicesContain(reasons, reasonCrashLoopBackOff) {
			t.Errorf("waiting reasons %v, want PostStartHookError and CrashLoopBackOff", reasons)
		}
	})

	t.Run("preStop runs before the container stops", func(t *testing.T) {
		e.untilRunning("prestop")
		if _, err := e.pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "prestop"}); err != nil {
			t.Fatal(err)
		}
		e.until("pod prestop gone", func() (bool, string) { return e.pod("prestop") == nil, "" })
		b, err := os.ReadFile(filepath.Join(out, "prestop"))
		if err != nil || string(b) != "ran\n" {
			t.Fatalf("what preStop wrote: %q, %v", b, err)
		}
	})

	t.Run("a preStop sleep delays the stop within the grace period", func(t *testing.T) {
		e.untilRunning("sleepy")
		start := time.Now()
		if _, err := e.pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "sleepy"}); err != nil {
			t.Fatal(err)
		}
		e.until("pod sleepy gone", func() (bool, string) { return e.pod("sleepy") == nil, "" })
		// The demo exits on SIGTERM at once: the stop took the sleep's 3s,
		// well under the 10s grace period.
		if took := time.Since(start); took < 3*time.Second || took > 9*time.Second {
			t.Errorf("deletion took %v, want the 3s sleep (and less than the 10s grace period)", took)
		}
	})

	t.Run("termination messages from the file, or from the log on error", func(t *testing.T) {
		got := e.untilPod("msg", "every container terminated", func(p *corev1.Pod) (bool, string) {
			for _, cs := range p.GetStatus().GetContainerStatuses() {
				if cs.GetState().GetTerminated() == nil {
					return false, ""
				}
			}
			return p.GetStatus().GetPhase() == "Failed", ""
		})
		for name, want := range map[string]string{
			"default":    "bye from the default path\n",
			"custom":     "bye from /tmp/last-words\n",
			"fallback":   "demo: exiting with code 3 after 100ms\n",
			"nofallback": "",
		} {
			term := containerStatusOf(got, name).GetState().GetTerminated()
			if name == "fallback" {
				if !strings.HasPrefix(term.GetMessage(), "demo v1 on msg listening on") || !strings.HasSuffix(term.GetMessage(), want) {
					t.Errorf("%s: message %q, want its log ending %q", name, term.GetMessage(), want)
				}
				continue
			}
			if term.GetMessage() != want {
				t.Errorf("%s: message %q, want %q", name, term.GetMessage(), want)
			}
		}
	})
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
