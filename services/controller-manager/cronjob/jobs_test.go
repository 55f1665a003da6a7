package cronjob

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func templateCJ() *batchv1.CronJob {
	return &batchv1.CronJob{
		ApiVersion: "batch/v1", Kind: "CronJob",
		Metadata: &metav1.ObjectMeta{Name: "backup", Namespace: "ops", Uid: "cj-uid"},
		Spec: &batchv1.CronJobSpec{
			Schedule: "0 9 * * *",
			JobTemplate: &batchv1.JobTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "backup"}, Annotations: map[string]string{"team": "ops"}},
				Spec: &batchv1.JobSpec{BackoffLimit: proto.Int32(2), Template: &corev1.PodTemplateSpec{Spec: &corev1.PodSpec{
					RestartPolicy: "OnFailure", Containers: []*corev1.Container{{Name: "c", Image: "busybox"}},
				}}},
			},
		},
	}
}

func TestJobFromTemplate(t *testing.T) {
	cj := templateCJ()
	scheduled := at(t, "26 08:00")
	j, err := jobFromTemplate(cj, scheduled)
	if err != nil {
		t.Fatal(err)
	}
	m := j.Metadata
	if m.Name != jobName(cj, scheduled) || m.Namespace != "ops" {
		t.Errorf("job %s/%s", m.Namespace, m.Name)
	}
	if m.Labels["app"] != "backup" || m.Annotations["team"] != "ops" {
		t.Errorf("labels %v, annotations %v: want the template's", m.Labels, m.Annotations)
	}
	if got := m.Annotations[ScheduledTimestampAnnotation]; got != "2026-11-26T08:00:00Z" {
		t.Errorf("scheduled timestamp %q, want UTC without a time zone", got)
	}
	ref := m.OwnerReferences[0]
	if len(m.OwnerReferences) != 1 || ref.GetKind() != "CronJob" || ref.GetApiVersion() != "batch/v1" || ref.GetName() != "backup" ||
		ref.GetUid() != "cj-uid" || !ref.GetController() || !ref.GetBlockOwnerDeletion() {
		t.Errorf("owner references %v", m.OwnerReferences)
	}
	if !proto.Equal(j.Spec, cj.Spec.JobTemplate.Spec) {
		t.Errorf("spec %v, want the template's", j.Spec)
	}
	j.Spec.BackoffLimit = proto.Int32(9)
	m.Labels["x"] = "y"
	m.Annotations["x"] = "y"
	if cj.Spec.JobTemplate.Spec.GetBackoffLimit() != 2 || len(cj.Spec.JobTemplate.Metadata.Labels) != 1 || len(cj.Spec.JobTemplate.Metadata.Annotations) != 1 {
		t.Error("the Job shares the template's messages or maps")
	}

	cj.Spec.TimeZone = proto.String("Europe/Paris")
	j, _ = jobFromTemplate(cj, scheduled)
	if got := j.Metadata.Annotations[ScheduledTimestampAnnotation]; got != "2026-11-26T09:00:00+01:00" {
		t.Errorf("scheduled timestamp %q, want Paris time", got)
	}
}

// job is a Job of the CronJob "backup" (uid cj-uid) named name, finished
// as cond says ("": running), started at start ("": not started),
// completed at done.
func job(t *testing.T, name, cond, start, done string) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{
		Metadata: &metav1.ObjectMeta{Name: name, Namespace: "ops", Uid: name + "-uid"},
		Status:   &batchv1.JobStatus{},
	}
	if cond != "" {
		j.Status.Conditions = []*batchv1.JobCondition{{Type: "SuccessCriteriaMet", Status: "True"}, {Type: cond, Status: "True"}}
	}
	if start != "" {
		j.Status.StartTime = timestamppb.New(at(t, start))
	}
	if done != "" {
		j.Status.CompletionTime = timestamppb.New(at(t, done))
	}
	return j
}

func names[T interface{ GetMetadata() *metav1.ObjectMeta }](objs []T) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetMetadata().GetName())
	}
	return out
}

func refNames(refs []*corev1.ObjectReference) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.GetName())
	}
	return out
}

