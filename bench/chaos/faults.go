package chaos

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// pauseAgent SIGSTOPs a node agent until the node lifecycle controller has
// marked its pods not ready (past the grace period), resumes it, and waits
// until every pod is Ready again: the agent writes back the status it
// observes.
func (r *run) pauseAgent(ctx context.Context) error {
	n := r.c.nodes[1]
	p := r.c.procs[n.name]
	r.setReadyFloor(false)
	t0 := time.Now()
	if err := p.Pause(); err != nil {
		return err
	}
	err := r.samples.until(ctx, r.cfg.NodeGracePeriod+30*time.Second, func(s *snapshot) bool {
		for _, pod := range s.pods {
			if pod.GetSpec().GetNodeName() == n.name && notReadyBecauseOfNode(pod) {
				return true
			}
		}
		return false
	})
	marked := time.Since(t0)
	if rerr := p.Resume(); rerr != nil {
		return rerr
	}
	if err != nil {
		return fmt.Errorf("the pods of paused %s were never marked not ready: %w", n.name, err)
	}
	t1 := time.Now()
	took, err := r.converge(ctx, webApp, t1)
	if err != nil {
		return err
	}
	r.setReadyFloor(true)
	r.figure(Figure{Name: "converge.after_agent_pause_ms", Value: ms(took), Unit: "ms", Bound: ms(r.cfg.Converge),
		Note: fmt.Sprintf("from SIGCONT until every pod is Ready again; %s was paused %.1f s, its pods marked NotReady (NodeNotReady) after %.1f s",
			n.name, marked.Seconds(), marked.Seconds())})
	return nil
}

func notReadyBecauseOfNode(p *corev1.Pod) bool {
	for _, c := range p.GetStatus().GetConditions() {
		if c.GetType() == "Ready" && c.GetStatus() == "False" && c.GetReason() == "NodeNotReady" {
			return true
		}
	}
	return false
}

// nodeAway kills a node agent for good with pods pinned (spec.nodeName) to
// its node: they are evicted after their own tolerationSeconds, counted
// from when each met the taint, not in a loop. Then the Node is deleted:
// the pods bound to it are gone within a minute, and the Deployment whose
// pods were there is whole again on the other nodes.
func (r *run) nodeAway(ctx context.Context) error {
	n := r.c.nodes[len(r.c.nodes)-1]
	const pinned = 3
	d := r.deployment(pinnedApp, pinned)
	d.Spec.Template.Spec.NodeName = n.name
	secs := int64(r.cfg.PinnedToleration / time.Second)
	for _, key := range []string{"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"} {
		d.Spec.Template.Spec.Tolerations = append(d.Spec.Template.Spec.Tolerations, &corev1.Toleration{
			Key: key, Operator: "Exists", Effect: "NoExecute", TolerationSeconds: proto.Int64(secs)})
	}
	if _, err := client.Deployments(r.c.conn).Create(ctx, d); err != nil {
		return err
	}
	if _, err := r.converge(ctx, pinnedApp, time.Now()); err != nil {
		return err
	}
	r.setReadyFloor(false)
	first := map[string]bool{}
	if snap, err := r.samples.fresh(ctx, time.Minute); err == nil {
		for _, p := range snap.pods {
			if p.GetMetadata().GetLabels()["app"] == pinnedApp {
				first[p.GetMetadata().GetUid()] = true
			}
		}
	}
	t0 := time.Now()
	r.c.kill(n.name)
	// The first eviction: a pinned pod of before is being deleted or gone.
	err := r.samples.until(ctx, r.cfg.NodeGracePeriod+r.cfg.PinnedToleration+30*time.Second, func(s *snapshot) bool {
		left := 0
		for _, p := range s.pods {
			if first[p.GetMetadata().GetUid()] && controllerutil.IsPodActive(p) {
				left++
			}
		}
		return left < len(first)
	})
	if err != nil {
		return fmt.Errorf("no pod pinned to %s was evicted: %w", n.name, err)
	}
	evictedAfter := time.Since(t0)
	// Every pinned pod seen during the window: each replacement is a pod
	// evicted before it.
	seen := map[string]bool{}
	end := time.Now().Add(r.cfg.EvictionWindow)
	if err := r.samples.until(ctx, r.cfg.EvictionWindow+30*time.Second, func(s *snapshot) bool {
		for _, p := range s.pods {
			if p.GetMetadata().GetLabels()["app"] == pinnedApp && !first[p.GetMetadata().GetUid()] {
				seen[p.GetMetadata().GetUid()] = true
			}
		}
		return s.at.After(end)
	}); err != nil {
		return err
	}
	// Each replacement lives at least its tolerationSeconds.
	bound := pinned * (int(r.cfg.EvictionWindow/r.cfg.PinnedToleration) + 2)
	r.figure(Figure{Name: "eviction.pinned_replacements", Value: float64(len(seen)), Unit: "pods", Bound: float64(bound),
		Note: fmt.Sprintf("replacements of %d pods pinned to %s (tolerationSeconds %d) in %v, the first eviction %.1f s after the agent was killed",
			pinned, n.name, secs, r.cfg.EvictionWindow, evictedAfter.Seconds())})

	if _, err := client.Deployments(r.c.conn).Delete(ctx, &metav1.DeleteRequest{Namespace: namespace, Name: pinnedApp}); err != nil {
		return err
	}
	t1 := time.Now()
	if _, err := client.Nodes(r.c.conn).Delete(ctx, &metav1.DeleteRequest{Name: n.name}); err != nil {
		return err
	}
	var left int
	if err := r.samples.until(ctx, r.cfg.NodeGone+r.cfg.Converge, func(s *snapshot) bool {
		left = 0
		for _, p := range s.pods {
			if p.GetSpec().GetNodeName() == n.name {
				left++
			}
		}
		return left == 0
	}); err != nil {
		return fmt.Errorf("%d pods still bound to deleted node %s: %w", left, n.name, err)
	}
	gone := time.Since(t1)
	r.figure(Figure{Name: "node_deleted.pods_gone_ms", Value: ms(gone), Unit: "ms", Bound: ms(r.cfg.NodeGone),
		Note: fmt.Sprintf("from the delete of Node %s until no pod was bound to it (pod garbage collector)", n.name)})
	took, err := r.converge(ctx, webApp, t1)
	if err != nil {
		return err
	}
	r.setReadyFloor(true)
	r.figure(Figure{Name: "converge.after_node_deleted_ms", Value: ms(took), Unit: "ms", Bound: ms(r.cfg.NodeGone + r.cfg.Converge),
		Note: fmt.Sprintf("the Deployment whole again on the other %d nodes, from the Node's delete", len(r.c.nodes)-1)})
	return nil
}

