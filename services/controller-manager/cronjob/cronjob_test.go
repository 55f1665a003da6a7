package cronjob_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/cronjob"
	"skiff.dev/services/controller-manager/manager/managertest"
)

// These tests run the CronJob controller on a real apiserver with a fake
// clock: the test steps the clock to each schedule time, and plays the Job
// controller itself (it marks Jobs finished by writing their status).

// patience bounds every wait for something that should happen.
const patience = 15 * time.Second

type cluster struct {
	*managertest.Env
	t     *testing.T
	clock *workqueue.FakeClock
	cjs   *informer.Informer[*batchv1.CronJob]
	jobs  *informer.Informer[*batchv1.Job]
}

// start runs the controller on a fake clock set to the wall clock (the
// apiserver stamps creationTimestamp with the wall clock).
func start(t *testing.T) *cluster {
	t.Helper()
	env := managertest.Start(t)
	c := &cluster{
		Env:   env,
		t:     t,
		clock: workqueue.NewFakeClock(time.Now()),
		cjs:   informer.For(env.Manager.Informers, client.CronJobs(env.Conn)),
		jobs:  informer.For(env.Manager.Informers, client.Jobs(env.Conn)),
	}
	env.Manager.Clock = c.clock
	ctrl := cronjob.New(env.Manager, cronjob.Options{})
	managertest.Watch(env, c.cjs)
	managertest.Watch(env, c.jobs)
	env.StartInformers()
	env.GoErr(ctrl.Run)
	return c
}

// create creates CronJob "default/<name>" on schedule, changed by mutate.
func (c *cluster) create(name, schedule string, mutate func(*batchv1.CronJob)) *batchv1.CronJob {
	c.t.Helper()
	cj := &batchv1.CronJob{
		Metadata: &metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &batchv1.CronJobSpec{
			Schedule: schedule,
			JobTemplate: &batchv1.JobTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: &batchv1.JobSpec{Template: &corev1.PodTemplateSpec{Spec: &corev1.PodSpec{
					RestartPolicy: "OnFailure",
					Containers:    []*corev1.Container{{Name: "c", Image: "busybox:1.36", Command: []string{"true"}}},
				}}},
			},
		},
	}
	if mutate != nil {
		mutate(cj)
	}
	out, err := client.CronJobs(c.Conn).Create(c.Ctx, cj)
	if err != nil {
		c.t.Fatalf("create cronjob %s: %v", name, err)
	}
	return out
}

// update changes CronJob name as mutate says, retrying on conflict.
func (c *cluster) update(name string, mutate func(*batchv1.CronJob)) {
	c.t.Helper()
	err := client.RetryOnConflict(c.Ctx, client.DefaultRetry, func() error {
		cj, err := client.CronJobs(c.Conn).Get(c.Ctx, "default", name)
		if err != nil {
			return err
		}
		mutate(cj)
		_, err = client.CronJobs(c.Conn).Update(c.Ctx, cj)
		return err
	})
	if err != nil {
		c.t.Fatalf("update cronjob %s: %v", name, err)
	}
}

// nextMinute is the first minute boundary after t.
func nextMinute(t time.Time) time.Time { return t.Truncate(time.Minute).Add(time.Minute) }

// stepTo sets the clock to t once the controller has armed its requeue.
func (c *cluster) stepTo(t time.Time) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.Ctx, patience)
	defer cancel()
	if err := c.clock.BlockUntilWaiters(ctx, 1); err != nil {
		c.t.Fatalf("the controller armed no requeue: %v", err)
	}
	c.clock.SetTime(t)
}

func (c *cluster) cronJob(name string) *batchv1.CronJob {
	cj, _ := c.cjs.Store().GetByName("default", name)
	return cj
}

// jobsOf lists the Jobs CronJob name controls, by name.
func (c *cluster) jobsOf(name string) []*batchv1.Job {
	cj := c.cronJob(name)
	var out []*batchv1.Job
	for _, j := range c.jobs.Store().ByNamespace("default") {
		if controllerutil.ControllerOf(j.GetMetadata()).GetUid() == cj.GetMetadata().GetUid() {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b *batchv1.Job) int {
		return strings.Compare(a.GetMetadata().GetName(), b.GetMetadata().GetName())
	})
	return out
}

func jobNames(jobs []*batchv1.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.GetMetadata().GetName())
	}
	return out
}

func runName(name string, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", name, scheduled.Unix()/60)
}

