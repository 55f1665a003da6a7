package job

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func tpod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: name, Namespace: "ns", Uid: "uid-" + name, Finalizers: []string{TrackingFinalizer},
			Annotations: map[string]string{}, CreationTimestamp: timestamppb.New(epoch)},
		Spec:   &corev1.PodSpec{NodeName: "n1"},
		Status: &corev1.PodStatus{Phase: "Running"},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func phase(ph string) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func index(ix int) podOpt {
	return func(p *corev1.Pod) { p.Metadata.Annotations[CompletionIndexAnnotation] = fmt.Sprint(ix) }
}
func noFinalizer() podOpt { return func(p *corev1.Pod) { p.Metadata.Finalizers = nil } }
func deleting() podOpt {
	return func(p *corev1.Pod) { p.Metadata.DeletionTimestamp = timestamppb.New(epoch) }
}
func exited(code int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []*corev1.ContainerStatus{{Name: "work", State: &corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: timestamppb.New(epoch)}}}}
	}
}

type jobOpt func(*batchv1.Job)

func tjob(completions, parallelism int32, opts ...jobOpt) *batchv1.Job {
	j := &batchv1.Job{
		ApiVersion: "batch/v1", Kind: "Job",
		Metadata: &metav1.ObjectMeta{Name: "j", Namespace: "ns", Uid: "job-uid"},
		Spec: &batchv1.JobSpec{Completions: proto.Int32(completions), Parallelism: proto.Int32(parallelism),
			BackoffLimit: proto.Int32(6), CompletionMode: "NonIndexed", PodReplacementPolicy: "TerminatingOrFailed",
			Template: &corev1.PodTemplateSpec{Spec: &corev1.PodSpec{RestartPolicy: "Never", Containers: []*corev1.Container{{Name: "work"}}}}},
		Status: &batchv1.JobStatus{StartTime: timestamppb.New(epoch)},
	}
	for _, o := range opts {
		o(j)
	}
	return j
}

func indexedJob(j *batchv1.Job) { j.Spec.CompletionMode = "Indexed" }
func suspended(j *batchv1.Job)  { j.Spec.Suspend = proto.Bool(true) }
func counted(s, f int32) jobOpt {
	return func(j *batchv1.Job) { j.Status.Succeeded, j.Status.Failed = s, f }
}

func viewOf(j *batchv1.Job, pods ...*corev1.Pod) *view {
	return &view{job: j, pods: pods, now: epoch.Add(time.Minute), satisfied: true, pendingFinalizers: map[string]struct{}{},
		backoffBase: DefaultPodFailureBackoff, backoffMax: MaxPodFailureBackoff}
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.GetMetadata().GetName())
	}
	slices.Sort(out)
	return out
}

func TestManage(t *testing.T) {
	cases := []struct {
		name        string
		job         *batchv1.Job
		pods        []*corev1.Pod
		backoff     backoffRecord
		wantCreate  int
		wantIndexes []int
		wantDelete  []string
		wantWait    time.Duration
	}{
		{name: "new job: parallelism pods", job: tjob(10, 3), wantCreate: 3},
		{name: "few completions left: only those", job: tjob(10, 3, counted(8, 0)), wantCreate: 2},
		{name: "uncounted successes count", job: tjob(4, 3), pods: []*corev1.Pod{tpod("a", phase("Succeeded")), tpod("b", phase("Succeeded"))}, wantCreate: 2},
		{name: "running pods count", job: tjob(10, 3), pods: []*corev1.Pod{tpod("a"), tpod("b")}, wantCreate: 1},
		{name: "parallelism lowered: newest... excess deleted", job: tjob(10, 1), pods: []*corev1.Pod{tpod("a"), tpod("b", phase("Pending"))}, wantDelete: []string{"b"}},
		{name: "suspended: every active pod deleted", job: tjob(10, 3, suspended), pods: []*corev1.Pod{tpod("a"), tpod("b"), tpod("c", phase("Succeeded"))}, wantDelete: []string{"a", "b"}},
		{name: "no completions: parallelism until a success", job: func() *batchv1.Job { j := tjob(0, 2); j.Spec.Completions = nil; return j }(), wantCreate: 2},
		{name: "no completions: nothing new after a success", job: func() *batchv1.Job { j := tjob(0, 2); j.Spec.Completions = nil; return j }(),
			pods: []*corev1.Pod{tpod("a", phase("Succeeded")), tpod("b")}},
		{name: "terminating pod replaced at once (TerminatingOrFailed)", job: tjob(5, 2), pods: []*corev1.Pod{tpod("a"), tpod("b", deleting())}, wantCreate: 1},
		{name: "terminating pod waited for (Failed)", job: tjob(5, 2, func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = "Failed" }),
			pods: []*corev1.Pod{tpod("a"), tpod("b", deleting())}},
		{name: "backoff after a failure", job: tjob(5, 1, counted(0, 1)), backoff: backoffRecord{1, epoch.Add(55 * time.Second)}, wantWait: 5 * time.Second},
		{name: "backoff over", job: tjob(5, 1, counted(0, 1)), backoff: backoffRecord{1, epoch}, wantCreate: 1},
		{name: "indexed: lowest pending indexes", job: tjob(5, 3, indexedJob, func(j *batchv1.Job) { j.Status.CompletedIndexes = "0" }),
			pods: []*corev1.Pod{tpod("a", index(2))}, wantCreate: 2, wantIndexes: []int{1, 3}},
		{name: "indexed: duplicate and out-of-range deleted", job: tjob(3, 3, indexedJob),
			pods: []*corev1.Pod{tpod("a", index(1)), tpod("b", index(1), phase("Pending")), tpod("c", index(7)), tpod("d")}, wantDelete: []string{"b", "c", "d"}},
		{name: "indexed: index done elsewhere deleted", job: tjob(3, 3, indexedJob, func(j *batchv1.Job) { j.Status.CompletedIndexes = "1" }),
			pods: []*corev1.Pod{tpod("a", index(1))}, wantDelete: []string{"a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := viewOf(c.job, c.pods...)
			v.backoff = c.backoff
			a := assess(v)
			a.backoff = c.backoff // only the record given
			plan := manage(v, a)
			if plan.create != c.wantCreate || !slices.Equal(plan.createIndexes, c.wantIndexes) ||
				!slices.Equal(names(plan.deleteUncounted), append([]string{}, c.wantDelete...)) || plan.backoffWait != c.wantWait {
				t.Errorf("create %d %v, delete %v, wait %v; want create %d %v, delete %v, wait %v",
					plan.create, plan.createIndexes, names(plan.deleteUncounted), plan.backoffWait, c.wantCreate, c.wantIndexes, c.wantDelete, c.wantWait)
			}
		})
	}
}

