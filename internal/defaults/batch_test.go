package defaults_test

import (
	"math"
	"testing"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/defaults"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func piJob() *batchv1.Job {
	return &batchv1.Job{
		Metadata: &metav1.ObjectMeta{Name: "pi", Namespace: "default", Uid: "u-1"},
		Spec: &batchv1.JobSpec{Template: &corev1.PodTemplateSpec{
			Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "pi"}},
			Spec: &corev1.PodSpec{RestartPolicy: "Never",
				Containers: []*corev1.Container{{Name: "pi", Image: "perl"}}},
		}},
	}
}

func TestJobDefaults(t *testing.T) {
	j := piJob()
	defaults.Job(j)
	s := j.Spec
	if s.GetCompletions() != 1 || s.GetParallelism() != 1 || s.GetBackoffLimit() != 6 {
		t.Errorf("completions %v parallelism %v backoffLimit %v, want 1 1 6", s.Completions, s.Parallelism, s.BackoffLimit)
	}
	if s.CompletionMode != "NonIndexed" || s.Suspend == nil || *s.Suspend || s.ManualSelector == nil || *s.ManualSelector || s.PodReplacementPolicy != "TerminatingOrFailed" {
		t.Errorf("mode %q suspend %v manualSelector %v replacement %q", s.CompletionMode, s.Suspend, s.ManualSelector, s.PodReplacementPolicy)
	}
	want := map[string]string{"app": "pi", "batch.kubernetes.io/controller-uid": "u-1", "batch.kubernetes.io/job-name": "pi", "controller-uid": "u-1", "job-name": "pi"}
	if got := s.Template.Metadata.Labels; !mapsEqual(got, want) {
		t.Errorf("template labels %v, want %v", got, want)
	}
	if got := s.Selector.GetMatchLabels(); len(got) != 1 || got["batch.kubernetes.io/controller-uid"] != "u-1" {
		t.Errorf("selector %v", got)
	}
	if !mapsEqual(j.Metadata.Labels, want) {
		t.Errorf("metadata labels %v, want the template's", j.Metadata.Labels)
	}
	again := proto.Clone(j).(*batchv1.Job)
	defaults.Job(again)
	if !proto.Equal(again, j) {
		t.Error("defaulting twice changed the Job")
	}
}

func TestJobDefaultsCases(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*batchv1.Job)
		check func(*testing.T, *batchv1.Job)
	}{
		{"only parallelism: completions stay unset", func(j *batchv1.Job) { j.Spec.Parallelism = ptr[int32](3) }, func(t *testing.T, j *batchv1.Job) {
			if j.Spec.Completions != nil || j.Spec.GetParallelism() != 3 {
				t.Errorf("completions %v parallelism %v", j.Spec.Completions, j.Spec.Parallelism)
			}
		}},
		{"only completions: parallelism 1", func(j *batchv1.Job) { j.Spec.Completions = ptr[int32](5) }, func(t *testing.T, j *batchv1.Job) {
			if j.Spec.GetCompletions() != 5 || j.Spec.GetParallelism() != 1 {
				t.Errorf("completions %v parallelism %v", j.Spec.Completions, j.Spec.Parallelism)
			}
		}},
		{"backoffLimitPerIndex: backoffLimit MaxInt32", func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr[int32](1) }, func(t *testing.T, j *batchv1.Job) {
			if j.Spec.GetBackoffLimit() != math.MaxInt32 {
				t.Errorf("backoffLimit %v", j.Spec.GetBackoffLimit())
			}
		}},
		{"podFailurePolicy: replacement Failed, condition status True", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []*batchv1.PodFailurePolicyRule{{Action: "Ignore",
				OnPodConditions: []*batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: "DisruptionTarget"}}}}}
		}, func(t *testing.T, j *batchv1.Job) {
			if j.Spec.PodReplacementPolicy != "Failed" || j.Spec.PodFailurePolicy.Rules[0].OnPodConditions[0].Status != "True" {
				t.Errorf("replacement %q status %q", j.Spec.PodReplacementPolicy, j.Spec.PodFailurePolicy.Rules[0].OnPodConditions[0].Status)
			}
		}},
		{"manual selector: nothing generated", func(j *batchv1.Job) {
			j.Spec.ManualSelector = ptr(true)
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
		}, func(t *testing.T, j *batchv1.Job) {
			if len(j.Spec.Template.Metadata.Labels) != 1 || len(j.Spec.Selector.MatchLabels) != 1 {
				t.Errorf("labels %v selector %v", j.Spec.Template.Metadata.Labels, j.Spec.Selector)
			}
		}},
		{"no uid (a client's check): nothing generated", func(j *batchv1.Job) { j.Metadata.Uid = "" }, func(t *testing.T, j *batchv1.Job) {
			if j.Spec.Selector != nil || len(j.Spec.Template.Metadata.Labels) != 1 {
				t.Errorf("labels %v selector %v", j.Spec.Template.Metadata.Labels, j.Spec.Selector)
			}
		}},
		{"user's conflicting label kept for validation", func(j *batchv1.Job) { j.Spec.Template.Metadata.Labels["job-name"] = "other" }, func(t *testing.T, j *batchv1.Job) {
			if j.Spec.Template.Metadata.Labels["job-name"] != "other" {
				t.Errorf("labels %v", j.Spec.Template.Metadata.Labels)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := piJob()
			c.edit(j)
			defaults.Job(j)
			c.check(t, j)
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
