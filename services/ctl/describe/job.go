package describe

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"skiff.dev/internal/printers"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
)

// Job writes the description of a Job as kubectl's describeJob does,
// followed by its events.
func Job(w io.Writer, j *batchv1.Job, events []*corev1.Event, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := &out{w: tw, now: now}
	p.job(j)
	p.events(events)
	return tw.Flush()
}

func (p *out) job(j *batchv1.Job) {
	m, spec, st := j.GetMetadata(), j.GetSpec(), j.GetStatus()
	if spec == nil { // a Job not yet defaulted or synced: read its optional fields from empty messages
		spec = &batchv1.JobSpec{}
	}
	if st == nil {
		st = &batchv1.JobStatus{}
	}
	p.meta(m, true)
	p.kv(0, "Selector", printers.FormatSelector(spec.GetSelector()))
	p.multi(0, "Labels", m.GetLabels(), "=")
	p.multi(0, "Annotations", m.GetAnnotations(), ": ")
	if c := controlledBy(m); c != "" {
		p.kv(0, "Controlled By", c)
	}
	if spec.Parallelism != nil {
		p.kv(0, "Parallelism", spec.GetParallelism())
	}
	if spec.Completions != nil {
		p.kv(0, "Completions", spec.GetCompletions())
	} else {
		p.kv(0, "Completions", "<unset>")
	}
	if spec.GetCompletionMode() != "" {
		p.kv(0, "Completion Mode", spec.GetCompletionMode())
	}
	if spec.Suspend != nil {
		p.kv(0, "Suspend", spec.GetSuspend())
	}
	if spec.BackoffLimit != nil {
		p.kv(0, "Backoff Limit", spec.GetBackoffLimit())
	}
	if spec.BackoffLimitPerIndex != nil {
		p.kv(0, "Backoff Limit Per Index", spec.GetBackoffLimitPerIndex())
	}
	if spec.MaxFailedIndexes != nil {
		p.kv(0, "Max Failed Indexes", spec.GetMaxFailedIndexes())
	}
	if spec.TtlSecondsAfterFinished != nil {
		p.kv(0, "TTL Seconds After Finished", spec.GetTtlSecondsAfterFinished())
	}
	if st.GetStartTime() != nil {
		p.kv(0, "Start Time", formatTime(st.GetStartTime()))
	}
	if st.GetCompletionTime() != nil {
		p.kv(0, "Completed At", formatTime(st.GetCompletionTime()))
	}
	if st.GetStartTime() != nil && st.GetCompletionTime() != nil {
		p.kv(0, "Duration", printers.HumanDuration(st.GetCompletionTime().AsTime().Sub(st.GetStartTime().AsTime())))
	}
	if spec.ActiveDeadlineSeconds != nil {
		p.kv(0, "Active Deadline Seconds", fmt.Sprintf("%ds", spec.GetActiveDeadlineSeconds()))
	}
	if st.Ready == nil {
		p.kv(0, "Pods Statuses", fmt.Sprintf("%d Active / %d Succeeded / %d Failed", st.GetActive(), st.GetSucceeded(), st.GetFailed()))
	} else {
		p.kv(0, "Pods Statuses", fmt.Sprintf("%d Active (%d Ready) / %d Succeeded / %d Failed", st.GetActive(), st.GetReady(), st.GetSucceeded(), st.GetFailed()))
	}
	if spec.GetCompletionMode() == "Indexed" {
		p.kv(0, "Completed Indexes", capIndexes(st.GetCompletedIndexes(), 50))
		if spec.BackoffLimitPerIndex != nil {
			p.kv(0, "Failed Indexes", capIndexes(st.GetFailedIndexes(), 50))
		}
	}
	p.template(spec.GetTemplate())
}

// capIndexes shortens an index list to at most n characters, at a comma,
// with ",..." (kubectl's capIndexesListOrNone); empty is "<none>".
func capIndexes(s string, n int) string {
	if s == "" {
		return "<none>"
	}
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndex(s[:n], ",")
	if cut < 0 {
		return s[:n] + ",..."
	}
	return s[:cut] + ",..."
}
