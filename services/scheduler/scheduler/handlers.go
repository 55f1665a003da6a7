package scheduler

import (
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/defaults"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// The informer handlers only update the cache and the queue: pods with a
// node are counted in the cache, pods without one that a profile serves
// are queued, and changes that could let an unschedulable pod fit move the
// unschedulable pods back to be tried again.

func assigned(p *corev1.Pod) bool { return p.GetSpec().GetNodeName() != "" }

func finished(p *corev1.Pod) bool {
	switch p.GetStatus().GetPhase() {
	case "Succeeded", "Failed":
		return true
	}
	return false
}

func schedulerName(p *corev1.Pod) string {
	if n := p.GetSpec().GetSchedulerName(); n != "" {
		return n
	}
	return defaults.DefaultSchedulerName
}

// ours reports whether p waits for this scheduler: no node, not finished
// or being deleted, and a schedulerName one of our profiles serves.
func (s *Scheduler) ours(p *corev1.Pod) bool {
	if assigned(p) || finished(p) || p.GetMetadata().GetDeletionTimestamp() != nil {
		return false
	}
	_, ok := s.profiles[schedulerName(p)]
	return ok
}

func (s *Scheduler) onPodAdd(p *corev1.Pod) {
	switch {
	case assigned(p):
		if !finished(p) {
			s.cache.AddPod(framework.NewPodInfo(p))
			s.assignedPodAdded()
		}
	case s.ours(p):
		pi := framework.NewPodInfo(p)
		if !s.preEnqueue(pi) {
			return
		}
		if node := p.GetStatus().GetNominatedNodeName(); node != "" {
			s.nominator.set(pi, node)
		}
		s.queue.Add(pi)
	}
}

// assignedPodAdded retries the pods that a pod placed somewhere can help:
// those a spread constraint or a required pod affinity term rejected.
func (s *Scheduler) assignedPodAdded() {
	s.queue.MoveRejectedBy(config.PodTopologySpread, "AssignedPodAdd")
	s.queue.MoveRejectedBy(config.InterPodAffinity, "AssignedPodAdd")
}

func (s *Scheduler) onPodUpdate(old, cur *corev1.Pod) {
	uid := cur.GetMetadata().GetUid()
	switch {
	case assigned(cur):
		if !assigned(old) {
			// Bound (by us or another scheduler): confirm the assumption.
			s.queue.Delete(uid)
			s.nominator.forget(uid)
			if !finished(cur) {
				s.cache.AddPod(framework.NewPodInfo(cur))
				s.assignedPodAdded()
			}
			return
		}
		if finished(cur) {
			if s.cache.Has(uid) {
				s.cache.RemovePod(cur)
				s.queue.MoveAllToActiveOrBackoff("AssignedPodFinished")
			}
			return
		}
		// Status updates of running pods are most updates: only what the
		// plugins read (labels, requests, deletion) is worth a recount.
		if countsChanged(old, cur) {
			s.cache.UpdatePod(framework.NewPodInfo(cur))
			s.queue.MoveAllToActiveOrBackoff("AssignedPodUpdate")
		}
	case s.ours(cur):
		pi := framework.NewPodInfo(cur)
		if !s.preEnqueue(pi) {
			s.queue.Delete(uid)
			return
		}
		s.nominator.set(pi, cur.GetStatus().GetNominatedNodeName())
		s.queue.Update(pi)
	default:
		s.queue.Delete(uid)
		s.nominator.forget(uid)
	}
}

// countsChanged reports whether an update of a bound pod changes what the
// cache counts: its labels (spread), deletion, or containers' requests.
func countsChanged(old, cur *corev1.Pod) bool {
	om, cm := old.GetMetadata(), cur.GetMetadata()
	if (om.GetDeletionTimestamp() == nil) != (cm.GetDeletionTimestamp() == nil) || !maps.Equal(om.GetLabels(), cm.GetLabels()) {
		return true
	}
	oc, cc := old.GetSpec().GetContainers(), cur.GetSpec().GetContainers()
	if len(oc) != len(cc) {
		return true
	}
	for i := range oc {
		if !proto.Equal(oc[i].GetResources(), cc[i].GetResources()) {
			return true
		}
	}
	return false
}

func (s *Scheduler) onPodDelete(p *corev1.Pod) {
	uid := p.GetMetadata().GetUid()
	if assigned(p) {
		if s.cache.Has(uid) {
			s.cache.RemovePod(p)
			s.queue.MoveAllToActiveOrBackoff("AssignedPodDelete")
		}
		return
	}
	s.queue.Delete(uid)
	s.nominator.forget(uid)
}

func (s *Scheduler) onNodeAdd(n *corev1.Node) {
	s.cache.AddNode(n)
	s.queue.MoveAllToActiveOrBackoff("NodeAdd")
}

func (s *Scheduler) onNodeUpdate(old, cur *corev1.Node) {
	// Heartbeats (conditions) are most node updates; the plugins read
	// only allocatable, labels, taints and unschedulable.
	if !schedulingPropertiesChanged(old, cur) {
		return
	}
	s.cache.UpdateNode(cur)
	s.queue.MoveAllToActiveOrBackoff("NodeUpdate")
}

func schedulingPropertiesChanged(old, cur *corev1.Node) bool {
	return !maps.Equal(old.GetStatus().GetAllocatable(), cur.GetStatus().GetAllocatable()) ||
		!maps.Equal(old.GetMetadata().GetLabels(), cur.GetMetadata().GetLabels()) ||
		old.GetSpec().GetUnschedulable() != cur.GetSpec().GetUnschedulable() ||
		!slices.EqualFunc(old.GetSpec().GetTaints(), cur.GetSpec().GetTaints(), func(a, b *corev1.Taint) bool {
			return a.GetKey() == b.GetKey() && a.GetValue() == b.GetValue() && a.GetEffect() == b.GetEffect()
		})
}

func (s *Scheduler) onNodeDelete(n *corev1.Node) {
	s.cache.RemoveNode(n)
}