func TestReconcileActive(t *testing.T) {
	running := job(t, "running", "", "26 08:00", "")
	done := job(t, "done", "Complete", "26 07:00", "26 07:30")
	failed := job(t, "failed", "Failed", "26 06:00", "")
	stranger := job(t, "stranger", "", "26 08:10", "")
	notComplete := job(t, "not-complete", "", "26 08:00", "")
	notComplete.Status.Conditions = []*batchv1.JobCondition{{Type: "Complete", Status: "False"}}
	ghost := &corev1.ObjectReference{Name: "ghost", Namespace: "ops", Uid: "ghost-uid"}

	cases := []struct {
		name                        string
		active                      []*corev1.ObjectReference
		lastSuccessful              string
		jobs                        []*batchv1.Job
		completed, unexpected, gone []string
		wantLastSuccessful          string // "": unchanged
	}{
		{name: "all listed, running", active: []*corev1.ObjectReference{jobRef(running)}, jobs: []*batchv1.Job{running}},
		{name: "listed Jobs that finished", active: []*corev1.ObjectReference{jobRef(done), jobRef(failed), jobRef(running)},
			jobs: []*batchv1.Job{done, failed, running}, completed: []string{"done", "failed"}, wantLastSuccessful: "26 07:30"},
		{name: "a running Job not listed", jobs: []*batchv1.Job{stranger}, unexpected: []string{"stranger"}},
		{name: "a finished Job not listed is history, not unexpected", jobs: []*batchv1.Job{done, failed}, wantLastSuccessful: "26 07:30"},
		{name: "a condition False does not finish", active: []*corev1.ObjectReference{jobRef(notComplete)}, jobs: []*batchv1.Job{notComplete}},
		{name: "a listed Job that is gone", active: []*corev1.ObjectReference{ghost, jobRef(running)}, jobs: []*batchv1.Job{running}, gone: []string{"ghost"}},
		{name: "an older success leaves lastSuccessfulTime", lastSuccessful: "26 07:45", jobs: []*batchv1.Job{done}},
		{name: "a later success moves it", lastSuccessful: "26 07:00", jobs: []*batchv1.Job{done}, wantLastSuccessful: "26 07:30"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &batchv1.CronJobStatus{Active: c.active}
			if c.lastSuccessful != "" {
				st.LastSuccessfulTime = timestamppb.New(at(t, c.lastSuccessful))
			}
			u := reconcileActive(st, c.jobs)
			if got := names(u.completed); !slices.Equal(got, c.completed) {
				t.Errorf("completed %v, want %v", got, c.completed)
			}
			if got := names(u.unexpected); !slices.Equal(got, c.unexpected) {
				t.Errorf("unexpected %v, want %v", got, c.unexpected)
			}
			if got := refNames(u.gone); !slices.Equal(got, c.gone) {
				t.Errorf("gone %v, want %v", got, c.gone)
			}
			switch {
			case c.wantLastSuccessful == "" && u.lastSuccessful != nil:
				t.Errorf("lastSuccessful %v, want unchanged", u.lastSuccessful.AsTime())
			case c.wantLastSuccessful != "" && (u.lastSuccessful == nil || !u.lastSuccessful.AsTime().Equal(at(t, c.wantLastSuccessful))):
				t.Errorf("lastSuccessful %v, want %s", u.lastSuccessful, c.wantLastSuccessful)
			}
		})
	}
}

func TestHistoryToDelete(t *testing.T) {
	s1 := job(t, "s1", "Complete", "26 01:00", "26 01:01")
	s2 := job(t, "s2", "Complete", "26 02:00", "26 02:01")
	s3 := job(t, "s3", "Complete", "26 03:00", "26 03:01")
	s4 := job(t, "s4", "Complete", "26 04:00", "26 04:01")
	sNoStart := job(t, "s0-never-started", "Complete", "", "")
	f1 := job(t, "f1", "Failed", "26 01:30", "")
	f2 := job(t, "f2", "Failed", "26 02:30", "")
	sameA := job(t, "same-a", "Complete", "26 05:00", "")
	sameB := job(t, "same-b", "Complete", "26 05:00", "")
	running := job(t, "running", "", "26 00:00", "")

	cases := []struct {
		name               string
		successful, failed *int32
		jobs               []*batchv1.Job
		want               []string
	}{
		{"within the limits", proto.Int32(3), proto.Int32(1), []*batchv1.Job{s1, s2, s3, f1, running}, nil},
		{"oldest successful beyond 3", proto.Int32(3), proto.Int32(1), []*batchv1.Job{s4, s2, s1, s3, running}, []string{"s1"}},
		{"oldest failed beyond 1", proto.Int32(3), proto.Int32(1), []*batchv1.Job{f2, f1, s1}, []string{"f1"}},
		{"limit 0 deletes all finished", proto.Int32(0), proto.Int32(0), []*batchv1.Job{s1, f1, running}, []string{"s1", "f1"}},
		{"no limits keep all", nil, nil, []*batchv1.Job{s1, s2, s3, s4, f1, f2}, nil},
		{"not started counts as newest", proto.Int32(1), nil, []*batchv1.Job{sNoStart, s1}, []string{"s1"}},
		{"same start: by name", proto.Int32(1), nil, []*batchv1.Job{sameB, sameA}, []string{"same-a"}},
		{"running Jobs never", proto.Int32(0), proto.Int32(0), []*batchv1.Job{running}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cj := &batchv1.CronJob{Spec: &batchv1.CronJobSpec{SuccessfulJobsHistoryLimit: c.successful, FailedJobsHistoryLimit: c.failed}}
			if got := names(historyToDelete(cj, c.jobs)); !slices.Equal(got, c.want) {
				t.Errorf("deleted %v, want %v", got, c.want)
			}
		})
	}
}

func TestJobRef(t *testing.T) {
	j := job(t, "backup-1", "", "", "")
	j.Metadata.ResourceVersion = "42"
	want := &corev1.ObjectReference{Kind: "Job", ApiVersion: "batch/v1", Namespace: "ops", Name: "backup-1", Uid: "backup-1-uid", ResourceVersion: "42"}
	if got := jobRef(j); !proto.Equal(got, want) {
		t.Errorf("jobRef %v, want %v", got, want)
	}
	st := &batchv1.CronJobStatus{Active: []*corev1.ObjectReference{want}}
	if !inActive(st, "backup-1-uid") || !inActiveByName(st, "ops", "backup-1") || inActiveByName(st, "other", "backup-1") {
		t.Error("active lookups")
	}
	removeActive(st, "backup-1-uid")
	if len(st.Active) != 0 {
		t.Error("removeActive kept it")
	}
}
