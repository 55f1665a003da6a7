package job

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// MaxPodCreateDeletePerSync bounds the pods one sync creates or deletes
// (Kubernetes' MaxPodCreateDeletePerSync).
const MaxPodCreateDeletePerSync = 500

// Reasons and messages of a Job's conditions, Kubernetes'.
const (
	ReasonBackoffLimitExceeded     = "BackoffLimitExceeded"
	ReasonDeadlineExceeded         = "DeadlineExceeded"
	ReasonPodFailurePolicy         = "PodFailurePolicy"
	ReasonMaxFailedIndexesExceeded = "MaxFailedIndexesExceeded"
	ReasonFailedIndexes            = "FailedIndexes"
	ReasonSuccessPolicy            = "SuccessPolicy"
	ReasonCompletionsReached       = "CompletionsReached"
)

// view is what a sync knows of one Job: the Job (a copy whose status the
// sync changes), its pods, and the controller's memory of it.
type view struct {
	job  *batchv1.Job
	pods []*corev1.Pod
	now  time.Time
	// satisfied: no creations or deletions are pending (expectations).
	satisfied bool
	// pendingFinalizers: uids whose finalizer removal is in flight.
	pendingFinalizers map[string]struct{}
	backoff           backoffRecord
	// backoffBase and backoffMax bound the failed-pod backoff.
	backoffBase, backoffMax time.Duration
}

// assessment is the first, pure step of a sync (Kubernetes' syncJob up to
// manageJob): the counts, the finish condition reached, and the indexes.
type assessment struct {
	active      []*corev1.Pod
	ready       int32
	terminating int32
	succeeded   int32 // counted, uncounted and newly finished
	failed      int32 // idem, failures the pod failure policy ignores left out
	// finished is the condition the Job reached: FailureTarget or
	// SuccessCriteriaMet (or Failed, from a FailureTarget already written).
	finished *batchv1.JobCondition
	// backoff is the Job's record with the newly finished pods.
	backoff backoffRecord
	// requeueAfter: look again then (activeDeadlineSeconds).
	requeueAfter time.Duration

	prevSucceededIndexes indexSet
	succeededIndexes     indexSet
	failedIndexes        indexSet // nil without backoffLimitPerIndex
	// delayed holds per index the failed pod whose finalizer stays until a
	// replacement carries its failure count (backoffLimitPerIndex).
	delayed map[int]*corev1.Pod
}

func newCondition(typ, status, reason, message string, now time.Time) *batchv1.JobCondition {
	ts := timestamppb.New(now)
	return &batchv1.JobCondition{Type: typ, Status: status, Reason: reason, Message: message, LastProbeTime: ts, LastTransitionTime: ts}
}

