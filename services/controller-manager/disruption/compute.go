package disruption

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	policyv1 "skiff.dev/proto/policy/v1"
)

// DeletionTimeout is how long a pod the eviction subresource put in
// status.disruptedPods counts as disrupted; past it, the pod was not
// deleted after all and counts again (Kubernetes' DeletionTimeout).
const DeletionTimeout = 2 * time.Minute

// ScaleOf finds the scale of a pod's controller: the UID it counts under
// (a Deployment's for the pods of its ReplicaSets) and the replicas; ok
// false when no known controller owns the pod.
type ScaleOf func(pod *corev1.Pod, ref *metav1.OwnerReference) (uid string, replicas int32, ok bool)

// Expected is expectedPods and desiredHealthy of pdb over its pods
// (Kubernetes' getExpectedPodCount): an integer minAvailable counts the
// pods; maxUnavailable or a percentage minAvailable needs the scale of
// the pods' controllers (each counted once), whose percentage rounds up.
// unmanaged names the pods without a controller.
func Expected(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, scale ScaleOf) (expected, desired int32, unmanaged []string, err error) {
	spec := pdb.GetSpec()
	expectedScale := func() (int32, error) {
		seen := map[string]int32{}
		for _, p := range pods {
			ref := controllerOf(p)
			if ref == nil {
				unmanaged = append(unmanaged, p.GetMetadata().GetName())
				continue
			}
			if _, ok := seen[ref.GetUid()]; ok {
				continue
			}
			uid, n, ok := scale(p, ref)
			if !ok {
				return 0, fmt.Errorf("found no controllers for pod %q", p.GetMetadata().GetName())
			}
			seen[uid] = n
		}
		var sum int32
		for _, n := range seen {
			sum += n
		}
		return sum, nil
	}
	switch {
	case spec.GetMaxUnavailable() != nil:
		if expected, err = expectedScale(); err != nil {
			return 0, 0, unmanaged, err
		}
		maxUnavailable, err := scaled(spec.GetMaxUnavailable(), expected)
		if err != nil {
			return 0, 0, unmanaged, err
		}
		desired = max(expected-maxUnavailable, 0)
	case spec.GetMinAvailable() != nil:
		if v, ok := spec.GetMinAvailable().GetValue().(*metav1.IntOrString_IntVal); ok {
			return int32(len(pods)), v.IntVal, nil, nil
		}
		if expected, err = expectedScale(); err != nil {
			return 0, 0, unmanaged, err
		}
		if desired, err = scaled(spec.GetMinAvailable(), expected); err != nil {
			return 0, 0, unmanaged, err
		}
	}
	return expected, desired, unmanaged, nil
}

// scaled is an IntOrString's value over total, a percentage rounded up.
func scaled(v *metav1.IntOrString, total int32) (int32, error) {
	switch x := v.GetValue().(type) {
	case *metav1.IntOrString_IntVal:
		return x.IntVal, nil
	case *metav1.IntOrString_StrVal:
		s, ok := strings.CutSuffix(x.StrVal, "%")
		n, err := strconv.Atoi(s)
		if !ok || err != nil {
			return 0, fmt.Errorf("invalid value for IntOrString: invalid value %q: must be an integer or a percentage", x.StrVal)
		}
		return int32((int64(n)*int64(total) + 99) / 100), nil
	}
	return 0, nil
}

// DisruptedPods keeps the entries of status.disruptedPods whose pod still
// exists, is not being deleted and was disrupted less than
// DeletionTimeout ago (Kubernetes' buildDisruptedPodMap); expired names
// the pods that outlived it; recheck is when the next entry expires
// (zero: none).
func DisruptedPods(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) (kept map[string]*timestamppb.Timestamp, expired []string, recheck time.Time) {
	kept = map[string]*timestamppb.Timestamp{}
	disrupted := pdb.GetStatus().GetDisruptedPods()
	for _, p := range pods {
		name := p.GetMetadata().GetName()
		at, ok := disrupted[name]
		if !ok || p.GetMetadata().GetDeletionTimestamp() != nil {
			continue
		}
		deadline := at.AsTime().Add(DeletionTimeout)
		if deadline.Before(now) {
			expired = append(expired, name)
			continue
		}
		kept[name] = at
		if recheck.IsZero() || deadline.Before(recheck) {
			recheck = deadline
		}
	}
	return kept, expired, recheck
}

