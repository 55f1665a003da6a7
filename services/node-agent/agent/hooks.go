package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/events"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/node-agent/cri"
)

// Lifecycle hooks, as the kubelet runs them (pkg/kubelet/lifecycle and
// kuberuntime_container.go): postStart right after a container starts,
// before the sync that started it writes the status (a failure kills the
// container, which then restarts by the pod's policy with the crash-loop
// backoff); preStop before a running container is stopped, within the grace
// period, whose rest the container then gets.

// Event and waiting reasons of the hooks, the kubelet's.
const (
	eventFailedPostStartHook  = "FailedPostStartHook"
	eventFailedPreStopHook    = "FailedPreStopHook"
	eventLifecycleHTTPFallbck = "LifecycleHTTPFallback"
	reasonPostStartHookError  = "PostStartHookError"
)

// minimumGracePeriod is the least a container gets to stop (seconds), as
// the kubelet's minimumGracePeriodInSeconds: preStop may use up the grace
// period, and SIGKILL at once is never wanted.
const minimumGracePeriod = 2

// hookRunner runs lifecycle handlers: exec in the container (CRI
// ExecSync, bounded by the runtime's call timeout as the kubelet's is by
// its), httpGet with the probes' HTTP client, and sleep on the clock.
type hookRunner struct {
	rt     *cri.Client
	probes *probeRunner
	clock  workqueue.Clock
	record func(eventType, reason, message string) // on the pod
}

func (a *Agent) hooks(pod *corev1.Pod) *hookRunner {
	return &hookRunner{rt: a.rt, probes: a.prober.runner, clock: a.cfg.Clock, record: func(typ, reason, msg string) {
		if pod != nil {
			a.recorder.Event(pod, typ, reason, msg)
		}
	}}
}

// errInvalidHandler: a handler the agent cannot run (tcpSocket, which
// Kubernetes keeps in the API for compatibility and fails the same way).
var errInvalidHandler = errors.New("invalid handler")

// run runs handler h of container c (id) in pod p and returns, on failure,
// the kubelet's message with the error.
func (r *hookRunner) run(ctx context.Context, h *corev1.LifecycleHandler, p *corev1.Pod, c *corev1.Container, id, podIP string) (string, error) {
	switch {
	case h.GetExec() != nil:
		cmd := h.GetExec().GetCommand()
		out, err := r.exec(ctx, id, cmd)
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				cmd, c.GetName(), podRef(p), err, out), err
		}
		return "", nil
	case h.GetHttpGet() != nil:
		if err := r.httpGet(ctx, h.GetHttpGet(), c, podIP); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.GetHttpGet().GetPath(), c.GetName(), podRef(p), err), err
		}
		return "", nil
	case h.GetSleep() != nil:
		if err := r.sleep(ctx, h.GetSleep().GetSeconds()); err != nil {
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.GetSleep().GetSeconds(), c.GetName(), podRef(p), err), err
		}
		return "", nil
	}
	err := fmt.Errorf("%w: %s", errInvalidHandler, handlerKind(h))
	return fmt.Sprintf("Cannot run handler: %v", err), err
}

func handlerKind(h *corev1.LifecycleHandler) string {
	if h.GetTcpSocket() != nil {
		return "tcpSocket is not supported as a lifecycle handler"
	}
	return "no action"
}

// podRef is the kubelet's format.Pod: name_namespace(uid).
func podRef(p *corev1.Pod) string {
	m := p.GetMetadata()
	return fmt.Sprintf("%s_%s(%s)", m.GetName(), m.GetNamespace(), m.GetUid())
}

// exec runs cmd in the container and returns its output; a non-zero exit
// is an error, as the kubelet's RunInContainer.
func (r *hookRunner) exec(ctx context.Context, id string, cmd []string) (string, error) {
	res, err := r.rt.ExecSync(ctx, id, cmd, 0)
	if err != nil {
		return "", errors.New(cri.Message(err))
	}
	out := string(res.GetStdout()) + string(res.GetStderr())
	if res.GetExitCode() != 0 {
		return out, fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), res.GetExitCode(), res.GetStderr())
	}
	return out, nil
}

// httpGet GETs the handler's URL (the pod's IP unless a host is given).
// As in Kubernetes only a failed request fails the hook, whatever the
// status; an HTTPS request answered in plain HTTP is retried in HTTP, with
// a LifecycleHTTPFallback event.
func (r *hookRunner) httpGet(ctx context.Context, g *corev1.HTTPGetAction, c *corev1.Container, podIP string) error {
	u, err := probeURL(g, c, podIP)
	if err != nil {
		return err
	}
	do := func(u string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", "kube-lifecycle/skiff")
		for _, h := range g.GetHttpHeaders() {
			if strings.EqualFold(h.GetName(), "Host") {
				req.Host = h.GetValue()
			} else {
				req.Header.Add(h.GetName(), h.GetValue())
			}
		}
		resp, err := r.probes.client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
		return resp.Body.Close()
	}
	err = do(u)
	if err != nil && strings.HasPrefix(u, "https://") && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		if do("http://"+strings.TrimPrefix(u, "https://")) == nil {
			r.record(events.EventTypeWarning, eventLifecycleHTTPFallbck,
				fmt.Sprintf("request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", strings.TrimPrefix(u, "https://")))
			return nil
		}
	}
	return err
}

