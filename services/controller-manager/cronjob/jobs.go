package cronjob

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// ScheduledTimestampAnnotation on a Job a CronJob created holds the
// schedule time it ran for, in RFC 3339, in the CronJob's time zone (UTC
// without one).
const ScheduledTimestampAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp"

// Job condition types that end a Job.
const (
	jobComplete = "Complete"
	jobFailed   = "Failed"
)

// jobFromTemplate is the Job of cj's run at scheduled: named by jobName,
// with the template's labels and annotations (and the scheduled-timestamp
// annotation), controlled by cj, its spec the template's.
func jobFromTemplate(cj *batchv1.CronJob, scheduled time.Time) (*batchv1.Job, error) {
	tm := cj.GetSpec().GetJobTemplate().GetMetadata()
	annotations := maps.Clone(tm.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	loc, err := time.LoadLocation(cj.GetSpec().GetTimeZone())
	if err != nil {
		return nil, err
	}
	annotations[ScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	spec, _ := proto.Clone(cj.GetSpec().GetJobTemplate().GetSpec()).(*batchv1.JobSpec)
	return &batchv1.Job{
		ApiVersion: "batch/v1",
		Kind:       "Job",
		Metadata: &metav1.ObjectMeta{
			Name:            jobName(cj, scheduled),
			Namespace:       cj.GetMetadata().GetNamespace(),
			Labels:          maps.Clone(tm.GetLabels()),
			Annotations:     annotations,
			OwnerReferences: []*metav1.OwnerReference{controllerRef(cj)},
		},
		Spec: spec,
	}, nil
}

// controllerRef is the controller reference of cj's Jobs.
func controllerRef(cj *batchv1.CronJob) *metav1.OwnerReference {
	ref := controllerutil.NewControllerRef(cj)
	ref.ApiVersion, ref.Kind = "batch/v1", "CronJob"
	return ref
}

// finishedStatus returns the condition type (Complete or Failed) that ended
// j, or "" while it runs.
func finishedStatus(j *batchv1.Job) string {
	for _, c := range j.GetStatus().GetConditions() {
		if (c.GetType() == jobComplete || c.GetType() == jobFailed) && c.GetStatus() == "True" {
			return c.GetType()
		}
	}
	return ""
}

func isJobFinished(j *batchv1.Job) bool  { return finishedStatus(j) != "" }
func isJobSucceeded(j *batchv1.Job) bool { return finishedStatus(j) == jobComplete }

// jobRef is the reference to j kept in status.active.
func jobRef(j *batchv1.Job) *corev1.ObjectReference {
	m := j.GetMetadata()
	return &corev1.ObjectReference{
		Kind:            "Job",
		ApiVersion:      "batch/v1",
		Namespace:       m.GetNamespace(),
		Name:            m.GetName(),
		Uid:             m.GetUid(),
		ResourceVersion: m.GetResourceVersion(),
	}
}

func inActive(st *batchv1.CronJobStatus, uid string) bool {
	return slices.ContainsFunc(st.GetActive(), func(r *corev1.ObjectReference) bool { return r.GetUid() == uid })
}

func inActiveByName(st *batchv1.CronJobStatus, namespace, name string) bool {
	return slices.ContainsFunc(st.GetActive(), func(r *corev1.ObjectReference) bool {
		return r.GetName() == name && r.GetNamespace() == namespace
	})
}

func removeActive(st *batchv1.CronJobStatus, uid string) {
	st.Active = slices.DeleteFunc(st.Active, func(r *corev1.ObjectReference) bool { return r.GetUid() == uid })
}

// activeUpdate is what the Jobs of a CronJob say about its status.active
// and lastSuccessfulTime.
type activeUpdate struct {
	// completed are the active Jobs that finished: out of status.active
	// (SawCompletedJob).
	completed []*batchv1.Job
	// unexpected are the running Jobs it controls that status.active does
	// not list: created by someone else, or by a sync whose status write
	// is not read back yet (UnexpectedJob, after a fresh read says so).
	unexpected []*batchv1.Job
	// gone are the references in status.active to Jobs not among jobs:
	// deleted, or not in the cache yet (MissingJob, after a read of the
	// Job from the API says so).
	gone []*corev1.ObjectReference
	// lastSuccessful is the latest completion time of a succeeded Job,
	// when it is later than status.lastSuccessfulTime.
	lastSuccessful *timestamppb.Timestamp
}

// reconcileActive compares status.active with the Jobs cj controls.
func reconcileActive(st *batchv1.CronJobStatus, jobs []*batchv1.Job) activeUpdate {
	var u activeUpdate
	children := map[string]bool{}
	last := st.GetLastSuccessfulTime()
	for _, j := range jobs {
		uid := j.GetMetadata().GetUid()
		children[uid] = true
		active, finished := inActive(st, uid), isJobFinished(j)
		switch {
		case !active && !finished:
			u.unexpected = append(u.unexpected, j)
		case active && finished:
			u.completed = append(u.completed, j)
		}
		if ct := j.GetStatus().GetCompletionTime(); isJobSucceeded(j) && ct != nil && (last == nil || ct.AsTime().After(last.AsTime())) {
			last = ct
			u.lastSuccessful = ct
		}
	}
	for _, r := range st.GetActive() {
		if !children[r.GetUid()] {
			u.gone = append(u.gone, r)
		}
	}
	return u
}

// historyToDelete are the finished Jobs beyond the history limits, the
// oldest first: successful ones beyond successfulJobsHistoryLimit, failed
// ones beyond failedJobsHistoryLimit (an unset limit keeps all).
func historyToDelete(cj *batchv1.CronJob, jobs []*batchv1.Job) []*batchv1.Job {
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		switch finishedStatus(j) {
		case jobComplete:
			succeeded = append(succeeded, j)
		case jobFailed:
			failed = append(failed, j)
		}
	}
	s := cj.GetSpec()
	out := oldestBeyond(succeeded, s.SuccessfulJobsHistoryLimit)
	return append(out, oldestBeyond(failed, s.FailedJobsHistoryLimit)...)
}

func oldestBeyond(jobs []*batchv1.Job, limit *int32) []*batchv1.Job {
	if limit == nil || len(jobs) <= int(*limit) {
		return nil
	}
	jobs = slices.Clone(jobs)
	slices.SortFunc(jobs, byStartTime)
	return jobs[:len(jobs)-int(*limit)]
}

// byStartTime orders Jobs by status.startTime, those not started last,
// then by name.
func byStartTime(a, b *batchv1.Job) int {
	as, bs := a.GetStatus().GetStartTime(), b.GetStatus().GetStartTime()
	switch {
	case as == nil && bs != nil:
		return 1
	case as != nil && bs == nil:
		return -1
	case as != nil && !as.AsTime().Equal(bs.AsTime()):
		return as.AsTime().Compare(bs.AsTime())
	}
	return cmp.Compare(a.GetMetadata().GetName(), b.GetMetadata().GetName())
}
