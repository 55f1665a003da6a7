package statefulset

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// actionKind is what one step of a sync does.
type actionKind int

const (
	// createPod creates the pod's missing claims, then the pod, then sets
	// the claims' owners as the retention policy wants.
	createPod actionKind = iota
	// deletePod deletes the pod (uid precondition).
	deletePod
	// fixIdentity updates the pod's identity labels.
	fixIdentity
	// fixClaims updates the owner references of the pod's claims.
	fixClaims
)

func (k actionKind) String() string {
	return [...]string{"create", "delete", "fix identity of", "fix claims of"}[k]
}

// action is one step: what, on which pod, and why (for a deletion: failed,
// scale down, update).
type action struct {
	kind   actionKind
	pod    *corev1.Pod
	reason string
}

func (a action) String() string {
	s := a.kind.String() + " " + a.pod.GetMetadata().GetName()
	if a.reason != "" {
		s += " (" + a.reason + ")"
	}
	return s
}

// Reasons of deletions.
const (
	reasonFailed    = "failed"
	reasonScaleDown = "scale down"
	reasonUpdate    = "update"
)

// input is what one sync decides from: the set, its current and update
// revisions (the set with each revision's template applied, and their
// names), its pods (members it controls, any phase), its claims by name
// (from the cache), and the time.
type input struct {
	set                   *appsv1.StatefulSet
	currentSet, updateSet *appsv1.StatefulSet
	currentRevision       string
	updateRevision        string
	pods                  []*corev1.Pod
	claims                func(name string) *corev1.PersistentVolumeClaim
	now                   time.Time
}

// plan is a sync's decision: the steps in order (the sync stops at the
// first that fails) and, when it stopped early, what it waits for.
type plan struct {
	actions []action
	waiting string
}

