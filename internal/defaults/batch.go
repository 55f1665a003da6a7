package defaults

import (
	"math"

	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// The labels of a Job's pods that tie them to it, as Kubernetes' apiserver
// generates them (and the legacy, unprefixed ones it still writes).
const (
	JobControllerUIDLabel       = "batch.kubernetes.io/controller-uid"
	JobNameLabel                = "batch.kubernetes.io/job-name"
	LegacyJobControllerUIDLabel = "controller-uid"
	LegacyJobNameLabel          = "job-name"
)

// Job defaults a batch/v1 Job: its spec (see JobSpec), then what
// GenerateJobSelector adds. A Job to be named from metadata.generateName
// (a uid, no name yet) gets the selector and labels later: the apiserver
// calls GenerateJobSelector again once it has chosen the name.
func Job(j *batchv1.Job) {
	if j == nil {
		return
	}
	if j.Spec == nil {
		j.Spec = &batchv1.JobSpec{}
	}
	JobSpec(j.Spec)
	GenerateJobSelector(j)
}

// GenerateJobSelector is the part of a Job's defaults that needs its name
// and uid, Kubernetes' job strategy's generateSelector (its
// PrepareForCreate, which runs after the store generated the name): unless
// spec.manualSelector is true, the selector and template labels
// (batch.kubernetes.io/controller-uid and job-name, and the legacy
// controller-uid and job-name). Skiff's apiserver sets metadata.uid before
// it calls defaults; an object without a uid (skiffctl's client-side
// check) gets none. Then metadata.labels from the template's labels when
// it has none (Kubernetes' defaulting, which shares the template's labels,
// so that a Job's labels show the generated ones too). A Job without a
// name yet (its name will be generated) is left as it is.
func GenerateJobSelector(j *batchv1.Job) {
	if j == nil || j.Spec == nil {
		return
	}
	generate := !j.Spec.GetManualSelector() && j.Metadata.GetUid() != ""
	if generate && j.Metadata.GetName() == "" {
		return // until the name is chosen
	}
	if generate {
		generateJobSelector(j.Metadata, j.Spec)
	}
	j.Metadata = labelsFromTemplate(j.Metadata, j.Spec.Template)
}

// JobSpec defaults a Job's spec (also a CronJob's spec.jobTemplate.spec):
// completions and parallelism 1 when both are unset (parallelism 1 when
// only it is), backoffLimit 6 (MaxInt32 with backoffLimitPerIndex),
// completionMode NonIndexed, suspend and manualSelector false, a pod
// failure policy's onPodConditions status True, podReplacementPolicy
// TerminatingOrFailed (Failed with a podFailurePolicy), and the template's
// pod spec (restartPolicy is left for the client: Always, the pod default,
// is refused by validation, as in Kubernetes).
func JobSpec(s *batchv1.JobSpec) {
	if s == nil {
		return
	}
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = ptr[int32](1)
		s.Parallelism = ptr[int32](1)
	}
	if s.Parallelism == nil {
		s.Parallelism = ptr[int32](1)
	}
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = ptr[int32](math.MaxInt32)
		} else {
			s.BackoffLimit = ptr[int32](6)
		}
	}
	s.Template = podTemplate(s.Template)
	if s.CompletionMode == "" {
		s.CompletionMode = "NonIndexed"
	}
	if s.Suspend == nil {
		s.Suspend = ptr(false)
	}
	for _, r := range s.GetPodFailurePolicy().GetRules() {
		for _, pat := range r.GetOnPodConditions() {
			if pat != nil && pat.Status == "" {
				pat.Status = "True"
			}
		}
	}
	if s.PodReplacementPolicy == "" {
		if s.PodFailurePolicy != nil {
			s.PodReplacementPolicy = "Failed"
		} else {
			s.PodReplacementPolicy = "TerminatingOrFailed"
		}
	}
	if s.ManualSelector == nil {
		s.ManualSelector = ptr(false)
	}
}

// generateJobSelector adds the job-name and controller-uid labels the
// template lacks (a conflicting value the user set is left for validation
// to refuse) and selects batch.kubernetes.io/controller-uid, as
// Kubernetes' job strategy's generateSelector.
func generateJobSelector(m *metav1.ObjectMeta, s *batchv1.JobSpec) {
	if s.Template == nil {
		s.Template = &corev1.PodTemplateSpec{}
	}
	t := s.Template
	if t.Metadata == nil {
		t.Metadata = &metav1.ObjectMeta{}
	}
	if t.Metadata.Labels == nil {
		t.Metadata.Labels = map[string]string{}
	}
	for k, v := range map[string]string{
		LegacyJobNameLabel: m.GetName(), JobNameLabel: m.GetName(),
		LegacyJobControllerUIDLabel: m.GetUid(), JobControllerUIDLabel: m.GetUid(),
	} {
		if _, ok := t.Metadata.Labels[k]; !ok {
			t.Metadata.Labels[k] = v
		}
	}
	if s.Selector == nil {
		s.Selector = &metav1.LabelSelector{}
	}
	if s.Selector.MatchLabels == nil {
		s.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := s.Selector.MatchLabels[JobControllerUIDLabel]; !ok {
		s.Selector.MatchLabels[JobControllerUIDLabel] = m.GetUid()
	}
}
