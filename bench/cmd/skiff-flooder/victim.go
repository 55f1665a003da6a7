package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// victim is the user whose latency the benchmark measures, as a process
// of its own (a client does not share the apiserver's Go scheduler):
// Lists of one namespace, one at a time, at most one per interval (the
// pause is not latency), each answer checked to hold the expected items.
type victim struct {
	cms      corev1.ConfigMapsClient
	req      *metav1.ListOptions
	items    int
	interval time.Duration

	cancel context.CancelFunc
	done   chan struct{}
	// Under mu: when start ran, the Lists timed since, the first error.
	mu      sync.Mutex
	started time.Time
	samples []sample
	err     error
}

// sample is one List: when it began (since start) and how long it took.
type sample struct{ at, took time.Duration }

func newVictim(conn *grpc.ClientConn, namespace string, items int, interval time.Duration) *victim {
	return &victim{cms: corev1.NewConfigMapsClient(conn), req: &metav1.ListOptions{Namespace: namespace}, items: items, interval: interval}
}

func (v *victim) start() {
	var ctx context.Context
	ctx, v.cancel = context.WithCancel(context.Background())
	v.done = make(chan struct{})
	v.mu.Lock()
	v.started, v.samples = time.Now(), v.samples[:0]
	v.mu.Unlock()
	go func() {
		defer close(v.done)
		pause := time.NewTimer(0)
		defer pause.Stop()
		for {
			begin := time.Now()
			list, err := v.cms.List(ctx, v.req)
			took := time.Since(begin)
			if ctx.Err() != nil {
				return
			}
			if err == nil && len(list.GetItems()) != v.items {
				err = fmt.Errorf("the victim's List of %s: %d items, want %d", v.req.Namespace, len(list.GetItems()), v.items)
			}
			v.mu.Lock()
			if err != nil && v.err == nil {
				v.err = err
			}
			v.samples = append(v.samples, sample{at: begin.Sub(v.started), took: took})
			v.mu.Unlock()
			if err != nil {
				return
			}
			pause.Reset(time.Until(begin.Add(v.interval)))
			select {
			case <-ctx.Done():
				return
			case <-pause.C:
			}
		}
	}()
}

func (v *victim) stop() error {
	v.cancel()
	<-v.done
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.err
}

func (v *victim) counts() (int64, int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return int64(len(v.samples)), 0
}

// report is the Lists of the last window, for the stop line:
// "lists=<began µs>:<took µs>,...", began counted from start.
func (v *victim) report() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var b strings.Builder
	b.WriteString("lists=")
	for i, s := range v.samples {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(s.at.Microseconds(), 10))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(s.took.Microseconds(), 10))
	}
	return b.String()
}