// decide is Kubernetes' updateStatefulSet as a pure function. Pods are
// split into replicas (ordinals in [start, start+replicas)) and condemned
// (other ordinals); then:
//
//  1. each replica in ordinal order: a failed (or succeeded) pod is
//     deleted and made again; a missing one is created (unless a claim of
//     its ordinal still belongs to an earlier pod: wait); under
//     OrderedReady the sync stops after a creation and at a pod that is
//     terminating, not Running and Ready, or not available for
//     minReadySeconds; identity labels and claim owners are fixed;
//  2. the condemned pods' claims get their owners (whenScaled);
//  3. condemned pods are deleted from the highest ordinal down; under
//     OrderedReady one at a time, waiting for terminations and for every
//     pod to be healthy (the first unhealthy pod may go);
//  4. RollingUpdate (not OnDelete): pods whose revision is not the update
//     revision are deleted from the highest ordinal down to the partition,
//     as many as maxUnavailable allows counting the replicas already
//     unavailable. They come back at the update revision in step 1.
//
// A set being deleted gets no steps.
func decide(in input) plan {
	set := in.set
	start, n := startOrdinal(set), replicasOf(set)
	minReady := set.GetSpec().GetMinReadySeconds()
	replicas := make([]*corev1.Pod, n)
	created := make([]bool, n) // whether replicas[i] exists in the API
	var condemned []*corev1.Pod
	for _, p := range in.pods {
		ord := ordinalOf(p)
		switch {
		case ord < 0:
		case inRange(set, ord):
			replicas[ord-start], created[ord-start] = p, true
		default:
			condemned = append(condemned, p)
		}
	}
	for i := range replicas {
		if replicas[i] == nil {
			replicas[i] = in.versionedPod(start + i)
		}
	}
	slices.SortFunc(condemned, func(a, b *corev1.Pod) int { return ordinalOf(b) - ordinalOf(a) })

	// The first unhealthy pod, replicas first in ordinal order, then the
	// condemned from the lowest ordinal.
	var firstUnhealthy *corev1.Pod
	for i, p := range replicas {
		if !created[i] || !isHealthy(p) {
			firstUnhealthy = p
			break
		}
	}
	if firstUnhealthy == nil {
		for i := len(condemned) - 1; i >= 0; i-- {
			if !isHealthy(condemned[i]) {
				firstUnhealthy = condemned[i]
				break
			}
		}
	}

	var pl plan
	if set.GetMetadata().GetDeletionTimestamp() != nil {
		return pl
	}
	monotonic := set.GetSpec().GetPodManagementPolicy() != "Parallel"
	wait := func(format string, args ...any) plan {
		pl.waiting = fmt.Sprintf(format, args...)
		return pl
	}

	for i, p := range replicas {
		if created[i] && isFinished(p) {
			pl.actions = append(pl.actions, action{kind: deletePod, pod: p, reason: reasonFailed})
			p, created[i] = in.versionedPod(start+i), false
			replicas[i] = p
		}
		if !created[i] {
			if in.staleClaim(p) {
				return wait("a claim of %s still belongs to an earlier pod", p.GetMetadata().GetName())
			}
			pl.actions = append(pl.actions, action{kind: createPod, pod: p})
			if monotonic {
				return pl
			}
			continue
		}
		if monotonic {
			switch {
			case isTerminating(p):
				return wait("%s to terminate", p.GetMetadata().GetName())
			case !isRunningAndReady(p):
				return wait("%s to be Running and Ready", p.GetMetadata().GetName())
			case !controllerutil.IsPodAvailable(p, minReady, in.now):
				return wait("%s to be available", p.GetMetadata().GetName())
			}
		}
		if isTerminating(p) {
			continue
		}
		if !identityMatches(set, p) {
			pl.actions = append(pl.actions, action{kind: fixIdentity, pod: p})
		}
		if !in.claimsUpToDate(p) {
			pl.actions = append(pl.actions, action{kind: fixClaims, pod: p})
		}
	}

	for _, p := range condemned {
		if !isTerminating(p) && !in.claimsUpToDate(p) {
			pl.actions = append(pl.actions, action{kind: fixClaims, pod: p})
		}
	}

	for _, p := range condemned {
		name := p.GetMetadata().GetName()
		if isTerminating(p) {
			if monotonic {
				return wait("%s to terminate before scaling down", name)
			}
			continue
		}
		if monotonic && p != firstUnhealthy {
			if !isRunningAndReady(p) {
				return wait("%s to be Running and Ready before scaling down", firstUnhealthy.GetMetadata().GetName())
			}
			if !controllerutil.IsPodAvailable(p, minReady, in.now) {
				return wait("%s to be available before scaling down", firstUnhealthy.GetMetadata().GetName())
			}
		}
		pl.actions = append(pl.actions, action{kind: deletePod, pod: p, reason: reasonScaleDown})
		if monotonic {
			return pl
		}
	}

	us := set.GetSpec().GetUpdateStrategy()
	if us.GetType() == "OnDelete" {
		return pl
	}
	partition := int(us.GetRollingUpdate().GetPartition())
	maxUnavailable := maxUnavailableOf(us.GetRollingUpdate().GetMaxUnavailable(), n)
	unavailable := 0
	for i, p := range replicas {
		if !created[i] || isTerminating(p) || !controllerutil.IsPodAvailable(p, minReady, in.now) {
			unavailable++
		}
	}
	if unavailable >= maxUnavailable {
		if pending := slices.ContainsFunc(replicas[min(partition, n):], func(p *corev1.Pod) bool { return podRevision(p) != in.updateRevision }); pending {
			return wait("%d unavailable pods (maxUnavailable %d) before updating more", unavailable, maxUnavailable)
		}
		return pl
	}
	for i := n - 1; i >= partition && unavailable < maxUnavailable; i-- {
		p := replicas[i]
		if created[i] && podRevision(p) != in.updateRevision && !isTerminating(p) {
			pl.actions = append(pl.actions, action{kind: deletePod, pod: p, reason: reasonUpdate})
			unavailable++
		}
	}
	return pl
}

