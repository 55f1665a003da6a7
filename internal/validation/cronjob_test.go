package validation_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/defaults"
	"skiff.dev/internal/validation"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// backupCronJob is a defaulted, valid CronJob "default/backup" running
// every five minutes.
func backupCronJob() *batchv1.CronJob {
	cj := &batchv1.CronJob{
		Metadata: &metav1.ObjectMeta{Name: "backup", Namespace: "default"},
		Spec: &batchv1.CronJobSpec{
			Schedule: "*/5 * * * *",
			JobTemplate: &batchv1.JobTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "backup"}},
				Spec: &batchv1.JobSpec{Template: &corev1.PodTemplateSpec{
					Spec: &corev1.PodSpec{
						RestartPolicy: "OnFailure",
						Containers:    []*corev1.Container{{Name: "backup", Image: "busybox:1.36", Command: []string{"true"}}},
					},
				}},
			},
		},
	}
	defaults.CronJob(cj)
	return cj
}

func TestCronJobValid(t *testing.T) {
	cj := backupCronJob()
	before := proto.Clone(cj)
	expectErrors(t, validation.CronJob(cj), nil)
	unchanged(t, before, cj)
}

func TestCronJobRules(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(cj *batchv1.CronJob)
		want   []string
	}{
		{"name of 52 characters", func(cj *batchv1.CronJob) { cj.Metadata.Name = strings.Repeat("a", 52) }, nil},
		{"name of 53 characters", func(cj *batchv1.CronJob) { cj.Metadata.Name = strings.Repeat("a", 53) }, []string{"metadata.name: Invalid value"}},
		{"name not a DNS subdomain", func(cj *batchv1.CronJob) { cj.Metadata.Name = "Backup" }, []string{"metadata.name: Invalid value"}},
		{"schedule missing", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "" }, []string{"spec.schedule: Required value"}},
		{"schedule descriptor", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@hourly" }, nil},
		{"schedule @every", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@every 1h30m" }, nil},
		{"schedule names", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "0 9 * JAN-MAR MON-FRI" }, nil},
		{"schedule with seconds", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "0 */5 * * * *" }, []string{"spec.schedule: Invalid value"}},
		{"schedule garbage", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "every day" }, []string{"spec.schedule: Invalid value"}},
		{"schedule minute out of range", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "60 * * * *" }, []string{"spec.schedule: Invalid value"}},
		{"schedule unknown descriptor", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@fortnightly" }, []string{"spec.schedule: Invalid value"}},
		{"schedule with TZ", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC */5 * * * *" }, []string{"spec.schedule: Invalid value"}},
		{"schedule with CRON_TZ", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "CRON_TZ=Europe/Paris 0 9 * * *" }, []string{"spec.schedule: Invalid value"}},
		{"timeZone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("Europe/Paris") }, nil},
		{"timeZone legacy", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("Etc/GMT+5") }, nil},
		{"timeZone empty", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("") }, []string{"spec.timeZone: Invalid value"}},
		{"timeZone unknown", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("Mars/Olympus_Mons") }, []string{"spec.timeZone: Invalid value"}},
		{"timeZone path", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("../etc/passwd") }, []string{"spec.timeZone: Invalid value"}},
		{"timeZone Local", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("Local") }, []string{"spec.timeZone: Invalid value"}},
		{"startingDeadlineSeconds negative", func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr[int64](-1) },
			[]string{"spec.startingDeadlineSeconds: Invalid value"}},
		{"startingDeadlineSeconds zero", func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr[int64](0) }, nil},
		{"concurrencyPolicy Forbid", func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Forbid" }, nil},
		{"concurrencyPolicy Replace", func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Replace" }, nil},
		{"concurrencyPolicy missing", func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "" }, []string{"spec.concurrencyPolicy: Required value"}},
		{"concurrencyPolicy unknown", func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Queue" }, []string{"spec.concurrencyPolicy: Unsupported value"}},
		{"successfulJobsHistoryLimit negative", func(cj *batchv1.CronJob) { cj.Spec.SuccessfulJobsHistoryLimit = ptr[int32](-1) },
			[]string{"spec.successfulJobsHistoryLimit: Invalid value"}},
		{"failedJobsHistoryLimit negative", func(cj *batchv1.CronJob) { cj.Spec.FailedJobsHistoryLimit = ptr[int32](-1) },
			[]string{"spec.failedJobsHistoryLimit: Invalid value"}},
		{"history limits zero", func(cj *batchv1.CronJob) {
			cj.Spec.SuccessfulJobsHistoryLimit, cj.Spec.FailedJobsHistoryLimit = ptr[int32](0), ptr[int32](0)
		}, nil},
		{"jobTemplate selector", func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "backup"}}
		}, []string{"spec.jobTemplate.spec.selector: Invalid value"}},
		{"jobTemplate manualSelector", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.ManualSelector = ptr(true) },
			[]string{"spec.jobTemplate.spec.manualSelector: Unsupported value"}},
		{"jobTemplate manualSelector false", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.ManualSelector = ptr(false) }, nil},
		{"jobTemplate restartPolicy Always", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = "Always" },
			[]string{"spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value"}},
		{"jobTemplate restartPolicy Never", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = "Never" }, nil},
		{"jobTemplate pod template missing", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.Template = nil },
			[]string{"spec.jobTemplate.spec.template: Required value"}},
		{"jobTemplate container without image", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image = "" },
			[]string{"spec.jobTemplate.spec.template.spec.containers[0].image: Required value"}},
		{"jobTemplate parallelism negative", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.Parallelism = ptr[int32](-1) },
			[]string{"spec.jobTemplate.spec.parallelism: Invalid value"}},
		{"jobTemplate completionMode unknown", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.CompletionMode = "Sometimes" },
			[]string{"spec.jobTemplate.spec.completionMode: Unsupported value"}},
		{"jobTemplate Indexed without completions", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.CompletionMode = "Indexed" },
			[]string{"spec.jobTemplate.spec.completions: Required value"}},
		{"jobTemplate label invalid", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Metadata.Labels["-x"] = "y" },
			[]string{"spec.jobTemplate.metadata.labels[-x]: Invalid value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cj := backupCronJob()
			c.mutate(cj)
			expectErrors(t, validation.CronJob(cj), c.want)
		})
	}
}

