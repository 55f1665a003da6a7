package integration

import (
	"maps"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// A Job created by metadata.generateName gets the selector and template
// labels of its generated name, as Kubernetes' job strategy does: the
// store chooses the name first, then PrepareForCreate (generateSelector)
// runs, then validation.
func TestJobCreatedByGenerateName(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	jobs := client.Jobs(s.Conn)
	newJob := func(m *metav1.ObjectMeta) *batchv1.Job {
		return &batchv1.Job{Metadata: m, Spec: &batchv1.JobSpec{
			Completions: proto.Int32(1),
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "pi"}},
				Spec:     &corev1.PodSpec{RestartPolicy: "Never", Containers: []*corev1.Container{{Name: "pi", Image: "perl:5.34"}}},
			},
		}}
	}
	wantLabels := func(j *batchv1.Job) map[string]string {
		name, uid := j.GetMetadata().GetName(), j.GetMetadata().GetUid()
		return map[string]string{
			"app": "pi", "job-name": name, "batch.kubernetes.io/job-name": name,
			"controller-uid": uid, "batch.kubernetes.io/controller-uid": uid,
		}
	}
	check := func(t *testing.T, j *batchv1.Job) {
		t.Helper()
		want := wantLabels(j)
		if got := j.GetSpec().GetTemplate().GetMetadata().GetLabels(); !maps.Equal(got, want) {
			t.Errorf("template labels %v, want %v", got, want)
		}
		// The Job had no labels: they are its template's, generated ones
		// included (Kubernetes' defaulting shares the template's map).
		if got := j.GetMetadata().GetLabels(); !maps.Equal(got, want) {
			t.Errorf("labels %v, want %v", got, want)
		}
		sel := j.GetSpec().GetSelector().GetMatchLabels()
		if len(sel) != 1 || sel["batch.kubernetes.io/controller-uid"] != j.GetMetadata().GetUid() {
			t.Errorf("selector %v, want the controller-uid only", sel)
		}
	}

	t.Run("generateName", func(t *testing.T) {
		got, err := jobs.Create(ctx, newJob(&metav1.ObjectMeta{Namespace: "default", GenerateName: "pi-"}))
		if err != nil {
			t.Fatalf("create by generateName: %v", err)
		}
		if name := got.GetMetadata().GetName(); !strings.HasPrefix(name, "pi-") || len(name) != len("pi-")+5 {
			t.Errorf("name %q, want pi- and five characters", name)
		}
		check(t, got)
		stored, err := jobs.Get(ctx, "default", got.GetMetadata().GetName())
		if err != nil {
			t.Fatal(err)
		}
		check(t, stored)
	})
	t.Run("name", func(t *testing.T) {
		got, err := jobs.Create(ctx, newJob(&metav1.ObjectMeta{Namespace: "default", Name: "pi-named"}))
		if err != nil {
			t.Fatal(err)
		}
		check(t, got)
	})
	t.Run("generateName with a name: the name wins", func(t *testing.T) {
		got, err := jobs.Create(ctx, newJob(&metav1.ObjectMeta{Namespace: "default", Name: "pi-both", GenerateName: "pi-"}))
		if err != nil {
			t.Fatal(err)
		}
		if got.GetMetadata().GetName() != "pi-both" {
			t.Errorf("name %q", got.GetMetadata().GetName())
		}
		check(t, got)
	})
}
