package describe

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// describeCronJob writes what Describe writes for cj (the line of
// Describe's switch: case *batchv1.CronJob: p.cronJob(o)).
func describeCronJob(cj *batchv1.CronJob, events []*corev1.Event, now time.Time) string {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	p := &out{w: tw, now: now}
	p.cronJob(cj)
	p.events(events)
	tw.Flush()
	return b.String()
}

func TestDescribeCronJob(t *testing.T) {
	now := time.Date(2026, 11, 26, 8, 0, 30, 0, time.UTC)
	cj := &batchv1.CronJob{
		Metadata: &metav1.ObjectMeta{Name: "backup", Namespace: "ops", Labels: map[string]string{"team": "ops"}},
		Spec: &batchv1.CronJobSpec{
			Schedule:                   "*/5 * * * *",
			ConcurrencyPolicy:          "Forbid",
			Suspend:                    proto.Bool(false),
			SuccessfulJobsHistoryLimit: proto.Int32(3),
			FailedJobsHistoryLimit:     proto.Int32(1),
			StartingDeadlineSeconds:    proto.Int64(200),
			JobTemplate: &batchv1.JobTemplateSpec{Spec: &batchv1.JobSpec{
				BackoffLimit: proto.Int32(2),
				Template: &corev1.PodTemplateSpec{
					Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "backup"}},
					Spec: &corev1.PodSpec{RestartPolicy: "OnFailure", Containers: []*corev1.Container{{
						Name: "backup", Image: "busybox:1.36", Command: []string{"sh", "-c", "date"},
					}}},
				},
			}},
		},
		Status: &batchv1.CronJobStatus{
			LastScheduleTime: timestamppb.New(time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)),
			Active: []*corev1.ObjectReference{
				{Kind: "Job", Namespace: "ops", Name: "backup-29927995"},
				{Kind: "Job", Namespace: "ops", Name: "backup-29928000"},
			},
		},
	}
	got := describeCronJob(cj, nil, now)
	want := `Name:                          backup
Namespace:                     ops
Labels:                        team=ops
Annotations:                   <none>
Schedule:                      */5 * * * *
Concurrency Policy:            Forbid
Suspend:                       False
Successful Job History Limit:  3
Failed Job History Limit:      1
Starting Deadline Seconds:     200s
Selector:                      <unset>
Parallelism:                   <unset>
Completions:                   <unset>
Pod Template:
  Labels:  app=backup
  Containers:
`
	if len(got) < len(want) || got[:len(want)] != want {
		t.Fatalf("describe cronjob:\n%s\nwant it to start with:\n%s", got, want)
	}
	hasLines(t, got,
		"Image: busybox:1.36",
		"Last Schedule Time: Thu, 26 Nov 2026 08:00:00 +0000",
		"Active Jobs: backup-29927995, backup-29928000",
		"Events: <none>")
}

// TestDescribeCronJobUnset: a CronJob as a manifest may leave everything
// to the defaults: kubectl's <unset> and <none>.
func TestDescribeCronJobUnset(t *testing.T) {
	cj := &batchv1.CronJob{
		Metadata: &metav1.ObjectMeta{Name: "bare", Namespace: "default"},
		Spec: &batchv1.CronJobSpec{Schedule: "@hourly", JobTemplate: &batchv1.JobTemplateSpec{Spec: &batchv1.JobSpec{
			Parallelism: proto.Int32(2), Completions: proto.Int32(4), ActiveDeadlineSeconds: proto.Int64(60),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
		}}},
	}
	got := describeCronJob(cj, nil, time.Time{})
	hasLines(t, got,
		"Suspend: <unset>",
		"Successful Job History Limit: <unset>",
		"Failed Job History Limit: <unset>",
		"Starting Deadline Seconds: <unset>",
		"Selector: a=b",
		"Parallelism: 2",
		"Completions: 4",
		"Active Deadline Seconds: 60s",
		"Last Schedule Time: <unset>",
		"Active Jobs: <none>")
}

// hasLines fails unless every "Key: value" is a line of out, whatever the
// alignment between key and value.
func hasLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		have[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, l := range lines {
		if !have[l] {
			t.Errorf("no line %q in:\n%s", l, out)
		}
	}
}
