package defaults

import (
	batchv1 "skiff.dev/proto/batch/v1"
)

// CronJob defaults a batch/v1 CronJob as Kubernetes' SetDefaults_CronJob
// does: concurrencyPolicy Allow, suspend false, successfulJobsHistoryLimit
// 3, failedJobsHistoryLimit 1; and the pod spec of its job template (see
// PodSpec; restartPolicy defaults to Always there, which Job validation
// then refuses, as in Kubernetes).
//
// The job template's own Job fields (parallelism, completions,
// backoffLimit...) are left unset: Kubernetes defaults them on the Job the
// controller creates from the template, not in the template, so a
// CronJob reads back as it was written.
func CronJob(cj *batchv1.CronJob) {
	if cj == nil {
		return
	}
	if cj.Spec == nil {
		cj.Spec = &batchv1.CronJobSpec{}
	}
	s := cj.Spec
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = "Allow"
	}
	if s.Suspend == nil {
		s.Suspend = ptr(false)
	}
	if s.SuccessfulJobsHistoryLimit == nil {
		s.SuccessfulJobsHistoryLimit = ptr[int32](3)
	}
	if s.FailedJobsHistoryLimit == nil {
		s.FailedJobsHistoryLimit = ptr[int32](1)
	}
	if s.JobTemplate == nil {
		s.JobTemplate = &batchv1.JobTemplateSpec{}
	}
	if s.JobTemplate.Spec == nil {
		s.JobTemplate.Spec = &batchv1.JobSpec{}
	}
	s.JobTemplate.Spec.Template = podTemplate(s.JobTemplate.Spec.Template)
}
