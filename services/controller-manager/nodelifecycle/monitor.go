package nodelifecycle

import (
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "skiff.dev/proto/core/v1"
)

// NodeLeaseNamespace holds the Leases node agents renew, one per node,
// named after it.
const NodeLeaseNamespace = "kube-node-lease"

// Taint keys and effects the controller writes and acts on (Kubernetes'
// well-known taints).
const (
	// TaintNodeUnreachable marks a node whose heartbeat stopped.
	TaintNodeUnreachable = "node.kubernetes.io/unreachable"
	// TaintNodeNotReady marks a node whose agent posts Ready=False.
	TaintNodeNotReady = "node.kubernetes.io/not-ready"
	// TaintNodeOutOfService is put by an administrator on a node known to
	// be down; pods terminating on it are force-deleted even while its
	// agent might still answer.
	TaintNodeOutOfService = "node.kubernetes.io/out-of-service"

	EffectNoSchedule = "NoSchedule"
	EffectNoExecute  = "NoExecute"
)

// Node condition reasons and messages written for a silent node, as
// Kubernetes writes them.
const (
	ReasonNodeStatusUnknown      = "NodeStatusUnknown"
	MessageNodeStatusUnknown     = "Kubelet stopped posting node status."
	ReasonNodeStatusNeverUpdated = "NodeStatusNeverUpdated"
	MessageNodeStatusNeverUpdate = "Kubelet never posted node status."
)

// conditionsMadeUnknown are the condition types, besides Ready, that become
// Unknown when the agent goes silent (when the node has them).
var conditionsMadeUnknown = []string{"MemoryPressure", "DiskPressure", "PIDPressure"}

// State is what the controller makes of a node.
type State int

const (
	// StateReady: the heartbeat is fresh and the agent does not say
	// Ready=False (it may say True, or nothing yet, or the Unknown the
	// controller wrote before the heartbeat came back).
	StateReady State = iota
	// StateNotReady: the heartbeat is fresh but the agent posts Ready=False.
	StateNotReady
	// StateUnreachable: no heartbeat for the grace period.
	StateUnreachable
)

func (s State) String() string {
	switch s {
	case StateReady:
		return "Ready"
	case StateNotReady:
		return "NotReady"
	case StateUnreachable:
		return "Unreachable"
	}
	return "State(?)"
}

// taintKey is the NoExecute/NoSchedule taint key of a state ("" for Ready).
func (s State) taintKey() string {
	switch s {
	case StateNotReady:
		return TaintNodeNotReady
	case StateUnreachable:
		return TaintNodeUnreachable
	}
	return ""
}

// Assessment is what Assess decides for one node.
type Assessment struct {
	State State
	// Conditions, when not nil, are the node's new status.conditions (Ready
	// and the pressure conditions made Unknown); nil: leave the status as is.
	Conditions []*corev1.NodeCondition
	// Taints are the node's spec.taints as they should be, and
	// TaintsChanged says whether they differ from the node's.
	Taints        []*corev1.Taint
	TaintsChanged bool
	// StaleIn, while the heartbeat is fresh, is how long until it goes
	// stale: the time to look again. Zero once stale.
	StaleIn time.Duration
}

// Assess decides a node's state from its last heartbeat (when the
// controller last saw its Lease renewed, or its creation) and the grace
// period, and what its status conditions and taints must be:
//
//   - heartbeat older than grace: Unreachable. Ready (added if missing) and
//     the pressure conditions become Unknown; taints unreachable:NoSchedule
//     and unreachable:NoExecute.
//   - fresh, agent's Ready=False: NotReady; taints not-ready:NoSchedule and
//     not-ready:NoExecute. The conditions are the agent's.
//   - otherwise Ready: neither taint. A Ready=Unknown left from an outage
//     stays for the agent to replace.
//
// In every state, a pressure condition True (MemoryPressure...) brings its
// NoSchedule taint, and its taint goes once it is not (conditiontaints.go).
//
// A NoExecute taint the node already carries keeps its timeAdded (so that
// tolerations count from when it was first added); one added now, or found
// without timeAdded, gets now. Other taints are left alone.
func Assess(node *corev1.Node, heartbeat, now time.Time, grace time.Duration) Assessment {
	var a Assessment
	staleAt := heartbeat.Add(grace)
	switch {
	case !now.Before(staleAt):
		a.State = StateUnreachable
		a.Conditions = unknownConditions(node, now)
	default:
		a.StaleIn = staleAt.Sub(now)
		if readyCondition(node.GetStatus().GetConditions()).GetStatus() == "False" {
			a.State = StateNotReady
		}
	}
	a.Taints, a.TaintsChanged = taintsFor(node.GetSpec().GetTaints(), a.State.taintKey(), now)
	conds := node.GetStatus().GetConditions()
	if a.Conditions != nil {
		conds = a.Conditions
	}
	var pressure bool
	a.Taints, pressure = conditionTaints(a.Taints, conds) // conditiontaints.go
	a.TaintsChanged = a.TaintsChanged || pressure
	return a
}

