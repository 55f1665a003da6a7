package nodelifecycle

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "skiff.dev/proto/core/v1"
)

// DefaultTolerationSeconds is how long a pod without a toleration for the
// unreachable or not-ready taint stays on a tainted node (Kubernetes'
// DefaultTolerationSeconds admission plugin gives every pod these
// tolerations with 300 seconds).
const DefaultTolerationSeconds int64 = 300

// Tolerates reports whether tol tolerates taint, by Kubernetes' rules: the
// effects match (an empty toleration effect matches all), the keys match
// (an empty key with operator Exists matches all), and with operator Equal
// (or empty) the values match.
func Tolerates(tol *corev1.Toleration, taint *corev1.Taint) bool {
	if e := tol.GetEffect(); e != "" && e != taint.GetEffect() {
		return false
	}
	if k := tol.GetKey(); k != taint.GetKey() && !(k == "" && tol.GetOperator() == "Exists") {
		return false
	}
	switch tol.GetOperator() {
	case "Exists":
		return true
	case "", "Equal":
		return tol.GetValue() == taint.GetValue()
	}
	return false
}

// EvictionTime says when a pod with tolerations must leave a node carrying
// taints: evict=false means never; otherwise at (at or before now: at once).
// seen is when the controller first saw the pod on the node while the node
// carried NoExecute taints (not after now).
//
// Only NoExecute taints count. For each, the pod's first toleration that
// tolerates it decides, as in Kubernetes' taint manager: without
// tolerationSeconds the taint is tolerated for ever; with it, the pod may
// stay that many seconds (0 or less: none) counted from seen, or from the
// taint's timeAdded if that is later. Counting from seen, as Kubernetes
// does, gives a pod bound to a node tainted long ago (a replacement pinned
// to it by spec.nodeName) its full toleration instead of none. A taint no
// toleration tolerates evicts at once, except the unreachable and not-ready
// taints, which are tolerated for defaultSeconds (the default toleration
// Kubernetes' admission gives every pod). The pod goes at the earliest of
// its taints' times.
func EvictionTime(tolerations []*corev1.Toleration, taints []*corev1.Taint, seen, now time.Time, defaultSeconds int64) (at time.Time, evict bool) {
	for _, taint := range taints {
		if taint.GetEffect() != EffectNoExecute {
			continue
		}
		since := seen
		if added := taint.GetTimeAdded(); added != nil && added.AsTime().After(since) {
			since = added.AsTime()
		}
		var seconds int64
		if tol := firstToleration(tolerations, taint); tol != nil {
			if tol.TolerationSeconds == nil {
				continue // tolerated for ever
			}
			seconds = tol.GetTolerationSeconds()
		} else if k := taint.GetKey(); k == TaintNodeUnreachable || k == TaintNodeNotReady {
			seconds = defaultSeconds
		} else {
			return now, true // not tolerated at all
		}
		deadline := since.Add(time.Duration(max(seconds, 0)) * time.Second)
		if !evict || deadline.Before(at) {
			at, evict = deadline, true
		}
	}
	return at, evict
}

func firstToleration(tolerations []*corev1.Toleration, taint *corev1.Taint) *corev1.Toleration {
	for _, tol := range tolerations {
		if Tolerates(tol, taint) {
			return tol
		}
	}
	return nil
}

// Action is what the controller does to one pod of a node.
type Action int

const (
	// Keep the pod (maybe looking again at PodDecision.RecheckAt).
	Keep Action = iota
	// Evict deletes the pod (gracefully, with a uid precondition) so that its
	// controller replaces it elsewhere.
	Evict
	// ForceDelete deletes a terminating pod with grace period 0: its node's
	// agent, which would finish the graceful delete, is gone.
	ForceDelete
)

func (a Action) String() string {
	switch a {
	case Keep:
		return "Keep"
	case Evict:
		return "Evict"
	case ForceDelete:
		return "ForceDelete"
	}
	return "Action(?)"
}

// PodDecision is DecidePod's answer.
type PodDecision struct {
	Action Action
	// RecheckAt, when not zero, is when the answer may change (a toleration
	// runs out, a deletion deadline passes).
	RecheckAt time.Time
}

// DecidePod decides about one pod bound to a node carrying taints, first
// seen there by the controller at seen (see EvictionTime). agentGone says the node's agent will not finish graceful deletes (the
// node is unreachable, or out of service): a pod already terminating there
// is force-deleted once its deletionTimestamp (the end of its grace period)
// has passed. Other terminating pods are left to their agent; the others are
// evicted when EvictionTime says so.
func DecidePod(pod *corev1.Pod, seen time.Time, taints []*corev1.Taint, agentGone bool, now time.Time, defaultSeconds int64) PodDecision {
	if dt := pod.GetMetadata().GetDeletionTimestamp(); dt != nil {
		if !agentGone {
			return PodDecision{Action: Keep}
		}
		deadline := dt.AsTime()
		if deadline.After(now) {
			return PodDecision{Action: Keep, RecheckAt: deadline}
		}
		return PodDecision{Action: ForceDelete}
	}
	at, evict := EvictionTime(pod.GetSpec().GetTolerations(), taints, seen, now, defaultSeconds)
	switch {
	case !evict:
		return PodDecision{Action: Keep}
	case at.After(now):
		return PodDecision{Action: Keep, RecheckAt: at}
	}
	return PodDecision{Action: Evict}
}

// Pod condition reason and message written on the pods of a node that is
// not Ready.
const (
	ReasonNodeNotReady  = "NodeNotReady"
	MessageNodeNotReady = "Node is not ready"
)

// PodNotReady returns a copy of pod with its Ready condition False, as
// Kubernetes' MarkPodsNotReady writes it for the pods of a node that is not
// Ready, or nil when nothing is to change: the pod has no Ready condition
// (its agent never posted one) or it is not True.
func PodNotReady(pod *corev1.Pod, now time.Time) *corev1.Pod {
	conds := pod.GetStatus().GetConditions()
	for i, c := range conds {
		if c.GetType() != "Ready" {
			continue
		}
		if c.GetStatus() != "True" {
			return nil
		}
		next := proto.Clone(pod).(*corev1.Pod)
		nc := next.Status.Conditions[i]
		nc.Status = "False"
		nc.LastTransitionTime = timestamppb.New(now)
		nc.Reason = ReasonNodeNotReady
		nc.Message = MessageNodeNotReady
		return next
	}
	return nil
}