func findCondition(st *batchv1.JobStatus, typ string) *batchv1.JobCondition {
	for _, c := range st.GetConditions() {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}

// IsFinished reports whether j has the Complete or Failed condition True.
func IsFinished(j *batchv1.Job) bool {
	for _, c := range j.GetStatus().GetConditions() {
		if (c.GetType() == "Complete" || c.GetType() == "Failed") && c.GetStatus() == "True" {
			return true
		}
	}
	return false
}

func isSuspended(j *batchv1.Job) bool { return j.GetSpec().GetSuspend() }

// newlyFinished returns the Job's pods that finished (phase Succeeded, or
// failed as isPodFailed says) and are not counted yet: they hold the
// tracking finalizer, are not in the uncounted lists and their finalizer
// is not being removed; an Indexed Job's need a valid index.
func newlyFinished(v *view) (succeeded, failed []*corev1.Pod) {
	j := v.job
	uncS, uncF := uidSet(j.GetStatus().GetUncountedTerminatedPods().GetSucceeded()), uidSet(j.GetStatus().GetUncountedTerminatedPods().GetFailed())
	completions := int(j.GetSpec().GetCompletions())
	for _, p := range v.pods {
		uid := p.GetMetadata().GetUid()
		if !hasTrackingFinalizer(p) {
			continue
		}
		if _, ok := v.pendingFinalizers[uid]; ok {
			continue
		}
		if isIndexed(j) {
			if ix := completionIndex(p); ix == unknownIndex || ix >= completions {
				continue
			}
		}
		switch {
		case p.GetStatus().GetPhase() == "Succeeded":
			if _, ok := uncS[uid]; !ok {
				succeeded = append(succeeded, p)
			}
		case isPodFailed(p, j):
			if _, ok := uncF[uid]; !ok {
				failed = append(failed, p)
			}
		}
	}
	return succeeded, failed
}

func uidSet(uids []string) map[string]struct{} {
	s := make(map[string]struct{}, len(uids))
	for _, u := range uids {
		s[u] = struct{}{}
	}
	return s
}

// assess is the pure first step of a sync; it may set status.startTime.
func assess(v *view) assessment {
	j := v.job
	spec, st := j.GetSpec(), j.Status
	var a assessment
	for _, p := range v.pods {
		switch {
		case controllerutil.IsPodActive(p):
			a.active = append(a.active, p)
			if controllerutil.IsPodReady(p) {
				a.ready++
			}
		case isTerminating(p):
			a.terminating++
		}
	}
	newS, newF := newlyFinished(v)
	unc := st.GetUncountedTerminatedPods()
	a.succeeded = st.GetSucceeded() + int32(len(newS)) + int32(len(unc.GetSucceeded()))
	nonIgnored := 0
	for _, p := range newF {
		if matchPodFailurePolicy(spec.GetPodFailurePolicy(), p).countFailed {
			nonIgnored++
		}
	}
	a.failed = st.GetFailed() + int32(nonIgnored) + int32(len(unc.GetFailed()))
	if st.StartTime == nil && !isSuspended(j) {
		st.StartTime = timestamppb.New(v.now)
	}
	a.backoff = nextBackoffRecord(v.backoff, finishTimes(newS, v.now), finishTimes(newF, v.now))

	if c := findCondition(st, "SuccessCriteriaMet"); c.GetStatus() == "True" {
		a.finished = c
	}
	if a.finished == nil {
		if c := findCondition(st, "FailureTarget"); c.GetStatus() == "True" {
			a.finished = newCondition("Failed", "True", c.GetReason(), c.GetMessage(), v.now)
		} else if msg := failJobMessage(j, v.pods); msg != "" {
			a.finished = newCondition("FailureTarget", "True", ReasonPodFailurePolicy, msg, v.now)
		}
	}
	if a.finished == nil {
		switch {
		case a.failed > spec.GetBackoffLimit() || pastBackoffLimitOnFailure(j, v.pods):
			a.finished = newCondition("FailureTarget", "True", ReasonBackoffLimitExceeded, "Job has reached the specified backoff limit", v.now)
		case spec.ActiveDeadlineSeconds != nil && st.StartTime != nil && !isSuspended(j):
			left := time.Duration(*spec.ActiveDeadlineSeconds)*time.Second - v.now.Sub(st.StartTime.AsTime())
			if left <= 0 {
				a.finished = newCondition("FailureTarget", "True", ReasonDeadlineExceeded, "Job was active longer than specified deadline", v.now)
			} else {
				a.requeueAfter = left
			}
		}
	}
	if isIndexed(j) {
		a.prevSucceededIndexes, a.succeededIndexes = succeededIndexes(j, v.pods)
		a.succeeded = int32(a.succeededIndexes.total())
		if spec.BackoffLimitPerIndex != nil {
			a.failedIndexes = failedIndexes(j, v.pods, a.succeededIndexes)
			if a.finished == nil {
				completions := int(spec.GetCompletions())
				switch {
				case spec.MaxFailedIndexes != nil && a.failedIndexes.total() > int(*spec.MaxFailedIndexes):
					a.finished = newCondition("FailureTarget", "True", ReasonMaxFailedIndexesExceeded, "Job has exceeded the specified maximal number of failed indexes", v.now)
				case a.failedIndexes.total() > 0 && a.failedIndexes.total()+a.succeededIndexes.total() >= completions:
					a.finished = newCondition("FailureTarget", "True", ReasonFailedIndexes, "Job has failed indexes", v.now)
				}
			}
			a.delayed = delayedPerIndex(v, a)
		}
		if a.finished == nil {
			if msg, ok := matchSuccessPolicy(spec.GetSuccessPolicy(), a.succeededIndexes); ok {
				a.finished = newCondition("SuccessCriteriaMet", "True", ReasonSuccessPolicy, msg, v.now)
			}
		}
	}
	return a
}

func finishTimes(pods []*corev1.Pod, now time.Time) []time.Time {
	out := make([]time.Time, len(pods))
	for i, p := range pods {
		out[i] = finishedTime(p, now)
	}
	return out
}

// failJobMessage is the message of the first failed pod a FailJob rule of
// the pod failure policy matches, or "".
func failJobMessage(j *batchv1.Job, pods []*corev1.Pod) string {
	pfp := j.GetSpec().GetPodFailurePolicy()
	if pfp == nil {
		return ""
	}
	for _, p := range pods {
		if isPodFailed(p, j) {
			if m := matchPodFailurePolicy(pfp, p); m.failJob != "" {
				return m.failJob
			}
		}
	}
	return ""
}

// pastBackoffLimitOnFailure: with restartPolicy OnFailure, the containers
// of the running and pending pods restarted backoffLimit times in all.
func pastBackoffLimitOnFailure(j *batchv1.Job, pods []*corev1.Pod) bool {
	if j.GetSpec().GetTemplate().GetSpec().GetRestartPolicy() != "OnFailure" {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if ph := p.GetStatus().GetPhase(); ph == "Running" || ph == "Pending" {
			for _, c := range append(slices.Clone(p.GetStatus().GetInitContainerStatuses()), p.GetStatus().GetContainerStatuses()...) {
				restarts += c.GetRestartCount()
			}
		}
	}
	limit := j.GetSpec().GetBackoffLimit()
	if limit == 0 {
		return restarts > 0
	}
	return restarts >= limit
}

// succeededIndexes returns the indexes status.completedIndexes holds and
// those with the indexes of the Succeeded pods added.
func succeededIndexes(j *batchv1.Job, pods []*corev1.Pod) (prev, cur indexSet) {
	completions := int(j.GetSpec().GetCompletions())
	prev = parseIndexes(j.GetStatus().GetCompletedIndexes(), completions)
	var ixs []int
	for _, p := range pods {
		if ix := completionIndex(p); p.GetStatus().GetPhase() == "Succeeded" && ix != unknownIndex && ix < completions {
			ixs = append(ixs, ix)
		}
	}
	return prev, prev.with(ixs)
}

// failedIndexes returns status.failedIndexes with the indexes whose failed
// pod (not counted yet) exhausted backoffLimitPerIndex or matched a
// FailIndex rule.
func failedIndexes(j *batchv1.Job, pods []*corev1.Pod, succeeded indexSet) indexSet {
	completions := int(j.GetSpec().GetCompletions())
	prev := parseIndexes(j.GetStatus().GetFailedIndexes(), completions)
	uncF := uidSet(j.GetStatus().GetUncountedTerminatedPods().GetFailed())
	var ixs []int
	for _, p := range pods {
		ix := completionIndex(p)
		if !hasTrackingFinalizer(p) || !isPodFailed(p, j) || ix == unknownIndex || ix >= completions || succeeded.has(ix) {
			continue
		}
		if _, ok := uncF[p.GetMetadata().GetUid()]; ok {
			continue
		}
		m := matchPodFailurePolicy(j.GetSpec().GetPodFailurePolicy(), p)
		if m.action == "FailIndex" || m.countFailed && annotationInt(p, IndexFailureCountAnnotation)+1 > int(j.GetSpec().GetBackoffLimitPerIndex()) {
			ixs = append(ixs, ix)
		}
	}
	return prev.with(ixs)
}

// delayedPerIndex picks, for each index with no active pod that neither
// succeeded nor failed, its latest failed pod: its finalizer stays until a
// replacement carries its failure count (Kubernetes'
// getPodsWithDelayedDeletionPerIndex).
func delayedPerIndex(v *view, a assessment) map[int]*corev1.Pod {
	j := v.job
	activeIx := map[int]bool{}
	for _, p := range a.active {
		activeIx[completionIndex(p)] = true
	}
	out := map[int]*corev1.Pod{}
	completions := int(j.GetSpec().GetCompletions())
	for _, p := range v.pods {
		ix := completionIndex(p)
		if !hasTrackingFinalizer(p) || !isPodFailed(p, j) || ix == unknownIndex || ix >= completions {
			continue
		}
		if _, ok := v.pendingFinalizers[p.GetMetadata().GetUid()]; ok {
			continue
		}
		if a.succeededIndexes.has(ix) || a.failedIndexes.has(ix) || activeIx[ix] {
			continue
		}
		if last, ok := out[ix]; ok {
			if absoluteFailures(last) <= absoluteFailures(p) && !finishedTime(p, v.now).Before(finishedTime(last, v.now)) {
				out[ix] = p
			}
			continue
		}
		out[ix] = p
	}
	return out
}

func absoluteFailures(p *corev1.Pod) int {
	return annotationInt(p, IndexFailureCountAnnotation) + annotationInt(p, IndexIgnoredFailureCountAnnotation)
}

// nextIndexFailureCounts returns the failure counts a replacement of the
// failed pod p carries: one more failure, or one more ignored failure.
func nextIndexFailureCounts(j *batchv1.Job, p *corev1.Pod) (failures, ignored int) {
	failures, ignored = annotationInt(p, IndexFailureCountAnnotation), annotationInt(p, IndexIgnoredFailureCountAnnotation)
	if p == nil {
		return 0, 0
	}
	if matchPodFailurePolicy(j.GetSpec().GetPodFailurePolicy(), p).countFailed {
		return failures + 1, ignored
	}
	return failures, ignored + 1
}

// matchSuccessPolicy returns the message of the first rule of the success
// policy the succeeded indexes meet.
func matchSuccessPolicy(sp *batchv1.SuccessPolicy, succeeded indexSet) (string, bool) {
	for i, r := range sp.GetRules() {
		var want indexSet
		if r.SucceededIndexes != nil {
			want = parseIndexes(*r.SucceededIndexes, 1<<31-1)
		}
		var got int
		if want != nil {
			for _, iv := range want {
				for ix := iv.first; ix <= iv.last; ix++ {
					if succeeded.has(ix) {
						got++
					}
				}
			}
		} else {
			got = succeeded.total()
		}
		switch {
		case r.SucceededCount != nil && got >= int(*r.SucceededCount):
		case r.SucceededCount == nil && want != nil && got == want.total():
		default:
			continue
		}
		return "Matched rules at index " + strconv.Itoa(i), true
	}
	return "", false
}

// managePlan is the pure decision of manageJob: which pods to delete (and
// whether their finalizers go first), which to create.
type managePlan struct {
	// deleteUncounted: excess or suspended pods, finalizer removed first.
	deleteUncounted []*corev1.Pod
	// create: how many pods to create (NonIndexed), or which indexes.
	create        int
	createIndexes []int
	// backoffWait: creations wait this long for the failed-pod backoff.
	backoffWait time.Duration
	// wantActive is the active pods the Job should have (for logs).
	wantActive int32
}

// manage decides a running (not finished) Job's pods, as Kubernetes'
// manageJob: a suspended Job deletes its active pods; else excess pods go
// (an Indexed Job's duplicates and pods of indexes out of range or done
// first) and missing ones are created (at most
// MaxPodCreateDeletePerSync), unless the backoff after failures says wait.
func manage(v *view, a assessment) managePlan {
	j := v.job
	spec := j.GetSpec()
	var plan managePlan
	active := int32(len(a.active))
	if isSuspended(j) {
		plan.deleteUncounted = rankForDeletion(a.active)
		return plan
	}
	var want int32
	if spec.Completions == nil {
		if a.succeeded > 0 {
			want = active
		} else {
			want = spec.GetParallelism()
		}
	} else {
		want = max(min(spec.GetParallelism(), spec.GetCompletions()-a.succeeded), 0)
	}
	plan.wantActive = want
	keep := a.active
	if isIndexed(j) {
		var rm []*corev1.Pod
		rm, keep = indexedExcess(a.active, a.succeededIndexes, a.failedIndexes, int(spec.GetCompletions()))
		plan.deleteUncounted = rm
	}
	if extra := len(keep) - int(want); extra > 0 {
		ranked := rankForDeletion(keep)
		plan.deleteUncounted = append(plan.deleteUncounted, ranked[:extra]...)
		keep = ranked[extra:]
	}
	if len(plan.deleteUncounted) > MaxPodCreateDeletePerSync {
		plan.deleteUncounted = plan.deleteUncounted[:MaxPodCreateDeletePerSync]
	}
	if len(plan.deleteUncounted) > 0 {
		return plan
	}
	diff := int(want) - len(keep)
	if onlyReplaceFailedPods(j) {
		diff -= int(a.terminating)
	}
	if diff <= 0 {
		return plan
	}
	if wait := a.backoff.remaining(v.now, v.backoffBase, v.backoffMax); wait > 0 {
		plan.backoffWait = wait
		return plan
	}
	diff = min(diff, MaxPodCreateDeletePerSync)
	if !isIndexed(j) {
		plan.create = diff
		return plan
	}
	held := map[int]bool{}
	for _, p := range keep {
		held[completionIndex(p)] = true
	}
	if onlyReplaceFailedPods(j) {
		for _, p := range v.pods {
			if isTerminating(p) {
				held[completionIndex(p)] = true
			}
		}
	}
	for ix := 0; ix < int(spec.GetCompletions()) && len(plan.createIndexes) < diff; ix++ {
		if !held[ix] && !a.succeededIndexes.has(ix) && !a.failedIndexes.has(ix) {
			plan.createIndexes = append(plan.createIndexes, ix)
		}
	}
	plan.create = len(plan.createIndexes)
	return plan
}

// indexedExcess splits an Indexed Job's active pods into those to delete
// (unknown or out-of-range index, index succeeded or failed, all but one
// pod of an index) and those to keep.
func indexedExcess(active []*corev1.Pod, succeeded, failed indexSet, completions int) (rm, keep []*corev1.Pod) {
	byIndex := map[int][]*corev1.Pod{}
	for _, p := range active {
		ix := completionIndex(p)
		if ix == unknownIndex || ix >= completions || succeeded.has(ix) || failed.has(ix) {
			rm = append(rm, p)
			continue
		}
		byIndex[ix] = append(byIndex[ix], p)
	}
	ixs := make([]int, 0, len(byIndex))
	for ix := range byIndex {
		ixs = append(ixs, ix)
	}
	slices.Sort(ixs)
	for _, ix := range ixs {
		ranked := rankForDeletion(byIndex[ix])
		rm = append(rm, ranked[:len(ranked)-1]...)
		keep = append(keep, ranked[len(ranked)-1])
	}
	return rm, keep
}

// rankForDeletion orders pods, those to delete first: unscheduled, then
// Pending, then not ready, then the newest (Kubernetes' ActivePods order,
// abridged), by name last.
func rankForDeletion(pods []*corev1.Pod) []*corev1.Pod {
	out := slices.Clone(pods)
	rank := func(p *corev1.Pod) (int, int, int) {
		s, ph, r := 1, 1, 1
		if p.GetSpec().GetNodeName() == "" {
			s = 0
		}
		if p.GetStatus().GetPhase() != "Running" {
			ph = 0
		}
		if !controllerutil.IsPodReady(p) {
			r = 0
		}
		return s, ph, r
	}
	slices.SortStableFunc(out, func(a, b *corev1.Pod) int {
		as, aph, ar := rank(a)
		bs, bph, br := rank(b)
		if c := cmp.Or(cmp.Compare(as, bs), cmp.Compare(aph, bph), cmp.Compare(ar, br)); c != 0 {
			return c
		}
		at, bt := a.GetMetadata().GetCreationTimestamp().AsTime(), b.GetMetadata().GetCreationTimestamp().AsTime()
		if c := bt.Compare(at); c != 0 {
			return c
		}
		return cmp.Compare(a.GetMetadata().GetName(), b.GetMetadata().GetName())
	})
	return out
}
