package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
)

// prober runs the probes of running containers, one goroutine per probe
// of each container instance, on the wall clock (periods are seconds), and
// keeps their results by container id. A change of result enqueues the
// pod: readiness feeds its status; a failed liveness or startup probe
// makes the next sync kill the container.
type prober struct {
	runner   *probeRunner
	onChange func(key string)
	recorder events.Recorder
	log      *zap.Logger

	mu      sync.Mutex
	ctx     context.Context
	workers map[workerKey]*probeWorker
	results map[string]*probeResults // by container id
	wg      sync.WaitGroup
}

type workerKey struct {
	uid, container string
	kind           probeKind
}

type probeWorker struct {
	containerID string
	stop        chan struct{}
}

// probeResults are one container instance's results.
type probeResults struct {
	ready, started probeResult
	unhealthy      string // the failed liveness or startup probe's message
}

func newProber(runner *probeRunner, onChange func(string), rec events.Recorder, log *zap.Logger) *prober {
	return &prober{
		runner: runner, onChange: onChange, recorder: rec, log: log,
		workers: map[workerKey]*probeWorker{}, results: map[string]*probeResults{},
	}
}

// start lets workers run until ctx ends; stop waits for them.
func (m *prober) start(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ctx = ctx
}

func (m *prober) wait() { m.wg.Wait() }

// results returns the readiness, startup and health results of rt's
// containers.
func (m *prober) snapshot(rt *podRuntime) (ready, started map[string]bool, unhealthy map[string]string) {
	ready, started, unhealthy = map[string]bool{}, map[string]bool{}, map[string]string{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range rt.Containers {
		r, ok := m.results[c.ID]
		if !ok {
			continue
		}
		if r.ready != resultUnknown {
			ready[c.ID] = r.ready == resultSuccess
		}
		if r.started == resultSuccess {
			started[c.ID] = true
		}
		if r.unhealthy != "" {
			unhealthy[c.ID] = r.unhealthy
		}
	}
	return ready, started, unhealthy
}

// update makes the workers match pod p's running containers: a worker per
// probe of each running container, replaced when the container is.
func (m *prober) update(p *corev1.Pod, rt *podRuntime, podIP string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx == nil {
		return
	}
	uid := p.GetMetadata().GetUid()
	live := map[string]bool{}
	for _, c := range probedContainers(p) { // sidecars, then main containers
		cur := rt.latest(c.GetName(), "")
		for _, k := range []probeKind{liveness, readiness, startup} {
			key := workerKey{uid, c.GetName(), k}
			if probeOf(c, k) == nil || cur == nil || !cur.running() {
				m.stopLocked(key)
				continue
			}
			live[cur.ID] = true
			if w, ok := m.workers[key]; ok && w.containerID == cur.ID {
				continue
			}
			m.stopLocked(key)
			if _, ok := m.results[cur.ID]; !ok {
				m.results[cur.ID] = &probeResults{}
			}
			w := &probeWorker{containerID: cur.ID, stop: make(chan struct{})}
			m.workers[key] = w
			m.wg.Add(1)
			go m.run(w, proto.Clone(p).(*corev1.Pod), proto.Clone(c).(*corev1.Container), k, cur.StartedAt, podIP)
		}
	}
	// Results of containers no longer running go.
	for _, c := range rt.Containers {
		if !live[c.ID] {
			delete(m.results, c.ID)
		}
	}
}

// removePod stops every worker of a pod.
func (m *prober) removePod(uid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, w := range m.workers {
		if key.uid == uid {
			m.stopLocked(key)
			delete(m.results, w.containerID)
		}
	}
}

func (m *prober) stopLocked(key workerKey) {
	if w, ok := m.workers[key]; ok {
		close(w.stop)
		delete(m.workers, key)
	}
}

// run probes one container until it is replaced, its startup probe
// succeeds (startup), or its liveness or startup probe fails.
func (m *prober) run(w *probeWorker, p *corev1.Pod, c *corev1.Container, kind probeKind, startedAt time.Time, podIP string) {
	defer m.wg.Done()
	pr := probeOf(c, kind)
	key := informer.Key(p)
	ctx, cancel := context.WithCancel(m.ctx)
	defer cancel()
	go func() {
		select {
		case <-w.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !wait(time.Until(startedAt.Add(time.Duration(pr.GetInitialDelaySeconds()) * time.Second))) {
		return
	}
	period := time.Duration(max(pr.GetPeriodSeconds(), 1)) * time.Second
	var counter probeCounter
	for {
		if kind == startup || c.GetStartupProbe() == nil || m.startedOK(w.containerID) {
			ok, msg := m.runner.run(ctx, pr, c, w.containerID, podIP)
			if ctx.Err() != nil {
				return
			}
			if !ok {
				m.recorder.Eventf(p, events.EventTypeWarning, "Unhealthy", "%s probe failed: %s", kind, msg)
			}
			if counter.observe(ok, pr.GetSuccessThreshold(), pr.GetFailureThreshold()) {
				done := m.set(w.containerID, kind, counter.result, c.GetName())
				m.onChange(key)
				if done {
					return
				}
			}
		}
		if !wait(period) {
			return
		}
	}
}

func (m *prober) startedOK(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.results[id]
	return ok && r.started == resultSuccess
}

// set records a probe's new result and reports whether its worker is done.
func (m *prober) set(id string, kind probeKind, res probeResult, name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.results[id]
	if !ok {
		return true // the container is gone
	}
	switch kind {
	case readiness:
		r.ready = res
		return false
	case startup:
		r.started = res
		if res == resultFailure {
			r.unhealthy = fmt.Sprintf("Container %s failed startup probe, will be restarted", name)
		}
		return true
	default:
		if res == resultFailure {
			r.unhealthy = fmt.Sprintf("Container %s failed liveness probe, will be restarted", name)
			return true
		}
		return false
	}
}
