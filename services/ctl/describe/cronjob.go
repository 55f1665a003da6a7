package describe

import (
	"fmt"
	"strings"

	"skiff.dev/internal/printers"
	batchv1 "skiff.dev/proto/batch/v1"
)

// cronJob describes a CronJob as kubectl does: its schedule and policies,
// its job template (selector, parallelism, completions, the pod
// template), the last schedule time and the Jobs running now.
func (p *out) cronJob(cj *batchv1.CronJob) {
	m, s, st := cj.GetMetadata(), cj.GetSpec(), cj.GetStatus()
	p.meta(m, true)
	p.multi(0, "Labels", m.GetLabels(), "=")
	p.multi(0, "Annotations", m.GetAnnotations(), ": ")
	p.kv(0, "Schedule", s.GetSchedule())
	p.kv(0, "Concurrency Policy", s.GetConcurrencyPolicy())
	p.kv(0, "Suspend", printBoolPtr(s.Suspend))
	p.kv(0, "Successful Job History Limit", optionalNumber(s.SuccessfulJobsHistoryLimit, "%d"))
	p.kv(0, "Failed Job History Limit", optionalNumber(s.FailedJobsHistoryLimit, "%d"))
	p.kv(0, "Starting Deadline Seconds", optionalNumber(s.StartingDeadlineSeconds, "%ds"))
	p.jobTemplate(s.GetJobTemplate())
	p.kv(0, "Last Schedule Time", formatTime(st.GetLastScheduleTime()))
	var active []string
	for _, r := range st.GetActive() {
		active = append(active, r.GetName())
	}
	if len(active) == 0 {
		p.kv(0, "Active Jobs", "<none>")
	} else {
		p.kv(0, "Active Jobs", strings.Join(active, ", "))
	}
}

// jobTemplate is kubectl's describeJobTemplate.
func (p *out) jobTemplate(t *batchv1.JobTemplateSpec) {
	s := t.GetSpec()
	if s == nil {
		s = &batchv1.JobSpec{}
	}
	if s.GetSelector() != nil {
		p.kv(0, "Selector", printers.FormatSelector(s.GetSelector()))
	} else {
		p.kv(0, "Selector", "<unset>")
	}
	p.kv(0, "Parallelism", optionalNumber(s.Parallelism, "%d"))
	p.kv(0, "Completions", optionalNumber(s.Completions, "%d"))
	if s.ActiveDeadlineSeconds != nil {
		p.kv(0, "Active Deadline Seconds", fmt.Sprintf("%ds", s.GetActiveDeadlineSeconds()))
	}
	p.template(s.GetTemplate())
}

// printBoolPtr is kubectl's printBoolPtr: True, False or <unset>.
func printBoolPtr(v *bool) string {
	switch {
	case v == nil:
		return "<unset>"
	case *v:
		return "True"
	}
	return "False"
}

// optionalNumber formats an optional number, <unset> when it is not set.
func optionalNumber[T int32 | int64](v *T, format string) string {
	if v == nil {
		return "<unset>"
	}
	return fmt.Sprintf(format, *v)
}
