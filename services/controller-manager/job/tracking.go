package job

import (
	"slices"

	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
)

// MaxUncountedPods bounds the uids in status.uncountedTerminatedPods (and
// so the finalizers one sync removes), Kubernetes' MaxUncountedPods.
const MaxUncountedPods = 500

// trackPlan is the pure decision of Kubernetes'
// trackJobStatusAndRemoveFinalizers, up to its writes: the status to flush
// (finished pods added to the uncounted lists, counters of uncounted pods
// whose finalizer is gone, indexes, the interim condition), the pods whose
// finalizer to remove, and the final condition to enact.
type trackPlan struct {
	needsFlush       bool
	removeFinalizers []*corev1.Pod
	// withFinalizer: uids of the Job's pods that still hold the finalizer
	// (removals in flight excluded): an uncounted uid not in it is counted.
	withFinalizer map[string]struct{}
	// finished is the condition to enact (Failed or Complete) once nothing
	// is uncounted or terminating; nil: not finished.
	finished *batchv1.JobCondition
	// reachedMax: the uncounted lists are full; finish at a later sync.
	reachedMax bool
}

// track changes st (the Job's status) as the first flush of a sync must
// write it, and returns the plan. finished is the assessment's condition
// (nil if the sync could not declare the Job finished).
func track(v *view, a assessment, finished *batchv1.JobCondition, needsFlush bool) trackPlan {
	j := v.job
	st := j.Status
	if st.UncountedTerminatedPods == nil {
		st.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	unc := st.UncountedTerminatedPods
	plan := trackPlan{needsFlush: needsFlush, withFinalizer: map[string]struct{}{}}
	for _, p := range v.pods {
		uid := p.GetMetadata().GetUid()
		if _, pending := v.pendingFinalizers[uid]; hasTrackingFinalizer(p) && !pending {
			plan.withFinalizer[uid] = struct{}{}
		}
	}
	if countUncounted(st, plan.withFinalizer) {
		plan.needsFlush = true
	}
	uncS, uncF := uidSet(unc.Succeeded), uidSet(unc.Failed)
	completions := int(j.GetSpec().GetCompletions())
	var newSucceededIx []int
	pods := v.pods
	if isIndexed(j) {
		pods = slices.Clone(pods)
		slices.SortStableFunc(pods, func(x, y *corev1.Pod) int { return completionIndex(x) - completionIndex(y) })
	}
	for _, p := range pods {
		uid := p.GetMetadata().GetUid()
		if _, ok := plan.withFinalizer[uid]; !ok {
			continue // counted already, or its removal is in flight
		}
		failed := isPodFailed(p, j)
		if !canRemoveFinalizer(v, a, finished, p, failed) {
			continue
		}
		plan.removeFinalizers = append(plan.removeFinalizers, p)
		_, inF := uncF[uid]
		if p.GetStatus().GetPhase() == "Succeeded" && !inF {
			if isIndexed(j) {
				if ix := completionIndex(p); ix != unknownIndex && ix < completions && !a.prevSucceededIndexes.has(ix) {
					newSucceededIx = append(newSucceededIx, ix)
					plan.needsFlush = true
				}
			} else if _, ok := uncS[uid]; !ok {
				unc.Succeeded = append(unc.Succeeded, uid)
				uncS[uid] = struct{}{}
				plan.needsFlush = true
			}
		} else if failed || finished != nil && finished.GetType() != "SuccessCriteriaMet" && finished.GetType() != "Complete" {
			// Once the Job is finished, every pod not terminated counts as failed.
			ix := completionIndex(p)
			if !inF && (!isIndexed(j) || ix != unknownIndex && ix < completions) &&
				matchPodFailurePolicy(j.GetSpec().GetPodFailurePolicy(), p).countFailed {
				unc.Failed = append(unc.Failed, uid)
				uncF[uid] = struct{}{}
				plan.needsFlush = true
			}
		}
		if len(newSucceededIx)+len(unc.Succeeded)+len(unc.Failed) >= MaxUncountedPods {
			plan.reachedMax = true
			break
		}
	}
	if isIndexed(j) {
		done := a.prevSucceededIndexes.with(newSucceededIx)
		if s := done.String(); s != st.CompletedIndexes {
			st.CompletedIndexes = s
			plan.needsFlush = true
		}
		st.Succeeded = int32(done.total())
		var fi *string
		if a.failedIndexes != nil {
			s := a.failedIndexes.String()
			fi = &s
		}
		if fmtPtr(fi) != fmtPtr(st.FailedIndexes) {
			st.FailedIndexes = fi
			plan.needsFlush = true
		}
	}
	switch finished.GetType() {
	case "FailureTarget":
		st.Conditions = append(st.Conditions, finished)
		plan.needsFlush = true
		finished = newCondition("Failed", "True", finished.GetReason(), finished.GetMessage(), v.now)
	case "SuccessCriteriaMet":
		if findCondition(st, "SuccessCriteriaMet") == nil {
			st.Conditions = append(st.Conditions, finished)
			plan.needsFlush = true
		}
		finished = newCondition("Complete", "True", finished.GetReason(), finished.GetMessage(), v.now)
	}
	plan.finished = finished
	return plan
}

func fmtPtr(s *string) string {
	if s == nil {
		return "\x00nil"
	}
	return *s
}

// canRemoveFinalizer: the Job is being deleted or finished, the pod
// succeeded, or it failed and is not the failed pod an index keeps until
// its replacement exists.
func canRemoveFinalizer(v *view, a assessment, finished *batchv1.JobCondition, p *corev1.Pod, failed bool) bool {
	if v.job.GetMetadata().GetDeletionTimestamp() != nil || finished != nil || p.GetStatus().GetPhase() == "Succeeded" {
		return true
	}
	if !failed {
		return false
	}
	if d, ok := a.delayed[completionIndex(p)]; ok && d.GetMetadata().GetUid() == p.GetMetadata().GetUid() {
		return false
	}
	return true
}

// countUncounted moves the uncounted uids whose pod no longer holds the
// finalizer (or is gone) to the counters; it reports whether it changed st.
func countUncounted(st *batchv1.JobStatus, withFinalizer map[string]struct{}) bool {
	unc := st.GetUncountedTerminatedPods()
	if unc == nil {
		return false
	}
	keep := func(uids []string) []string {
		var out []string
		for _, u := range uids {
			if _, ok := withFinalizer[u]; ok {
				out = append(out, u)
			}
		}
		return out
	}
	changed := false
	if s := keep(unc.Succeeded); len(s) != len(unc.Succeeded) {
		st.Succeeded += int32(len(unc.Succeeded) - len(s))
		unc.Succeeded = s
		changed = true
	}
	if f := keep(unc.Failed); len(f) != len(unc.Failed) {
		st.Failed += int32(len(unc.Failed) - len(f))
		unc.Failed = f
		changed = true
	}
	return changed
}

// enactFinished sets the final condition (and completionTime for
// Complete) once no pod is uncounted or terminating; it reports whether
// the Job is finished now.
func enactFinished(st *batchv1.JobStatus, finished *batchv1.JobCondition, terminating int32) bool {
	if finished == nil {
		return false
	}
	if unc := st.GetUncountedTerminatedPods(); len(unc.GetSucceeded())+len(unc.GetFailed()) > 0 || terminating > 0 {
		return false
	}
	ensureCondition(st, finished)
	if finished.GetType() == "Complete" {
		st.CompletionTime = finished.GetLastTransitionTime()
	}
	return true
}

// ensureCondition sets c, replacing a condition of its type whose status,
// reason or message differ; a False condition not there is not added
// (Kubernetes' ensureJobConditionStatus). It reports whether st changed.
func ensureCondition(st *batchv1.JobStatus, c *batchv1.JobCondition) bool {
	if old := findCondition(st, c.GetType()); old != nil {
		if old.GetStatus() != c.GetStatus() || old.GetReason() != c.GetReason() || old.GetMessage() != c.GetMessage() {
			old.Status, old.Reason, old.Message = c.Status, c.Reason, c.Message
			old.LastProbeTime, old.LastTransitionTime = c.LastProbeTime, c.LastTransitionTime
			return true
		}
		return false
	}
	if c.GetStatus() == "False" {
		return false
	}
	st.Conditions = append(st.Conditions, c)
	return true
}