// awaitRuns waits until CronJob name's Jobs are the runs at times, those
// at active listed in status.active, and lastScheduleTime is last.
func (c *cluster) awaitRuns(name string, times, active []time.Time, last time.Time) {
	c.t.Helper()
	var want, wantActive []string
	for _, t := range times {
		want = append(want, runName(name, t))
	}
	for _, t := range active {
		wantActive = append(wantActive, runName(name, t))
	}
	slices.Sort(want)
	c.Await(patience, fmt.Sprintf("%s: jobs %v, active %v", name, want, wantActive), func() (bool, string) {
		if got := jobNames(c.jobsOf(name)); !slices.Equal(got, want) {
			return false, managertest.Explain("jobs %v", got)
		}
		st := c.cronJob(name).GetStatus()
		var gotActive []string
		for _, r := range st.GetActive() {
			gotActive = append(gotActive, r.GetName())
		}
		if !slices.Equal(gotActive, wantActive) {
			return false, managertest.Explain("status.active %v", gotActive)
		}
		if !st.GetLastScheduleTime().AsTime().Equal(last) {
			return false, managertest.Explain("lastScheduleTime %v, want %v", st.GetLastScheduleTime().AsTime(), last)
		}
		return true, ""
	})
}

// skewSamples is the sample count of the creation skew histogram.
func (c *cluster) skewSamples() uint64 {
	mfs, err := c.Registry.Gather()
	if err != nil {
		c.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "cronjob_controller_job_creation_skew_duration_seconds" {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}

// finish marks Job name finished (cond Complete or Failed) as the Job
// controller would, started at start and completed at done.
func (c *cluster) finish(name, cond string, start, done time.Time) {
	c.t.Helper()
	jobs := client.Jobs(c.Conn)
	err := client.RetryOnConflict(c.Ctx, client.DefaultRetry, func() error {
		j, err := jobs.Get(c.Ctx, "default", name)
		if err != nil {
			return err
		}
		j.Status = &batchv1.JobStatus{
			StartTime: timestamppb.New(start),
			Conditions: []*batchv1.JobCondition{
				{Type: cond, Status: "True", LastProbeTime: timestamppb.New(done), LastTransitionTime: timestamppb.New(done)},
			},
		}
		if cond == "Complete" {
			j.Status.Succeeded = 1
			j.Status.CompletionTime = timestamppb.New(done)
			j.Status.Conditions = append([]*batchv1.JobCondition{{Type: "SuccessCriteriaMet", Status: "True", LastProbeTime: timestamppb.New(done), LastTransitionTime: timestamppb.New(done)}}, j.Status.Conditions...)
		} else {
			j.Status.Failed = 1
			j.Status.Conditions = append([]*batchv1.JobCondition{{Type: "FailureTarget", Status: "True", LastProbeTime: timestamppb.New(done), LastTransitionTime: timestamppb.New(done)}}, j.Status.Conditions...)
		}
		_, err = jobs.UpdateStatus(c.Ctx, j)
		return err
	})
	if err != nil {
		c.t.Fatalf("finish job %s: %v", name, err)
	}
}

// awaitEvent waits for an event about CronJob name with reason whose
// message contains message.
func (c *cluster) awaitEvent(name, reason, message string) {
	c.t.Helper()
	c.Await(patience, fmt.Sprintf("event %s %q", reason, message), func() (bool, string) {
		var seen []string
		for _, e := range c.events(name) {
			if e.GetReason() == reason && strings.Contains(e.GetMessage(), message) {
				return true, ""
			}
			seen = append(seen, e.GetReason()+": "+e.GetMessage())
		}
		return false, managertest.Explain("events %q", seen)
	})
}

func (c *cluster) noEvent(name, reason string) {
	c.t.Helper()
	for _, e := range c.events(name) {
		if e.GetReason() == reason {
			c.t.Errorf("unexpected event %s: %s", reason, e.GetMessage())
		}
	}
}

// events lists the events about CronJob name.
func (c *cluster) events(name string) []*corev1.Event {
	c.t.Helper()
	l, err := client.Events(c.Conn).List(c.Ctx, &metav1.ListOptions{Namespace: "default", FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		c.t.Fatalf("list events: %v", err)
	}
	return l.GetItems()
}

// TestScheduleRunsJobs: a CronJob every minute runs a Job at each minute
// the clock reaches, named and annotated as Kubernetes', and follows them
// in its status until they finish.
func TestScheduleRunsJobs(t *testing.T) {
	c := start(t)
	cj := c.create("tick", "*/1 * * * *", nil)
	b1 := nextMinute(cj.GetMetadata().GetCreationTimestamp().AsTime())
	b2, b3 := b1.Add(time.Minute), b1.Add(2*time.Minute)

	c.stepTo(b1.Add(time.Second))
	c.awaitRuns("tick", []time.Time{b1}, []time.Time{b1}, b1)
	c.stepTo(b2.Add(time.Second))
	c.awaitRuns("tick", []time.Time{b1, b2}, []time.Time{b1, b2}, b2)
	c.stepTo(b3.Add(time.Second))
	c.awaitRuns("tick", []time.Time{b1, b2, b3}, []time.Time{b1, b2, b3}, b3)

	j := c.jobsOf("tick")[0]
	m := j.GetMetadata()
	if got, want := m.GetAnnotations()[cronjob.ScheduledTimestampAnnotation], b1.UTC().Format(time.RFC3339); got != want {
		t.Errorf("scheduled timestamp %q, want %q", got, want)
	}
	ref := controllerutil.ControllerOf(m)
	if ref.GetKind() != "CronJob" || ref.GetName() != "tick" || ref.GetUid() != cj.GetMetadata().GetUid() || !ref.GetBlockOwnerDeletion() {
		t.Errorf("controller reference %v", ref)
	}
	if m.GetLabels()["app"] != "tick" {
		t.Errorf("labels %v, want the template's", m.GetLabels())
	}
	c.awaitEvent("tick", "SuccessfulCreate", "Created job "+runName("tick", b1))

	// The first run succeeds, the second fails.
	c.finish(runName("tick", b1), "Complete", b1, b1.Add(20*time.Second))
	c.finish(runName("tick", b2), "Failed", b2, b2.Add(20*time.Second))
	c.awaitRuns("tick", []time.Time{b1, b2, b3}, []time.Time{b3}, b3)
	c.awaitEvent("tick", "SawCompletedJob", "Saw completed job: "+runName("tick", b1)+", status: Complete")
	c.awaitEvent("tick", "SawCompletedJob", "Saw completed job: "+runName("tick", b2)+", status: Failed")
	c.Await(patience, "lastSuccessfulTime", func() (bool, string) {
		got := c.cronJob("tick").GetStatus().GetLastSuccessfulTime()
		return got.AsTime().Equal(b1.Add(20 * time.Second)), managertest.Explain("lastSuccessfulTime %v", got)
	})
	if got := c.skewSamples(); got != 3 {
		t.Errorf("cronjob_controller_job_creation_skew_duration_seconds has %d samples, want 3 (one per Job)", got)
	}
}

// TestForbidSkipsWhileRunning: with Forbid, a schedule time that comes
// while a Job runs is not started then; once the Job finishes, the missed
// time runs late (no startingDeadlineSeconds), as in Kubernetes.
func TestForbidSkipsWhileRunning(t *testing.T) {
	c := start(t)
	cj := c.create("solo", "*/1 * * * *", func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Forbid" })
	b1 := nextMinute(cj.GetMetadata().GetCreationTimestamp().AsTime())
	b2 := b1.Add(time.Minute)

	c.stepTo(b1.Add(time.Second))
	c.awaitRuns("solo", []time.Time{b1}, []time.Time{b1}, b1)
	c.stepTo(b2.Add(time.Second))
	c.awaitEvent("solo", "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
	if got := jobNames(c.jobsOf("solo")); len(got) != 1 {
		t.Fatalf("jobs %v while one runs under Forbid", got)
	}

	c.finish(runName("solo", b1), "Complete", b1, b2.Add(10*time.Second))
	c.awaitRuns("solo", []time.Time{b1, b2}, []time.Time{b2}, b2)
}

// TestReplaceDeletesRunning: with Replace, the next schedule time deletes
// the running Job and starts a new one.
func TestReplaceDeletesRunning(t *testing.T) {
	c := start(t)
	cj := c.create("fresh", "*/1 * * * *", func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Replace" })
	b1 := nextMinute(cj.GetMetadata().GetCreationTimestamp().AsTime())
	b2 := b1.Add(time.Minute)

	c.stepTo(b1.Add(time.Second))
	c.awaitRuns("fresh", []time.Time{b1}, []time.Time{b1}, b1)
	c.stepTo(b2.Add(time.Second))
	c.awaitRuns("fresh", []time.Time{b2}, []time.Time{b2}, b2)
	c.awaitEvent("fresh", "SuccessfulDelete", "Deleted job "+runName("fresh", b1))
}

// TestOutage: the controller (its clock) jumps three hours ahead, 180
// minutes of an every-minute schedule missed. Without a starting deadline
// Kubernetes warns TooManyMissedTimes and starts one Job, for the most
// recent time; with startingDeadlineSeconds 200 it looks back only 200
// seconds, so it starts that one Job without a warning.
func TestOutage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sds     *int64
		warning bool
	}{
		{"no starting deadline", nil, true},
		{"starting deadline 200s", proto.Int64(200), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t)
			cj := c.create("nightly", "*/1 * * * *", func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = tc.sds })
			b1 := nextMinute(cj.GetMetadata().GetCreationTimestamp().AsTime())
			c.stepTo(b1.Add(time.Second))
			c.awaitRuns("nightly", []time.Time{b1}, []time.Time{b1}, b1)
			c.finish(runName("nightly", b1), "Complete", b1, b1.Add(5*time.Second))
			c.awaitRuns("nightly", []time.Time{b1}, nil, b1)

			back := b1.Add(3 * time.Hour)
			c.stepTo(back.Add(30 * time.Second))
			c.awaitRuns("nightly", []time.Time{b1, back}, []time.Time{back}, back)
			if tc.warning {
				c.awaitEvent("nightly", "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
			} else {
				c.noEvent("nightly", "TooManyMissedTimes")
			}
		})
	}
}

// TestHistoryLimits: finished Jobs beyond the limits are deleted, the
// oldest first.
func TestHistoryLimits(t *testing.T) {
	c := start(t)
	cj := c.create("keep", "*/1 * * * *", func(cj *batchv1.CronJob) {
		cj.Spec.SuccessfulJobsHistoryLimit = proto.Int32(1)
		cj.Spec.FailedJobsHistoryLimit = proto.Int32(0)
	})
	b1 := nextMinute(cj.GetMetadata().GetCreationTimestamp().AsTime())
	b2, b3 := b1.Add(time.Minute), b1.Add(2*time.Minute)
	c.stepTo(b1.Add(time.Second))
	c.awaitRuns("keep", []time.Time{b1}, []time.Time{b1}, b1)
	c.finish(runName("keep", b1), "Complete", b1, b1.Add(time.Second))
	c.stepTo(b2.Add(time.Second))
	c.awaitRuns("keep", []time.Time{b1, b2}, []time.Time{b2}, b2)
	c.finish(runName("keep", b2), "Complete", b2, b2.Add(time.Second))
	// b1 is deleted: one successful Job is kept, the newest.
	c.awaitRuns("keep", []time.Time{b2}, nil, b2)
	c.awaitEvent("keep", "SuccessfulDelete", "Deleted job "+runName("keep", b1))

	c.stepTo(b3.Add(time.Second))
	c.awaitRuns("keep", []time.Time{b2, b3}, []time.Time{b3}, b3)
	c.finish(runName("keep", b3), "Failed", b3, b3.Add(time.Second))
	c.awaitRuns("keep", []time.Time{b2}, nil, b3) // no failed Job kept
}

// TestSuspend: a suspended CronJob runs nothing; resumed, it runs the most
// recent time it missed.
func TestSuspend(t *testing.T) {
	c := start(t)
	cj := c.create("paused", "*/1 * * * *", func(cj *batchv1.CronJob) { cj.Spec.Suspend = proto.Bool(true) })
	syncs := func() float64 { return c.Metric("controller_reconcile_total", "controller", cronjob.Name) }
	c.Await(patience, "first sync", func() (bool, string) { return syncs() >= 1, "" })
	b1 := nextMinute(cj.GetMetadata().GetCreationTimestamp().AsTime())
	b3 := b1.Add(2 * time.Minute)
	c.clock.SetTime(b3.Add(time.Second)) // no requeue is armed while suspended

	before := syncs()
	c.update("paused", func(cj *batchv1.CronJob) { cj.Metadata.Labels = map[string]string{"touched": "yes"} })
	c.Await(patience, "a sync after the change", func() (bool, string) { return syncs() > before, "" })
	if got := jobNames(c.jobsOf("paused")); len(got) != 0 {
		t.Fatalf("jobs %v of a suspended CronJob", got)
	}

	c.update("paused", func(cj *batchv1.CronJob) { cj.Spec.Suspend = proto.Bool(false) })
	c.awaitRuns("paused", []time.Time{b3}, []time.Time{b3}, b3)
}

// TestUnexpectedJob: a running Job the CronJob controls but did not create
// (skiffctl create job --from=cronjob/...) is reported, not adopted into
// status.active.
func TestUnexpectedJob(t *testing.T) {
	c := start(t)
	cj := c.create("report", "0 0 1 1 *", nil)
	_, err := client.Jobs(c.Conn).Create(c.Ctx, &batchv1.Job{
		Metadata: &metav1.ObjectMeta{
			Name: "report-manual", Namespace: "default",
			Annotations: map[string]string{"cronjob.kubernetes.io/instantiate": "manual"},
			OwnerReferences: []*metav1.OwnerReference{{
				ApiVersion: "batch/v1", Kind: "CronJob", Name: "report", Uid: cj.GetMetadata().GetUid(), Controller: proto.Bool(true),
			}},
		},
		Spec: proto.Clone(cj.GetSpec().GetJobTemplate().GetSpec()).(*batchv1.JobSpec),
	})
	if err != nil {
		t.Fatal(err)
	}
	c.awaitEvent("report", "UnexpectedJob", "Saw a job that the controller did not create or forgot: report-manual")
	if a := c.cronJob("report").GetStatus().GetActive(); len(a) != 0 {
		t.Errorf("status.active %v", a)
	}
}