func TestAssessFinishes(t *testing.T) {
	pfp := func(j *batchv1.Job) {
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []*batchv1.PodFailurePolicyRule{
			{Action: "Ignore", OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{3}}},
			{Action: "FailJob", OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{42}}}}}
		j.Spec.PodReplacementPolicy = "Failed"
	}
	cases := []struct {
		name       string
		job        *batchv1.Job
		pods       []*corev1.Pod
		wantReason string
		wantFailed int32
	}{
		{name: "failures within the limit", job: tjob(5, 1, counted(0, 6)), wantFailed: 6},
		{name: "backoff limit exceeded", job: tjob(5, 1, counted(0, 6)), pods: []*corev1.Pod{tpod("a", phase("Failed"))}, wantReason: ReasonBackoffLimitExceeded, wantFailed: 7},
		{name: "deleted pod counts failed (TerminatingOrFailed)", job: tjob(5, 1, counted(0, 6)), pods: []*corev1.Pod{tpod("a", deleting())}, wantReason: ReasonBackoffLimitExceeded, wantFailed: 7},
		{name: "deadline", job: tjob(5, 1, func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = proto.Int64(30) }), wantReason: ReasonDeadlineExceeded},
		{name: "deadline not yet", job: tjob(5, 1, func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = proto.Int64(90) })},
		{name: "deadline ignored while suspended", job: tjob(5, 1, suspended, func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = proto.Int64(30) })},
		{name: "FailJob on exit code", job: tjob(5, 1, pfp), pods: []*corev1.Pod{tpod("a", phase("Failed"), exited(42))}, wantReason: ReasonPodFailurePolicy, wantFailed: 1},
		{name: "Ignore does not count", job: tjob(5, 1, pfp, counted(0, 6)), pods: []*corev1.Pod{tpod("a", phase("Failed"), exited(3))}, wantFailed: 6},
		{name: "already uncounted failure not counted twice", job: tjob(5, 1, counted(0, 6), func(j *batchv1.Job) {
			j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Failed: []string{"uid-a"}}
		}), pods: []*corev1.Pod{tpod("a", phase("Failed"))}, wantReason: ReasonBackoffLimitExceeded, wantFailed: 7},
		{name: "max failed indexes", job: tjob(5, 2, indexedJob, func(j *batchv1.Job) {
			j.Spec.BackoffLimitPerIndex, j.Spec.MaxFailedIndexes = proto.Int32(0), proto.Int32(1)
			j.Spec.BackoffLimit = proto.Int32(1 << 30)
		}), pods: []*corev1.Pod{tpod("a", index(0), phase("Failed")), tpod("b", index(1), phase("Failed"))}, wantReason: ReasonMaxFailedIndexesExceeded, wantFailed: 2},
		{name: "success policy", job: tjob(5, 2, indexedJob, func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []*batchv1.SuccessPolicyRule{{SucceededIndexes: proto.String("0,2")}}}
		}), pods: []*corev1.Pod{tpod("a", index(0), phase("Succeeded")), tpod("b", index(2), phase("Succeeded"))}, wantReason: ReasonSuccessPolicy},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := assess(viewOf(c.job, c.pods...))
			if a.finished.GetReason() != c.wantReason || a.failed != c.wantFailed {
				t.Errorf("finished %v failed %d; want reason %q failed %d", a.finished, a.failed, c.wantReason, c.wantFailed)
			}
		})
	}
}