// versionedPod is Kubernetes' newVersionedStatefulSetPod: the pod of ord at
// the current revision when a rolling update keeps it there (below the
// partition, or, without rollingUpdate parameters, among the current
// replicas), else at the update revision.
func (in input) versionedPod(ord int) *corev1.Pod {
	cs := in.currentSet
	us := cs.GetSpec().GetUpdateStrategy()
	start := startOrdinal(cs)
	if (us.GetType() == "RollingUpdate" && us.GetRollingUpdate() == nil && ord < start+int(cs.GetStatus().GetCurrentReplicas())) ||
		(us.GetRollingUpdate() != nil && ord < start+int(us.GetRollingUpdate().GetPartition())) {
		return newPod(cs, ord, in.currentRevision)
	}
	return newPod(in.updateSet, ord, in.updateRevision)
}

func (in input) staleClaim(p *corev1.Pod) bool {
	for _, c := range newClaims(in.updateSet, ordinalOf(p)) {
		if got := in.claims(c.GetMetadata().GetName()); got != nil && claimIsStale(got, in.updateSet, p) {
			return true
		}
	}
	return false
}

// claimsUpToDate says whether the existing claims of p have the owners the
// retention policy wants (missing claims are created with the pod).
func (in input) claimsUpToDate(p *corev1.Pod) bool {
	for _, c := range newClaims(in.updateSet, ordinalOf(p)) {
		if got := in.claims(c.GetMetadata().GetName()); got != nil && !claimOwnersUpToDate(got, in.updateSet, p) {
			return false
		}
	}
	return true
}

// maxUnavailableOf is Kubernetes' getStatefulSetMaxUnavailable: the
// number or the percentage of replicas (rounded down), at least 1; unset
// is 1.
func maxUnavailableOf(v *metav1.IntOrString, replicas int) int {
	n := 1
	switch x := v.GetValue().(type) {
	case *metav1.IntOrString_IntVal:
		n = int(x.IntVal)
	case *metav1.IntOrString_StrVal:
		if pct, err := strconv.Atoi(strings.TrimSuffix(x.StrVal, "%")); err == nil {
			n = int(math.Floor(float64(pct) * float64(replicas) / 100))
		}
	}
	return max(n, 1)
}

// computeStatus counts the pods as Kubernetes' StatefulSet status does:
// replicas (created), ready (Running and Ready), available (ready for
// minReadySeconds), current and updated (by revision label, not
// terminating); and returns when the next ready pod becomes available (0:
// none waits). Conditions are kept.
func computeStatus(set *appsv1.StatefulSet, pods []*corev1.Pod, currentRevision, updateRevision string, collisionCount int32, now time.Time) (*appsv1.StatefulSetStatus, time.Duration) {
	minReady := set.GetSpec().GetMinReadySeconds()
	st := &appsv1.StatefulSetStatus{
		ObservedGeneration: set.GetMetadata().GetGeneration(),
		CurrentRevision:    currentRevision,
		UpdateRevision:     updateRevision,
		CollisionCount:     &collisionCount,
		Conditions:         set.GetStatus().GetConditions(),
	}
	var next time.Duration
	for _, p := range pods {
		if isCreated(p) {
			st.Replicas++
		}
		if isRunningAndReady(p) {
			st.ReadyReplicas++
			if controllerutil.IsPodAvailable(p, minReady, now) {
				st.AvailableReplicas++
			} else if d := controllerutil.AvailableIn(p, minReady, now); d > 0 && (next == 0 || d < next) {
				next = d
			}
		}
		if isCreated(p) && !isTerminating(p) {
			switch podRevision(p) {
			case currentRevision:
				st.CurrentReplicas++
				if currentRevision == updateRevision {
					st.UpdatedReplicas++
				}
			case updateRevision:
				st.UpdatedReplicas++
			}
		}
	}
	completeRollingUpdate(set, st)
	return st, next
}

// completeRollingUpdate ends a rolling update once every replica is
// updated and ready: the update revision becomes the current one.
func completeRollingUpdate(set *appsv1.StatefulSet, st *appsv1.StatefulSetStatus) {
	r := set.GetSpec().GetReplicas()
	if set.GetSpec().GetUpdateStrategy().GetType() == "RollingUpdate" &&
		st.UpdatedReplicas == r && st.ReadyReplicas == r && st.Replicas == r {
		st.CurrentReplicas = st.UpdatedReplicas
		st.CurrentRevision = st.UpdateRevision
	}
}
