package defaults_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/defaults"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestCronJobDefaults(t *testing.T) {
	cj := &batchv1.CronJob{
		Metadata: &metav1.ObjectMeta{Name: "backup", Namespace: "default"},
		Spec: &batchv1.CronJobSpec{
			Schedule: "@hourly",
			JobTemplate: &batchv1.JobTemplateSpec{Spec: &batchv1.JobSpec{Template: &corev1.PodTemplateSpec{
				Spec: &corev1.PodSpec{RestartPolicy: "OnFailure", Containers: []*corev1.Container{{Name: "c", Image: "busybox"}}},
			}}},
		},
	}
	defaults.CronJob(cj)
	s := cj.Spec
	js := s.JobTemplate.Spec
	checks := []struct {
		name      string
		got, want any
	}{
		{"concurrencyPolicy", s.ConcurrencyPolicy, "Allow"},
		{"suspend", s.Suspend != nil && !*s.Suspend, true},
		{"successfulJobsHistoryLimit", s.GetSuccessfulJobsHistoryLimit(), int32(3)},
		{"failedJobsHistoryLimit", s.GetFailedJobsHistoryLimit(), int32(1)},
		{"startingDeadlineSeconds unset", s.StartingDeadlineSeconds == nil, true},
		{"timeZone unset", s.TimeZone == nil, true},
		{"template restartPolicy kept", js.Template.Spec.RestartPolicy, "OnFailure"},
		{"template dnsPolicy", js.Template.Spec.DnsPolicy, "ClusterFirst"},
		{"template imagePullPolicy", js.Template.Spec.Containers[0].ImagePullPolicy, "Always"},
		// The Job's own defaults are the created Job's, not the template's.
		{"job backoffLimit unset", js.BackoffLimit == nil, true},
		{"job completions unset", js.Completions == nil, true},
		{"job parallelism unset", js.Parallelism == nil, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	again := proto.Clone(cj).(*batchv1.CronJob)
	defaults.CronJob(again)
	if !proto.Equal(again, cj) {
		t.Error("defaulting a defaulted CronJob changed it")
	}
}

func TestCronJobDefaultsKeepUserValues(t *testing.T) {
	cj := &batchv1.CronJob{Spec: &batchv1.CronJobSpec{
		ConcurrencyPolicy:          "Forbid",
		Suspend:                    ptr(true),
		SuccessfulJobsHistoryLimit: ptr[int32](0),
		FailedJobsHistoryLimit:     ptr[int32](5),
	}}
	defaults.CronJob(cj)
	s := cj.Spec
	if s.ConcurrencyPolicy != "Forbid" || !s.GetSuspend() || s.GetSuccessfulJobsHistoryLimit() != 0 || s.GetFailedJobsHistoryLimit() != 5 {
		t.Errorf("user values overwritten: %v", s)
	}
	if s.GetJobTemplate().GetSpec().GetTemplate().GetSpec() == nil {
		t.Error("job template's pod spec not created")
	}
	defaults.CronJob(nil)
	defaults.CronJob(&batchv1.CronJob{})
}