// sleep waits seconds on the clock; the container stopping first (ctx)
// ends it early, as a failure.
func (r *hookRunner) sleep(ctx context.Context, seconds int64) error {
	t := r.clock.NewTimer(time.Duration(seconds) * time.Second)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return errors.New("container terminated before sleep hook finished")
	}
}

// containerSpec is the container of pod p named name (app, init or
// ephemeral), or nil.
func containerSpec(p *corev1.Pod, name string) *corev1.Container {
	for _, c := range p.GetSpec().GetContainers() {
		if c.GetName() == name {
			return c
		}
	}
	for _, c := range p.GetSpec().GetInitContainers() {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

// postStart runs c's postStart hook, if any, on the container id that has
// just started. On failure, as the kubelet: a FailedPostStartHook event
// (without the message, which may hold secrets), the container is killed
// (its preStop included) and waits with PostStartHookError and the
// message until the next sync restarts it by the pod's policy. It reports
// whether the hook passed.
func (a *Agent) postStart(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string, res *syncResult) bool {
	h := c.GetLifecycle().GetPostStart()
	if h == nil {
		return true
	}
	msg, err := a.hooks(pod).run(ctx, h, pod, c, id, podIP)
	if err == nil {
		return true
	}
	a.log.Info("postStart hook failed", zap.String("pod", keyOf(pod)), zap.String("container", c.GetName()), zap.String("message", msg))
	a.recorder.Event(pod, events.EventTypeWarning, eventFailedPostStartHook, "PostStartHook failed")
	if kerr := a.stopContainer(ctx, pod, c.GetName(), id, gracePeriod(pod), eventFailedPostStartHook); kerr != nil {
		a.log.Warn("killing a container whose postStart hook failed", zap.String("pod", keyOf(pod)), zap.String("container", c.GetName()), zap.Error(kerr))
	}
	if restartPolicy(pod) != "Never" {
		res.wait(c.GetName(), reasonPostStartHookError, msg)
	}
	res.requeueAfter(time.Millisecond) // restart (or back off) without waiting for the relist
	return false
}

// stopContainer stops running container id (named name) of pod as the
// kubelet's killContainer: a Killing event (message: why, or "Stopping
// container <name>"), the preStop hook when pod's spec has one and grace
// is above 0, then StopContainer with the grace left, at least
// minimumGracePeriod. pod may be nil (a pod gone from the API): no event,
// no hook.
func (a *Agent) stopContainer(ctx context.Context, pod *corev1.Pod, name, id string, grace int64, why string) error {
	var spec *corev1.Container
	if pod != nil {
		if why == "" {
			why = fmt.Sprintf("Stopping container %s", name)
		}
		a.recorder.Event(pod, events.EventTypeNormal, "Killing", why)
		spec = containerSpec(pod, name)
	}
	if h := spec.GetLifecycle().GetPreStop(); h != nil && grace > 0 {
		hctx, cancel := context.WithCancel(ctx)
		defer cancel() // a hook still running past the grace period ends with the container
		took := a.preStop(hctx, pod, spec, id, h, grace)
		grace = graceAfterPreStop(grace, took)
	}
	err := a.rt.StopContainer(ctx, id, max(grace, minimumGracePeriod))
	if err != nil && !cri.IsNotFound(err) {
		return fmt.Errorf("stopping container %s: %w", name, err)
	}
	return nil
}

// preStop runs the hook in the background and waits for it at most grace
// seconds on the clock, returning how long it waited. A failure is a
// FailedPreStopHook event; the container is stopped anyway.
func (a *Agent) preStop(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id string, h *corev1.LifecycleHandler, grace int64) time.Duration {
	podIP := pod.GetStatus().GetPodIp()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if msg, err := a.hooks(pod).run(ctx, h, pod, c, id, podIP); err != nil {
			a.log.Info("preStop hook failed", zap.String("pod", keyOf(pod)), zap.String("container", c.GetName()), zap.String("message", msg))
			a.recorder.Event(pod, events.EventTypeWarning, eventFailedPreStopHook, "PreStopHook failed")
		}
	}()
	return waitHook(a.cfg.Clock, done, grace)
}

// waitHook waits for done at most grace seconds on clock and returns how
// long it waited.
func waitHook(clock workqueue.Clock, done <-chan struct{}, grace int64) time.Duration {
	start := clock.Now()
	t := clock.NewTimer(time.Duration(grace) * time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
	}
	return clock.Now().Sub(start)
}

// graceAfterPreStop is what StopContainer gets after a preStop hook that
// took took: the grace period less the whole seconds it took, at least
// minimumGracePeriod.
func graceAfterPreStop(grace int64, took time.Duration) int64 {
	return max(grace-int64(took/time.Second), minimumGracePeriod)
}