// TestCronJobMessages pins Kubernetes' words where users see them.
func TestCronJobMessages(t *testing.T) {
	cj := backupCronJob()
	cj.Metadata.Name = strings.Repeat("a", 53)
	expectDetail(t, validation.CronJob(cj), "metadata.name", "must be no more than 52 characters")

	cj = backupCronJob()
	cj.Spec.Schedule = "TZ=UTC */5 * * * *"
	expectDetail(t, validation.CronJob(cj), "spec.schedule", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")

	cj = backupCronJob()
	cj.Spec.Schedule = "* * * *"
	expectDetail(t, validation.CronJob(cj), "spec.schedule", "expected exactly 5 fields, found 4: [* * * *]")

	cj = backupCronJob()
	cj.Spec.TimeZone = ptr("Mars/Olympus_Mons")
	expectDetail(t, validation.CronJob(cj), "spec.timeZone", "unknown time zone Mars/Olympus_Mons")

	cj = backupCronJob()
	cj.Spec.TimeZone = ptr("a/../b")
	expectDetail(t, validation.CronJob(cj), "spec.timeZone", "unknown time zone a/../b")
}

func TestCronJobUpdate(t *testing.T) {
	cases := []struct {
		name        string
		old, mutate func(cj *batchv1.CronJob)
		want        []string
	}{
		{"schedule changed", nil, func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@daily" }, nil},
		{"long name kept", func(cj *batchv1.CronJob) { cj.Metadata.Name = strings.Repeat("a", 60) },
			func(cj *batchv1.CronJob) { cj.Spec.Suspend = ptr(true) }, nil},
		{"TZ added", nil, func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC 0 * * * *" }, []string{"spec.schedule: Invalid value"}},
		{"TZ kept", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC 0 * * * *" },
			func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC 30 * * * *" }, nil},
		{"TZ kept with timeZone", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC 0 * * * *" },
			func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("UTC") }, []string{"spec.schedule: Invalid value"}},
		{"namespace changed", nil, func(cj *batchv1.CronJob) { cj.Metadata.Namespace = "other" }, []string{"metadata.namespace: Invalid value"}},
		{"concurrencyPolicy unknown", nil, func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Queue" },
			[]string{"spec.concurrencyPolicy: Unsupported value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := backupCronJob()
			old.Metadata.ResourceVersion = "7"
			if c.old != nil {
				c.old(old)
			}
			cur := proto.Clone(old).(*batchv1.CronJob)
			c.mutate(cur)
			expectErrors(t, validation.CronJobUpdate(cur, old), c.want)
		})
	}
}

func TestParseScheduleNext(t *testing.T) {
	s, err := validation.ParseSchedule("@hourly")
	if err != nil {
		t.Fatal(err)
	}
	start := mustTime(t, "2026-11-26T07:20:00Z")
	if got, want := s.Next(start), mustTime(t, "2026-11-26T08:00:00Z"); !got.Equal(want) {
		t.Fatalf("@hourly after %v: %v, want %v", start, got, want)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
