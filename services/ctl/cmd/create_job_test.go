package cmd

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func backupCronJob(ns string) *batchv1.CronJob {
	return &batchv1.CronJob{
		Metadata: &metav1.ObjectMeta{Name: "backup", Namespace: ns},
		Spec: &batchv1.CronJobSpec{
			Schedule: "0 3 * * *",
			JobTemplate: &batchv1.JobTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "backup"}, Annotations: map[string]string{"team": "ops"}},
				Spec: &batchv1.JobSpec{BackoffLimit: proto.Int32(2), Template: &corev1.PodTemplateSpec{Spec: &corev1.PodSpec{
					RestartPolicy: "OnFailure",
					Containers:    []*corev1.Container{{Name: "backup", Image: "busybox:1.36", Command: []string{"date"}}},
				}}},
			},
		},
	}
}

// TestCreateJobFromCronJob: create job --from=cronjob/NAME makes a Job of
// the CronJob's template, marked manual and controlled by the CronJob, as
// kubectl's.
func TestCreateJobFromCronJob(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	cj, err := client.CronJobs(shared.Conn).Create(ctx, backupCronJob(c.ns))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ok("create", "job", "backup-manual", "--from=cronjob/backup"); got != "job.batch/backup-manual created\n" {
		t.Errorf("create job --from: %q", got)
	}
	j, err := client.Jobs(shared.Conn).Get(ctx, c.ns, "backup-manual")
	if err != nil {
		t.Fatal(err)
	}
	m := j.GetMetadata()
	if m.GetAnnotations()[InstantiateAnnotation] != "manual" || m.GetAnnotations()["team"] != "ops" || m.GetLabels()["app"] != "backup" {
		t.Errorf("labels %v, annotations %v", m.GetLabels(), m.GetAnnotations())
	}
	refs := m.GetOwnerReferences()
	if len(refs) != 1 || refs[0].GetKind() != "CronJob" || refs[0].GetName() != "backup" || refs[0].GetUid() != cj.GetMetadata().GetUid() ||
		!refs[0].GetController() || refs[0].BlockOwnerDeletion != nil {
		t.Errorf("owner references %v", refs)
	}
	if j.GetSpec().GetBackoffLimit() != 2 || j.GetSpec().GetTemplate().GetSpec().GetContainers()[0].GetImage() != "busybox:1.36" {
		t.Errorf("spec %v, want the template's", j.GetSpec())
	}

	// Any name of the resource, and a dry run that prints the Job.
	out := c.ok("create", "job", "again", "--from=cj/backup", "--dry-run=client", "-o", "yaml")
	for _, want := range []string{"kind: Job", "name: again", "cronjob.kubernetes.io/instantiate: manual", "kind: CronJob", "controller: true"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if _, err := client.Jobs(shared.Conn).Get(ctx, c.ns, "again"); err == nil {
		t.Error("a dry run created the Job")
	}
}

func TestCreateJobWithImage(t *testing.T) {
	c := newCLI(t)
	if got := c.ok("create", "job", "hello", "--image=busybox:1.36", "--", "echo", "hi"); got != "job.batch/hello created\n" {
		t.Errorf("create job --image: %q", got)
	}
	j, err := client.Jobs(shared.Conn).Get(context.Background(), c.ns, "hello")
	if err != nil {
		t.Fatal(err)
	}
	ps := j.GetSpec().GetTemplate().GetSpec()
	ctr := ps.GetContainers()[0]
	if ps.GetRestartPolicy() != "Never" || ctr.GetName() != "hello" || ctr.GetImage() != "busybox:1.36" || strings.Join(ctr.GetCommand(), " ") != "echo hi" {
		t.Errorf("pod spec %v", ps)
	}
}

func TestCreateJobRefusals(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "job", "x"}, "either --image or --from must be specified"},
		{[]string{"create", "job", "x", "--image=busybox", "--from=cronjob/backup"}, "either --image or --from must be specified"},
		{[]string{"create", "job", "x", "--from=cronjob/backup", "--", "date"}, "cannot specify --from and command"},
		{[]string{"create", "job", "--image=busybox"}, "exactly one NAME is required, got 0"},
		{[]string{"create", "job", "x", "--from=backup"}, "from must be of the form TYPE/NAME"},
		{[]string{"create", "job", "x", "--from=deployment/web"}, "from must be an existing cronjob"},
		{[]string{"create", "job", "x", "--from=cronjob/nosuch"}, "not found"},
	} {
		if got := c.fails(tc.args...); !strings.Contains(got, tc.want) {
			t.Errorf("%v: %q, want it to say %q", tc.args, got, tc.want)
		}
	}
}
