package validation

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/field"
	batchv1 "skiff.dev/proto/batch/v1"
)

// CronJobNameMaxLength is the longest CronJob name: the controller names
// its Jobs <cronjob>-<minutes since the epoch>, an 11-character suffix,
// and a Job's name must fit in a 63-character DNS label.
const CronJobNameMaxLength = 63 - 11

var concurrencyPolicies = []string{"Allow", "Forbid", "Replace"}

// CronJob validates a batch/v1 CronJob being created, as Kubernetes'
// ValidateCronJobCreate: metadata (a DNS subdomain name of at most 52
// characters), a schedule that parses as a standard 5-field cron line or a
// descriptor (@hourly...) with no TZ= or CRON_TZ= prefix, a timeZone
// loadable by time.LoadLocation, the concurrencyPolicy, non-negative
// startingDeadlineSeconds and history limits, and the job template.
func CronJob(cj *batchv1.CronJob) field.ErrorList {
	if cj == nil {
		cj = &batchv1.CronJob{}
	}
	errs := ObjectMeta(cj.Metadata, true, NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, cronJobSpec(cj.Spec, nil, field.NewPath("spec"))...)
	if name := cj.GetMetadata().GetName(); len(name) > CronJobNameMaxLength {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), name, fmt.Sprintf("must be no more than %d characters", CronJobNameMaxLength)))
	}
	return errs
}

// CronJobUpdate validates an update of a CronJob as Kubernetes'
// ValidateCronJobUpdate: immutable metadata, the new metadata and spec as
// on create, except that a schedule which already had a TZ= prefix may
// keep it (without a timeZone), an unchanged timeZone is not checked again,
// and the 52-character name limit is not applied (so that an older, longer
// CronJob can still be changed and deleted).
func CronJobUpdate(newCJ, oldCJ *batchv1.CronJob) field.ErrorList {
	errs := ObjectMetaUpdate(newCJ.GetMetadata(), oldCJ.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, ObjectMeta(newCJ.GetMetadata(), true, NameIsDNSSubdomain, field.NewPath("metadata"))...)
	oldSpec := oldCJ.GetSpec()
	if oldSpec == nil {
		oldSpec = &batchv1.CronJobSpec{}
	}
	return append(errs, cronJobSpec(newCJ.GetSpec(), oldSpec, field.NewPath("spec"))...)
}

// cronJobSpec validates a CronJob's spec; oldSpec is nil on create.
func cronJobSpec(s, oldSpec *batchv1.CronJobSpec, p *field.Path) field.ErrorList {
	if s == nil {
		s = &batchv1.CronJobSpec{}
	}
	var errs field.ErrorList
	sp := p.Child("schedule")
	if s.Schedule == "" {
		errs = append(errs, field.Required(sp, ""))
	} else {
		allowTZ := oldSpec != nil && strings.Contains(oldSpec.Schedule, "TZ")
		errs = append(errs, scheduleFormat(s.Schedule, allowTZ, s.TimeZone, sp)...)
	}
	if v := s.StartingDeadlineSeconds; v != nil {
		errs = append(errs, nonNegative(*v, p.Child("startingDeadlineSeconds"))...)
	}
	if oldSpec == nil || !sameOptional(oldSpec.TimeZone, s.TimeZone) {
		errs = append(errs, timeZone(s.TimeZone, p.Child("timeZone"))...)
	}
	errs = append(errs, supported(s.ConcurrencyPolicy, concurrencyPolicies, p.Child("concurrencyPolicy"))...)
	errs = append(errs, jobTemplateSpec(s.JobTemplate, p.Child("jobTemplate"))...)
	if v := s.SuccessfulJobsHistoryLimit; v != nil {
		errs = append(errs, nonNegative(int64(*v), p.Child("successfulJobsHistoryLimit"))...)
	}
	if v := s.FailedJobsHistoryLimit; v != nil {
		errs = append(errs, nonNegative(int64(*v), p.Child("failedJobsHistoryLimit"))...)
	}
	return errs
}

// ParseSchedule parses a CronJob's schedule as Kubernetes does: robfig/cron's
// standard parser (minute, hour, day of month, month, day of week, or a
// descriptor such as @hourly or @every 5m). The controller uses it too, so
// that what validation accepts is what runs.
func ParseSchedule(schedule string) (cron.Schedule, error) {
	return cron.ParseStandard(schedule)
}

func scheduleFormat(schedule string, allowTZ bool, tz *string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := ParseSchedule(schedule); err != nil {
		errs = append(errs, field.Invalid(p, schedule, err.Error()))
	}
	switch {
	case allowTZ && strings.Contains(schedule, "TZ") && tz != nil:
		errs = append(errs, field.Invalid(p, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !allowTZ && strings.Contains(schedule, "TZ"):
		errs = append(errs, field.Invalid(p, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

// timeZoneComponent is what one /-separated part of an IANA time zone name
// may hold (letters, '.', '-', '_', and the digits and '+' of legacy names
// such as Etc/GMT+5), as Kubernetes checks before loading it.
var timeZoneComponent = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

func timeZone(tz *string, p *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(p, *tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZoneComponent.MatchString(part) {
			return field.ErrorList{field.Invalid(p, *tz, "unknown time zone "+*tz)}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(p, *tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(p, *tz, err.Error()))
	}
	return errs
}

// jobTemplateSpec validates a CronJob's job template as Kubernetes'
// ValidateJobTemplateSpec: its metadata's labels and annotations, its Job
// spec as a Job's, and no selector of its own (the Job controller
// generates one for each Job).
func jobTemplateSpec(t *batchv1.JobTemplateSpec, p *field.Path) field.ErrorList {
	if t == nil {
		t = &batchv1.JobTemplateSpec{}
	}
	mp := p.Child("metadata")
	errs := Labels(t.GetMetadata().GetLabels(), mp.Child("labels"))
	errs = append(errs, annotations(t.GetMetadata().GetAnnotations(), mp.Child("annotations"))...)
	s := t.Spec
	if s == nil {
		s = &batchv1.JobSpec{}
	}
	sp := p.Child("spec")
	errs = append(errs, jobSpecOfTemplate(s, sp)...)
	if s.Selector != nil {
		errs = append(errs, field.Invalid(sp.Child("selector"), selectorString(s.Selector), "`selector` will be auto-generated"))
	}
	if s.GetManualSelector() {
		errs = append(errs, field.NotSupported(sp.Child("manualSelector"), "true", []string{"nil", "false"}))
	}
	return errs
}

func sameOptional[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// jobSpecOfTemplate validates the Job spec of a CronJob's job template as a
// Job's (JobSpec, with the selector left for the Job's creation). A
// selector set in the template is reported once, by jobTemplateSpec, as
// Kubernetes does, not checked against the template's labels as well.
func jobSpecOfTemplate(s *batchv1.JobSpec, p *field.Path) field.ErrorList {
	if s.Selector != nil {
		s = proto.Clone(s).(*batchv1.JobSpec)
		s.Selector = nil
	}
	return JobSpec(s, p, false)
}