// readyCondition returns the Ready condition of conds, or nil.
func readyCondition(conds []*corev1.NodeCondition) *corev1.NodeCondition {
	for _, c := range conds {
		if c.GetType() == "Ready" {
			return c
		}
	}
	return nil
}

// unknownConditions returns the node's conditions with Ready and the
// pressure conditions Unknown, or nil when they already are.
func unknownConditions(node *corev1.Node, now time.Time) []*corev1.NodeCondition {
	conds := node.GetStatus().GetConditions()
	out := make([]*corev1.NodeCondition, 0, len(conds)+1)
	changed := false
	ts := timestamppb.New(now)
	for _, c := range conds {
		c = proto.Clone(c).(*corev1.NodeCondition)
		if (c.GetType() == "Ready" || slices.Contains(conditionsMadeUnknown, c.GetType())) && c.GetStatus() != "Unknown" {
			c.Status = "Unknown"
			c.Reason = ReasonNodeStatusUnknown
			c.Message = MessageNodeStatusUnknown
			c.LastTransitionTime = ts
			changed = true
		}
		out = append(out, c)
	}
	if readyCondition(conds) == nil {
		out = append(out, &corev1.NodeCondition{
			Type:               "Ready",
			Status:             "Unknown",
			Reason:             ReasonNodeStatusNeverUpdated,
			Message:            MessageNodeStatusNeverUpdate,
			LastHeartbeatTime:  node.GetMetadata().GetCreationTimestamp(),
			LastTransitionTime: ts,
		})
		changed = true
	}
	if !changed {
		return nil
	}
	return out
}

// taintsFor returns cur with the controller's taints for key (unreachable
// or not-ready, "" for none) in place of whatever of them cur has, and
// whether that differs from cur.
func taintsFor(cur []*corev1.Taint, key string, now time.Time) ([]*corev1.Taint, bool) {
	out := make([]*corev1.Taint, 0, len(cur)+2)
	changed := false
	have := map[string]bool{} // effect -> already kept
	for _, t := range cur {
		if !isControllerTaint(t) {
			out = append(out, t)
			continue
		}
		if t.GetKey() != key || have[t.GetEffect()] {
			changed = true // the other state's taint, or a duplicate
			continue
		}
		have[t.GetEffect()] = true
		if t.GetEffect() == EffectNoExecute && t.GetTimeAdded() == nil {
			t = proto.Clone(t).(*corev1.Taint)
			t.TimeAdded = timestamppb.New(now)
			changed = true
		}
		out = append(out, t)
	}
	if key != "" {
		if !have[EffectNoSchedule] {
			out = append(out, &corev1.Taint{Key: key, Effect: EffectNoSchedule})
			changed = true
		}
		if !have[EffectNoExecute] {
			out = append(out, &corev1.Taint{Key: key, Effect: EffectNoExecute, TimeAdded: timestamppb.New(now)})
			changed = true
		}
	}
	return out, changed
}

// isControllerTaint reports whether t is one of the four taints this
// controller owns.
func isControllerTaint(t *corev1.Taint) bool {
	switch t.GetKey() {
	case TaintNodeUnreachable, TaintNodeNotReady:
	default:
		return false
	}
	switch t.GetEffect() {
	case EffectNoSchedule, EffectNoExecute:
		return true
	}
	return false
}

// controllerTaintKey returns the key of the controller's NoExecute taint
// among taints (unreachable or not-ready), or "".
func controllerTaintKey(taints []*corev1.Taint) string {
	for _, t := range taints {
		if isControllerTaint(t) && t.GetEffect() == EffectNoExecute {
			return t.GetKey()
		}
	}
	return ""
}
