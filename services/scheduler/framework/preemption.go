package framework

import (
	"context"

	policyv1 "skiff.dev/proto/policy/v1"
)

// What preemption (a PostFilter plugin such as DefaultPreemption) needs
// from the scheduler besides the snapshot: the PodDisruptionBudgets, the
// pods nominated to nodes by earlier preemptions, and someone to carry
// out its decision. The plugin decides; the Preempter writes.

// PDBLister lists the cluster's PodDisruptionBudgets (from an informer:
// the slice and the objects are shared and must not be changed).
type PDBLister interface {
	ListPDBs() []*policyv1.PodDisruptionBudget
}

// Nominator knows the pods waiting for room a preemption made on a node
// (their status.nominatedNodeName).
type Nominator interface {
	// NominatedPods returns, per node, the pods nominated there (a copy
	// the caller may keep for its cycle).
	NominatedPods() map[string][]*PodInfo
}

// Preempter carries out a preemption: it nominates pod to node (status.
// nominatedNodeName, so that lower or equal priority pods leave it the
// room) and evicts the victims (a DisruptionTarget condition with reason
// PreemptionByScheduler, a graceful delete, a Preempted event).
type Preempter interface {
	Preempt(ctx context.Context, pod *PodInfo, node string, victims []*PodInfo) error
}

// nominatedFor returns the pods nominated to node that pod must leave room
// for: those of priority at least its own, other than itself.
func nominatedFor(nominated map[string][]*PodInfo, pod *PodInfo, node string) []*PodInfo {
	list := nominated[node]
	if len(list) == 0 {
		return nil
	}
	var out []*PodInfo
	for _, p := range list {
		if p.UID() != pod.UID() && p.Priority() >= pod.Priority() {
			out = append(out, p)
		}
	}
	return out
}

// PDBs implements Handle.
func (f *Framework) PDBs() []*policyv1.PodDisruptionBudget {
	if f.pdbs == nil {
		return nil
	}
	return f.pdbs.ListPDBs()
}

// Preempter implements Handle.
func (f *Framework) Preempter() Preempter { return f.preempter }

// NominatedPodsForCycle reads the nominations once for a cycle (nil when
// there are none); FindFeasible and RunFilterWithNominatedPods use them.
func (f *Framework) NominatedPodsForCycle(state *CycleState) {
	state.nominated = nil
	if f.nominator != nil {
		if m := f.nominator.NominatedPods(); len(m) > 0 {
			state.nominated = m
		}
	}
}

// RunFilterWithNominatedPods runs the Filter plugins on node as Kubernetes
// does with nominated pods: when pods of priority at least pod's are
// nominated there, pod must fit with them added (to a copy of the node,
// and through the PreFilter extensions to a clone of state, so that pod
// affinity and topology spread count them as well as resources do), and
// also without them (a filter such as pod affinity may pass only with
// them). Neither node nor state is changed.
func (f *Framework) RunFilterWithNominatedPods(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo) *Status {
	return f.runFilterWithNominated(ctx, state, pod, node, false)
}

func (f *Framework) runFilterWithNominated(ctx context.Context, state *CycleState, pod *PodInfo, node *NodeInfo, timed bool) *Status {
	if state.nominated != nil {
		if extra := nominatedFor(state.nominated, pod, node.Name()); len(extra) > 0 {
			with, withState := node.Clone(), state.Clone()
			for _, p := range extra {
				with.AddPod(p)
				if s := f.RunPreFilterExtensionAddPod(ctx, withState, pod, p, with); !s.IsSuccess() {
					return s
				}
			}
			if s := f.runFilter(ctx, withState, pod, with, timed); !s.IsSuccess() {
				return s
			}
		}
	}
	return f.runFilter(ctx, state, pod, node, timed)
}