// CurrentHealthy counts the Ready pods that are neither being deleted nor
// disrupted (Kubernetes' countHealthyPods).
func CurrentHealthy(pods []*corev1.Pod, disrupted map[string]*timestamppb.Timestamp, now time.Time) int32 {
	var n int32
	for _, p := range pods {
		if p.GetMetadata().GetDeletionTimestamp() != nil {
			continue
		}
		if at, ok := disrupted[p.GetMetadata().GetName()]; ok && at.AsTime().Add(DeletionTimeout).After(now) {
			continue
		}
		if podReady(p) {
			n++
		}
	}
	return n
}

// Status is the status pdb should have (Kubernetes' updatePdbStatus):
// disruptionsAllowed = currentHealthy - desiredHealthy, 0 when negative
// or while no pod is expected (a budget whose first pods appear is safe
// before this controller has seen them), and the DisruptionAllowed
// condition.
func Status(pdb *policyv1.PodDisruptionBudget, current, desired, expected int32, disrupted map[string]*timestamppb.Timestamp, now time.Time) *policyv1.PodDisruptionBudgetStatus {
	allowed := current - desired
	if expected <= 0 || allowed <= 0 {
		allowed = 0
	}
	if len(disrupted) == 0 {
		disrupted = nil
	}
	st := &policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.GetMetadata().GetGeneration(),
		DisruptedPods:      disrupted,
		DisruptionsAllowed: allowed,
		CurrentHealthy:     current,
		DesiredHealthy:     desired,
		ExpectedPods:       expected,
		Conditions:         cloneConditions(pdb.GetStatus().GetConditions()),
	}
	reason, status := "InsufficientPods", "False"
	if allowed > 0 {
		reason, status = "SufficientPods", "True"
	}
	setCondition(st, &metav1.Condition{Type: "DisruptionAllowed", Status: status, Reason: reason, ObservedGeneration: st.ObservedGeneration}, now)
	return st
}

// FailSafe is the status of a budget the controller could not compute:
// no disruption allowed, condition DisruptionAllowed False SyncFailed
// with the error (Kubernetes' failSafe).
func FailSafe(pdb *policyv1.PodDisruptionBudget, err error, now time.Time) *policyv1.PodDisruptionBudgetStatus {
	st := &policyv1.PodDisruptionBudgetStatus{}
	if old := pdb.GetStatus(); old != nil {
		st.CurrentHealthy, st.DesiredHealthy, st.ExpectedPods = old.CurrentHealthy, old.DesiredHealthy, old.ExpectedPods
		st.DisruptedPods = old.DisruptedPods
		st.Conditions = cloneConditions(old.Conditions)
	}
	st.ObservedGeneration = pdb.GetMetadata().GetGeneration()
	setCondition(st, &metav1.Condition{Type: "DisruptionAllowed", Status: "False", Reason: "SyncFailed", Message: err.Error(), ObservedGeneration: st.ObservedGeneration}, now)
	return st
}

// setCondition is apimachinery's SetStatusCondition: the transition time
// changes only with the status.
func setCondition(st *policyv1.PodDisruptionBudgetStatus, c *metav1.Condition, now time.Time) {
	c.LastTransitionTime = timestamppb.New(now)
	for i, old := range st.Conditions {
		if old.GetType() == c.Type {
			if old.GetStatus() == c.Status && old.GetLastTransitionTime() != nil {
				c.LastTransitionTime = old.GetLastTransitionTime()
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

func cloneConditions(cs []*metav1.Condition) []*metav1.Condition {
	return slices.Clone(cs)
}

func controllerOf(p *corev1.Pod) *metav1.OwnerReference {
	for _, r := range p.GetMetadata().GetOwnerReferences() {
		if r.GetController() {
			return r
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.GetStatus().GetConditions() {
		if c.GetType() == "Ready" {
			return c.GetStatus() == "True"
		}
	}
	return false
}
