package agent

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/informer"
)

// pleg is the pod lifecycle event generator: every RelistPeriod it lists
// every sandbox and container of the runtime that carries the agent's
// labels, compares their states with the previous list, and enqueues the
// pods whose runtime state changed (a container exited, a sandbox died,
// something appeared or went). The first list enqueues every pod found,
// so that pods deleted while the agent was down are cleaned up. It owns no
// decision: the pod's sync reads the runtime again and decides.
type pleg struct {
	a        *Agent
	last     map[string]plegRecord // by "s/<id>" or "c/<id>"
	lastTime time.Time
}

type plegRecord struct {
	key   string // the pod's namespace/name
	state int32
}

func newPLEG(a *Agent) *pleg { return &pleg{a: a} }

// relist lists the runtime once and enqueues the pods that changed.
func (p *pleg) relist(ctx context.Context) error {
	start := time.Now()
	if !p.lastTime.IsZero() {
		p.a.m.relistInterval.Observe(start.Sub(p.lastTime).Seconds())
	}
	p.lastTime = start
	defer func() { p.a.m.relistDuration.Observe(time.Since(start).Seconds()) }()

	sbs, err := p.a.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("relist: sandboxes: %w", err)
	}
	cs, err := p.a.rt.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("relist: containers: %w", err)
	}
	now := map[string]plegRecord{}
	ids := map[string]bool{} // every sandbox and container
	runningPods := 0
	for _, s := range sbs {
		key, ok := podKeyOf(s.GetLabels())
		if !ok {
			continue
		}
		now["s/"+s.GetId()] = plegRecord{key, int32(s.GetState())}
		if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			runningPods++
		}
		ids[s.GetId()] = true
	}
	states := map[string]int{}
	for _, c := range cs {
		key, ok := podKeyOf(c.GetLabels())
		if !ok {
			continue
		}
		now["c/"+c.GetId()] = plegRecord{key, int32(c.GetState())}
		states[containerStateLabel(c.GetState())]++
		ids[c.GetId()] = true
	}
	changed := map[string]bool{}
	for id, r := range now {
		if old, ok := p.last[id]; !ok || old.state != r.state || p.last == nil {
			changed[r.key] = true
		}
	}
	for id, r := range p.last {
		if _, ok := now[id]; !ok {
			changed[r.key] = true
		}
	}
	p.last = now
	p.a.obs.retain(ids)
	p.a.m.runningPods.Set(float64(runningPods))
	for _, st := range []string{"created", "running", "exited", "unknown"} {
		p.a.m.runningContainers.WithLabelValues(st).Set(float64(states[st]))
	}
	for key := range changed {
		p.a.ctrl.Enqueue(key)
	}
	return nil
}

func podKeyOf(labels map[string]string) (string, bool) {
	ns, name := labels[labelPodNamespace], labels[labelPodName]
	if ns == "" || name == "" || labels[labelPodUID] == "" {
		return "", false
	}
	return informer.KeyOf(ns, name), true
}

func containerStateLabel(s runtimeapi.ContainerState) string {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return "created"
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return "running"
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return "exited"
	}
	return "unknown"
}