// TestTrackAcrossRestarts: whatever step of tracking a controller stopped
// at, the next sync counts each finished pod exactly once.
func TestTrackAcrossRestarts(t *testing.T) {
	unc := func(s ...string) jobOpt {
		return func(j *batchv1.Job) {
			j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: s}
		}
	}
	cases := []struct {
		name          string
		job           *batchv1.Job
		pods          []*corev1.Pod
		wantUncounted []string // after the first flush
		wantRemove    []string
		wantSucceeded int32 // once the removals succeeded
	}{
		{name: "finished, not recorded: recorded then counted", job: tjob(5, 2), pods: []*corev1.Pod{tpod("a", phase("Succeeded"))},
			wantUncounted: []string{"uid-a"}, wantRemove: []string{"a"}, wantSucceeded: 1},
		{name: "recorded, finalizer still there (stopped before removal)", job: tjob(5, 2, unc("uid-a")), pods: []*corev1.Pod{tpod("a", phase("Succeeded"))},
			wantUncounted: []string{"uid-a"}, wantRemove: []string{"a"}, wantSucceeded: 1},
		{name: "recorded, finalizer gone (stopped before the count)", job: tjob(5, 2, unc("uid-a")), pods: []*corev1.Pod{tpod("a", phase("Succeeded"), noFinalizer())},
			wantUncounted: nil, wantSucceeded: 1},
		{name: "recorded, pod gone", job: tjob(5, 2, unc("uid-a")), wantUncounted: nil, wantSucceeded: 1},
		{name: "counted: nothing again", job: tjob(5, 2, counted(1, 0)), pods: []*corev1.Pod{tpod("a", phase("Succeeded"), noFinalizer())}, wantSucceeded: 1},
		{name: "running pod keeps its finalizer", job: tjob(5, 2), pods: []*corev1.Pod{tpod("a")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := viewOf(c.job, c.pods...)
			a := assess(v)
			plan := track(v, a, nil, false)
			if got := v.job.Status.UncountedTerminatedPods.GetSucceeded(); !slices.Equal(got, c.wantUncounted) {
				t.Errorf("uncounted %v, want %v", got, c.wantUncounted)
			}
			if got := names(plan.removeFinalizers); !slices.Equal(got, append([]string{}, c.wantRemove...)) {
				t.Errorf("remove finalizers of %v, want %v", got, c.wantRemove)
			}
			for _, p := range plan.removeFinalizers {
				delete(plan.withFinalizer, p.GetMetadata().GetUid())
			}
			countUncounted(v.job.Status, plan.withFinalizer)
			if v.job.Status.Succeeded != c.wantSucceeded || len(v.job.Status.UncountedTerminatedPods.GetSucceeded()) != 0 {
				t.Errorf("succeeded %d uncounted %v, want %d and none", v.job.Status.Succeeded, v.job.Status.UncountedTerminatedPods, c.wantSucceeded)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	cases := []struct {
		failures int
		elapsed  time.Duration
		want     time.Duration
	}{
		{0, 0, 0}, {1, 0, 10 * time.Second}, {1, 4 * time.Second, 6 * time.Second}, {2, 0, 20 * time.Second},
		{3, 0, 40 * time.Second}, {6, 0, 320 * time.Second}, {7, 0, 6 * time.Minute}, {30, 0, 6 * time.Minute}, {1, time.Hour, 0},
	}
	for _, c := range cases {
		rec := backoffRecord{c.failures, epoch}
		if got := rec.remaining(epoch.Add(c.elapsed), DefaultPodFailureBackoff, MaxPodFailureBackoff); got != c.want {
			t.Errorf("%d failures, %v after: %v, want %v", c.failures, c.elapsed, got, c.want)
		}
	}
	rec := nextBackoffRecord(backoffRecord{3, epoch}, []time.Time{epoch.Add(time.Second)}, []time.Time{epoch, epoch.Add(2 * time.Second)})
	if rec != (backoffRecord{1, epoch.Add(2 * time.Second)}) {
		t.Errorf("after a success: %+v, want the one failure after it", rec)
	}
}

func TestIndexSet(t *testing.T) {
	cases := []struct {
		in   string
		add  []int
		want string
	}{
		{"", nil, ""}, {"", []int{3, 1, 2, 7}, "1-3,7"}, {"0-2,5", []int{3, 4}, "0-5"}, {"1,x,3-2,9", nil, "1,9"}, {"8-20", nil, "8-9"},
	}
	for _, c := range cases {
		s := parseIndexes(c.in, 10).with(c.add)
		if s.String() != c.want {
			t.Errorf("%q + %v = %q, want %q", c.in, c.add, s.String(), c.want)
		}
	}
	s := parseIndexes("1-3,7", 10)
	if !s.has(2) || s.has(4) || !s.has(7) || s.total() != 4 {
		t.Errorf("has/total wrong for %v", s)
	}
}
