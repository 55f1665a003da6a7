package garbagecollector

import (
	"slices"

	metav1 "skiff.dev/proto/meta/v1"
)

// Propagation policies of the Deletes the collector makes.
const (
	propagationBackground = "Background"
	propagationForeground = "Foreground"
	propagationOrphan     = "Orphan"
)

// ownerStatus is what one ownerReference of a dependent resolves to.
type ownerStatus int

const (
	// ownerSolid: the owner exists and is not deleting its dependents.
	ownerSolid ownerStatus = iota
	// ownerDangling: the owner is gone, never existed, or its name now
	// holds an object with another uid.
	ownerDangling
	// ownerWaiting: the owner is being deleted in the foreground, waiting
	// for its dependents to go.
	ownerWaiting
)

func (s ownerStatus) String() string {
	return [...]string{"solid", "dangling", "waiting"}[s]
}

// statusOfPresent is the status of an owner that exists.
func statusOfPresent(owner *Node) ownerStatus {
	if owner.DeletingDependents() {
		return ownerWaiting
	}
	return ownerSolid
}

// scope is what the collector knows of an owner's kind.
type scope int

const (
	scopeUnknown    scope = iota // a kind the collector does not watch
	scopeNamespaced              // namespaced: the owner is in the dependent's namespace
	scopeCluster                 // cluster-scoped
)

// resolution is what the graph alone says of one ownerReference.
type resolution struct {
	status ownerStatus
	// lookup: the graph cannot tell; a live GET of the owner by name must.
	lookup bool
	// invalid is the reason of a Warning event when the reference can never
	// be valid (and status says how it counts).
	invalid string
}

// resolveOwner resolves the ownerReference r of dep from the graph: the
// owner's kind scope, its state in the graph and, when present, its node.
// Kubernetes' rules for references that cannot be valid apply: a
// cluster-scoped object referring to a namespaced kind can never be
// resolved and keeps the object (nothing is collected on a guess); a
// namespaced owner in another namespace than its dependent counts as
// absent. A kind the collector does not watch is left alone too.
func resolveOwner(dep *Node, r OwnerRef, sc scope, state OwnerState, owner *Node) resolution {
	if sc == scopeNamespaced && dep.Namespace == "" {
		return resolution{status: ownerSolid, invalid: reasonOwnerRefInvalidNamespace}
	}
	switch state {
	case OwnerPresent:
		if owner.Namespace != "" && owner.Namespace != dep.Namespace {
			return resolution{status: ownerDangling, invalid: reasonOwnerRefInvalidNamespace}
		}
		return resolution{status: statusOfPresent(owner)}
	case OwnerAbsent:
		return resolution{status: ownerDangling}
	}
	if sc == scopeUnknown {
		return resolution{status: ownerSolid, invalid: reasonOwnerRefInvalidKind}
	}
	return resolution{lookup: true}
}

// verdict is what attemptToDelete does with a dependent.
type verdict int

const (
	keep       verdict = iota // nothing: an owner is alive, or none is set
	removeRefs                // drop the references to dangling and waiting owners
	deleteIt                  // delete the dependent with a propagation policy
)

func (v verdict) String() string { return [...]string{"keep", "removeRefs", "delete"}[v] }

// decision is attemptToDelete's verdict on one dependent.
type decision struct {
	verdict verdict
	remove  []string // removeRefs: the owner uids whose references go
	policy  string   // deleteIt: the propagation policy
}

// decideDependent decides the fate of n, which is not being deleted, from
// the status of each of its owners (by uid), as Kubernetes'
// attemptToDeleteItem does:
//
//   - no owner: keep;
//   - at least one solid owner: keep, but drop the references to dangling
//     and waiting owners (a waiting owner must not wait for a dependent that
//     stays);
//   - no solid owner, some waiting and n has dependents of its own: delete
//     in the foreground, so that the owner's wait covers the whole subtree;
//   - otherwise delete, honouring a policy finalizer n already carries
//     (orphan, foregroundDeletion), else in the background.
func decideDependent(n *Node, owners map[string]ownerStatus, hasDependents bool) decision {
	if len(n.Owners) == 0 {
		return decision{verdict: keep}
	}
	var solid, waiting int
	var drop []string
	for _, r := range n.Owners {
		switch owners[r.UID] {
		case ownerSolid:
			solid++
		case ownerWaiting:
			waiting++
			drop = append(drop, r.UID)
		case ownerDangling:
			drop = append(drop, r.UID)
		}
	}
	switch {
	case solid > 0 && len(drop) == 0:
		return decision{verdict: keep}
	case solid > 0:
		return decision{verdict: removeRefs, remove: drop}
	case waiting > 0 && hasDependents:
		return decision{verdict: deleteIt, policy: propagationForeground}
	case n.HasFinalizer(FinalizerOrphan):
		return decision{verdict: deleteIt, policy: propagationOrphan}
	case n.HasFinalizer(FinalizerDeleteDependents):
		return decision{verdict: deleteIt, policy: propagationForeground}
	default:
		return decision{verdict: deleteIt, policy: propagationBackground}
	}
}

// blockingDependents returns the dependents of owner whose reference to it
// has blockOwnerDeletion: a foreground deletion of owner waits for them.
func blockingDependents(owner string, deps []*Node) []*Node {
	var out []*Node
	for _, d := range deps {
		if r, ok := d.ownerRef(owner); ok && r.BlockOwnerDeletion {
			out = append(out, d)
		}
	}
	return out
}

// foregroundPlan is what attemptToDelete does for an owner in foreground
// deletion.
type foregroundPlan struct {
	// done: no blocking dependent is left; the foregroundDeletion
	// finalizer goes, and the apiserver deletes the owner.
	done bool
	// nudge: blocking dependents not yet being deleted, to look at again.
	nudge []string
}

// planForeground decides for owner, deleting its dependents deps.
func planForeground(owner *Node, deps []*Node) foregroundPlan {
	blocking := blockingDependents(owner.UID, deps)
	if len(blocking) == 0 {
		return foregroundPlan{done: true}
	}
	var p foregroundPlan
	for _, d := range blocking {
		if !d.Deleting || d.DeletingDependents() {
			p.nudge = append(p.nudge, d.UID)
		}
	}
	return p
}

// dropOwnerRefs removes from m the ownerReferences to the uids and reports
// whether m changed.
func dropOwnerRefs(m *metav1.ObjectMeta, uids []string) bool {
	n := len(m.OwnerReferences)
	m.OwnerReferences = slices.DeleteFunc(m.OwnerReferences, func(r *metav1.OwnerReference) bool {
		return slices.Contains(uids, r.GetUid())
	})
	if len(m.OwnerReferences) == 0 {
		m.OwnerReferences = nil
	}
	return len(m.OwnerReferences) != n
}

// dropFinalizer removes finalizer f from m and reports whether m changed.
func dropFinalizer(m *metav1.ObjectMeta, f string) bool {
	n := len(m.Finalizers)
	m.Finalizers = slices.DeleteFunc(m.Finalizers, func(x string) bool { return x == f })
	if len(m.Finalizers) == 0 {
		m.Finalizers = nil
	}
	return len(m.Finalizers) != n
}
