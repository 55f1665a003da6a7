package scheduler

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	policyv1 "skiff.dev/proto/policy/v1"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// Preemption's effects (DefaultPreemption decides, in package plugins):
// the preemptor is nominated to the node (status.nominatedNodeName, and
// at once in the nominator, so that the next cycles leave it the room),
// and each victim gets a DisruptionTarget condition, a graceful delete and
// a Preempted event. The nominator follows the pods' nominatedNodeName
// through the informer handlers.

// The victims' condition, as Kubernetes writes it.
const (
	conditionDisruptionTarget = "DisruptionTarget"
	reasonPreemptionBy        = "PreemptionByScheduler"
)

// nominator holds the pods nominated to nodes by uid.
type nominator struct {
	mu     sync.RWMutex
	byUID  map[string]*framework.PodInfo
	nodeOf map[string]string
}

func newNominator() *nominator {
	return &nominator{byUID: map[string]*framework.PodInfo{}, nodeOf: map[string]string{}}
}

// set records pi as nominated to node ("" forgets it).
func (n *nominator) set(pi *framework.PodInfo, node string) {
	uid := pi.UID()
	n.mu.Lock()
	defer n.mu.Unlock()
	if node == "" {
		delete(n.byUID, uid)
		delete(n.nodeOf, uid)
		return
	}
	n.byUID[uid], n.nodeOf[uid] = pi, node
}

func (n *nominator) forget(uid string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.byUID, uid)
	delete(n.nodeOf, uid)
}

// NominatedPods implements framework.Nominator.
func (n *nominator) NominatedPods() map[string][]*framework.PodInfo {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if len(n.byUID) == 0 {
		return nil
	}
	out := make(map[string][]*framework.PodInfo, len(n.byUID))
	for uid, pi := range n.byUID {
		node := n.nodeOf[uid]
		out[node] = append(out[node], pi)
	}
	return out
}

// pdbLister serves the PodDisruptionBudgets informer to the plugins.
type pdbLister struct {
	inf *informer.Informer[*policyv1.PodDisruptionBudget]
}

func (l pdbLister) ListPDBs() []*policyv1.PodDisruptionBudget { return l.inf.Store().List() }

// usesPreemption reports whether a profile runs DefaultPreemption, which
// needs the PodDisruptionBudgets informer.
func usesPreemption(p *config.Configuration) bool {
	for i := range p.Profiles {
		if p.Profiles[i].Enabled(config.PostFilter, config.DefaultPreemption) {
			return true
		}
	}
	return false
}

// Preempt implements framework.Preempter.
func (s *Scheduler) Preempt(ctx context.Context, pod *framework.PodInfo, node string, victims []*framework.PodInfo) error {
	s.nominator.set(pod, node)
	if err := s.setNominatedNodeName(ctx, pod.Pod, node); err != nil {
		s.nominator.forget(pod.UID())
		return fmt.Errorf("nominating %s to %s: %w", pod.Key(), node, err)
	}
	rec := s.recorderFor(pod.Pod)
	errs := make(chan error, len(victims))
	var wg sync.WaitGroup
	for _, v := range victims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.evict(ctx, v.Pod); err != nil {
				errs <- fmt.Errorf("evicting %s: %w", v.Key(), err)
				return
			}
			rec.Eventf(v.Pod, events.EventTypeNormal, "Preempted", "Preempted by pod %s on node %s", pod.UID(), node)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	s.metrics.preemptionVictims.Observe(float64(len(victims)))
	s.metrics.preemptionAttempts.Inc()
	if ce := s.log.Check(zap.DebugLevel, "preempted"); ce != nil {
		ce.Write(zap.String("pod", pod.Key()), zap.String("node", node), zap.Int("victims", len(victims)))
	}
	return nil
}

func (s *Scheduler) recorderFor(p *corev1.Pod) events.Recorder {
	if r, ok := s.recorders[schedulerName(p)]; ok {
		return r
	}
	return events.Nop()
}

// setNominatedNodeName writes the pod's status.nominatedNodeName.
func (s *Scheduler) setNominatedNodeName(ctx context.Context, pod *corev1.Pod, node string) error {
	m := pod.GetMetadata()
	cur := pod
	return client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		if cur == nil {
			c, err := s.podsc.Get(ctx, m.GetNamespace(), m.GetName())
			if err != nil {
				return err
			}
			cur = c
		}
		if cur.GetMetadata().GetUid() != m.GetUid() || assigned(cur) {
			return nil
		}
		next := proto.Clone(cur).(*corev1.Pod)
		cur = nil
		if next.Status == nil {
			next.Status = &corev1.PodStatus{}
		}
		next.Status.NominatedNodeName = node
		_, err := s.podsc.UpdateStatus(ctx, next)
		return err
	})
}

// evict marks a victim with the DisruptionTarget condition and deletes it
// gracefully (its own grace period), as Kubernetes' preemption does; a
// victim already gone is fine.
func (s *Scheduler) evict(ctx context.Context, victim *corev1.Pod) error {
	m := victim.GetMetadata()
	cur := victim
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		if cur == nil {
			c, err := s.podsc.Get(ctx, m.GetNamespace(), m.GetName())
			if err != nil {
				return err
			}
			cur = c
		}
		if cur.GetMetadata().GetUid() != m.GetUid() {
			return nil
		}
		next := proto.Clone(cur).(*corev1.Pod)
		cur = nil
		setCondition(next, &corev1.PodCondition{
			Type: conditionDisruptionTarget, Status: "True", Reason: reasonPreemptionBy,
			Message:            config.DefaultSchedulerName + ": preempting to accommodate a higher priority pod",
			LastTransitionTime: timestamppb.Now(),
		})
		_, err := s.podsc.UpdateStatus(ctx, next)
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	_, err = s.podsc.Delete(ctx, &metav1.DeleteRequest{Namespace: m.GetNamespace(), Name: m.GetName(),
		Preconditions: &metav1.Preconditions{Uid: m.GetUid()}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
