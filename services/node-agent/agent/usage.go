package agent

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/workqueue"
	nodev1 "skiff.dev/proto/node/v1"
)

// maxSampleAge: a Usage call reuses the previous call's sample as its
// first one when it is at most this old (and at least UsageWindow), as
// metrics-server rates two scrapes about 15 s apart; an older one says
// little about now.
const maxSampleAge = time.Minute

// usageSampler gives pairs of stats snapshots at least window apart: the
// previous call's last one when it fits, else one read now and one read
// after waiting the window.
type usageSampler struct {
	read   func(context.Context) (*statsSnapshot, error)
	clock  workqueue.Clock
	window time.Duration

	mu   sync.Mutex
	last *statsSnapshot
}

func (s *usageSampler) pair(ctx context.Context) (prev, cur *statsSnapshot, err error) {
	s.mu.Lock()
	prev = s.last
	s.mu.Unlock()
	if prev == nil || s.clock.Now().Sub(prev.taken) > maxSampleAge {
		if prev, err = s.read(ctx); err != nil {
			return nil, nil, err
		}
	}
	if wait := s.window - s.clock.Now().Sub(prev.taken); wait > 0 {
		t := s.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, ctx.Err()
		case <-t.C():
		}
	}
	if cur, err = s.read(ctx); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	if s.last == nil || cur.taken.After(s.last.taken) {
		s.last = cur
	}
	s.mu.Unlock()
	return prev, cur, nil
}

// cpuRate is the CPU rate between two samples of one counter: the growth
// of the cumulative usage over the time between them. Only a runtime that
// reports no counter has its own rate used (containerd 1.6 reports
// usageNanoCores 0 beside a counter). ok is false when there is no rate:
// no earlier sample, a counter reset (a restart), no time between.
func cpuRate(prev, cur cpuSample) (nanoCores uint64, window time.Duration, ok bool) {
	if !cur.hasTotal {
		return cur.nanoCores, 0, cur.hasRate
	}
	if prev.hasTotal && cur.at.After(prev.at) && cur.coreNanos >= prev.coreNanos {
		window = cur.at.Sub(prev.at)
		return uint64(math.Round(float64(cur.coreNanos-prev.coreNanos) / window.Seconds())), window, true
	}
	return 0, 0, false
}

// usageOf computes NodeAgent.Usage's answer from two snapshots, pure:
// the node's rate and working set, and each selected pod's running
// containers' (those with a rate; pods without one are left out).
func usageOf(prev, cur *statsSnapshot, req *nodev1.UsageRequest) (*nodev1.UsageResponse, error) {
	out := &nodev1.UsageResponse{}
	if cur.nodeErr != nil {
		return nil, fmt.Errorf("the machine's usage: %w", cur.nodeErr)
	}
	rate, window, _ := cpuRate(cpuSample{at: prev.node.at, coreNanos: prev.node.coreNanos, hasTotal: prev.nodeErr == nil},
		cpuSample{at: cur.node.at, coreNanos: cur.node.coreNanos, hasTotal: true})
	out.Timestamp, out.Window = timestamppb.New(cur.node.at), durationpb.New(window)
	out.Node = &nodev1.ResourceUsage{NanoCores: rate, WorkingSetBytes: cur.node.workingSet}
	if req.GetNodeOnly() {
		return out, nil
	}
	for _, p := range cur.pods {
		if (req.GetNamespace() != "" && p.namespace != req.GetNamespace()) || (req.GetName() != "" && p.name != req.GetName()) {
			continue
		}
		pu := &nodev1.PodUsage{Namespace: p.namespace, Name: p.name, Uid: p.uid}
		var before map[string]*containerStats
		if pp := prev.pods[p.uid]; pp != nil {
			before = pp.containers
		}
		for _, name := range slices.Sorted(maps.Keys(p.containers)) {
			c := p.containers[name]
			var was cpuSample
			if b := before[name]; b != nil && b.id == c.id {
				was = b.cpu
			}
			rate, window, ok := cpuRate(was, c.cpu)
			if !ok {
				continue
			}
			if pu.Timestamp == nil {
				pu.Timestamp, pu.Window = timestamppb.New(c.cpu.at), durationpb.New(window)
			}
			pu.Containers = append(pu.Containers, &nodev1.ContainerUsage{Name: name,
				Usage: &nodev1.ResourceUsage{NanoCores: rate, WorkingSetBytes: c.memory.workingSet}})
		}
		if len(pu.Containers) > 0 {
			out.Pods = append(out.Pods, pu)
		}
	}
	slices.SortFunc(out.Pods, func(a, b *nodev1.PodUsage) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	return out, nil
}

// Usage serves NodeAgent.Usage: the node's and its pods' CPU (a rate
// over at least Config.UsageWindow) and memory working set.
func (s *nodeAgentServer) Usage(ctx context.Context, req *nodev1.UsageRequest) (*nodev1.UsageResponse, error) {
	if req.GetName() != "" && req.GetNamespace() == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("usage of pod %q: namespace is required with name", req.GetName()))
	}
	prev, cur, err := s.a.usage.pair(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("container runtime stats: %v", err))
	}
	out, err := usageOf(prev, cur, req)
	if err != nil {
		return nil, apierrors.NewInternal(err)
	}
	return out, nil
}