// killDuringWrites SIGKILLs the apiserver while Writes ConfigMaps are
// being created, restarts it, lets the writers retry what was not
// acknowledged, and checks that every acknowledged write is there.
func (r *run) killDuringWrites(ctx context.Context) error {
	const writers = 16
	cms := client.ConfigMaps(r.c.conn)
	acked := make([]atomic.Bool, r.cfg.Writes)
	var nAcked atomic.Int64
	var restartedAt atomic.Int64 // unix nanos of the restart, 0 before
	var firstAfter atomic.Int64  // unix nanos of the first ack after the kill
	killAt := int64(r.cfg.Writes * 3 / 10)
	killNow := make(chan struct{})
	var killOnce sync.Once

	wctx, cancel := context.WithTimeout(ctx, r.cfg.Converge+time.Minute)
	defer cancel()
	jobs := make(chan int)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range writers {
		wg.Go(func() {
			for i := range jobs {
				cm := &corev1.ConfigMap{
					Metadata: &metav1.ObjectMeta{Name: fmt.Sprintf("w-%04d", i), Namespace: writesNamespace},
					Data:     map[string]string{"i": fmt.Sprint(i)},
				}
				for wctx.Err() == nil {
					_, err := cms.Create(wctx, cm)
					if err == nil || apierrors.IsAlreadyExists(err) {
						acked[i].Store(true)
						if restartedAt.Load() != 0 {
							firstAfter.CompareAndSwap(0, time.Now().UnixNano())
						}
						if nAcked.Add(1) == killAt {
							killOnce.Do(func() { close(killNow) })
						}
						break
					}
					t := time.NewTimer(100 * time.Millisecond)
					select {
					case <-t.C:
					case <-wctx.Done():
					}
				}
				if !acked[i].Load() {
					failed.Add(1)
				}
			}
		})
	}
	go func() {
		defer close(jobs)
		for i := range r.cfg.Writes {
			select {
			case jobs <- i:
			case <-wctx.Done():
				return
			}
		}
	}()
	var down time.Duration
	var restartErr error
	select {
	case <-killNow:
		down, restartErr = r.c.restart(ctx, APIServer)
		restartedAt.Store(time.Now().UnixNano())
	case <-wctx.Done():
		restartErr = fmt.Errorf("only %d of %d writes acknowledged before the deadline", nAcked.Load(), r.cfg.Writes)
	}
	wg.Wait()
	if restartErr != nil {
		return restartErr
	}
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d writes never acknowledged", n)
	}
	list, err := cms.List(ctx, &metav1.ListOptions{Namespace: writesNamespace})
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, cm := range list.GetItems() {
		have[cm.GetMetadata().GetName()] = true
	}
	missing := 0
	for i := range acked {
		if name := fmt.Sprintf("w-%04d", i); acked[i].Load() && !have[name] {
			missing++
			if missing <= 10 {
				r.violate(fmt.Sprintf("acknowledged write %s/%s is missing after the apiserver's restart", writesNamespace, name))
			}
		}
	}
	if missing > 10 {
		r.violate(fmt.Sprintf("%d acknowledged writes missing in all", missing))
	}
	var gap time.Duration
	if f := firstAfter.Load(); f != 0 {
		gap = time.Duration(f - restartedAt.Load() + int64(down))
	}
	r.figure(Figure{Name: "writes.acknowledged", Value: float64(nAcked.Load()), Unit: "writes",
		Note: fmt.Sprintf("of %d, by %d writers retrying until acknowledged; the apiserver SIGKILLed after %d; %d missing afterwards", r.cfg.Writes, writers, killAt, missing)})
	r.figure(Figure{Name: "writes.unavailable_ms", Value: ms(gap), Unit: "ms", Bound: ms(r.cfg.Converge),
		Note: fmt.Sprintf("from the SIGKILL until the first write acknowledged after it (the restarted apiserver said it was serving after %.0f ms)", ms(down))})
	took, err := r.converge(ctx, webApp, time.Now())
	if err != nil {
		return err
	}
	r.figure(Figure{Name: "converge.after_writes_ms", Value: ms(took), Unit: "ms", Bound: ms(r.cfg.Converge), Note: "the Deployment checked whole after the writes"})
	return nil
}
