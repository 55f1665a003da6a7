package deployutil

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// replicaSet builds a ReplicaSet of Deployment "web" (uid d-1) running
// image; revision "" leaves the annotation out.
func replicaSet(name, revision, image string) *appsv1.ReplicaSet {
	r := &appsv1.ReplicaSet{
		Metadata: &metav1.ObjectMeta{
			Name: name, Namespace: "ns", Uid: "rs-" + name,
			Annotations:     map[string]string{},
			OwnerReferences: []*metav1.OwnerReference{{Kind: "Deployment", Name: "web", Uid: "d-1", Controller: proto.Bool(true)}},
		},
		Spec: &appsv1.ReplicaSetSpec{Template: &corev1.PodTemplateSpec{
			Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web", PodTemplateHashLabel: name}},
			Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web", Image: image}}},
		}},
	}
	if revision != "" {
		r.Metadata.Annotations[RevisionAnnotation] = revision
	}
	return r
}

func TestRevision(t *testing.T) {
	for _, tc := range []struct {
		name, annotation string
		want             int64
		wantErr          bool
	}{
		{"absent", "", 0, false},
		{"a number", "12", 12, false},
		{"malformed", "x", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Revision(replicaSet("a", tc.annotation, "nginx"))
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("Revision = %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestLastRevision(t *testing.T) {
	for _, tc := range []struct {
		name      string
		revisions []string
		want      int64
	}{
		{"none", nil, 0},
		{"one", []string{"1"}, 0},
		{"in order", []string{"1", "2", "3"}, 2},
		{"out of order with gaps", []string{"7", "2", "4"}, 4},
		{"missing and malformed ones are skipped", []string{"", "x", "5", "3"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rses []*appsv1.ReplicaSet
			for i, r := range tc.revisions {
				rses = append(rses, replicaSet(string(rune('a'+i)), r, "nginx"))
			}
			if got := LastRevision(rses); got != tc.want {
				t.Errorf("LastRevision = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestRollbackTemplate(t *testing.T) {
	d := &appsv1.Deployment{Metadata: &metav1.ObjectMeta{Name: "web", Uid: "d-1"}}
	other := replicaSet("other", "9", "other")
	other.Metadata.OwnerReferences[0].Uid = "d-2"
	rses := []*appsv1.ReplicaSet{
		replicaSet("v1", "1", "nginx:1"),
		replicaSet("v2", "2", "nginx:2"),
		replicaSet("v3", "3", "nginx:3"),
		other,
	}
	for _, tc := range []struct {
		name      string
		d         *appsv1.Deployment
		rses      []*appsv1.ReplicaSet
		revision  int64
		wantImage string
		notFound  bool
	}{
		{"0 is the previous revision", d, rses, 0, "nginx:2", false},
		{"a given revision", d, rses, 1, "nginx:1", false},
		{"the current revision", d, rses, 3, "nginx:3", false},
		{"an absent revision", d, rses, 7, "", true},
		{"another Deployment's ReplicaSets do not count", d, rses, 9, "", true},
		{"no previous revision", d, rses[2:3], 0, "", true},
		{"a Deployment without uid takes every ReplicaSet", &appsv1.Deployment{Metadata: &metav1.ObjectMeta{Name: "web"}}, rses, 9, "other", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RollbackTemplate(tc.d, tc.rses, tc.revision)
			if tc.notFound {
				if !errors.Is(err, ErrRevisionNotFound) {
					t.Fatalf("err = %v, want ErrRevisionNotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if img := got.GetSpec().GetContainers()[0].GetImage(); img != tc.wantImage {
				t.Errorf("image = %q, want %q", img, tc.wantImage)
			}
			if _, ok := got.GetMetadata().GetLabels()[PodTemplateHashLabel]; ok {
				t.Error("the template keeps its pod-template-hash label")
			}
		})
	}
	if _, ok := rses[0].Spec.Template.Metadata.Labels[PodTemplateHashLabel]; !ok {
		t.Error("RollbackTemplate changed a ReplicaSet")
	}
	if _, err := RollbackTemplate(d, rses, -1); err == nil {
		t.Error("a negative revision is accepted")
	}
}

func TestWithoutHash(t *testing.T) {
	if got := WithoutHash(nil); got == nil {
		t.Fatal("WithoutHash(nil) = nil, want an empty template")
	}
	tmpl := replicaSet("a", "1", "nginx").GetSpec().GetTemplate()
	got := WithoutHash(tmpl)
	if _, ok := got.GetMetadata().GetLabels()[PodTemplateHashLabel]; ok || got.GetMetadata().GetLabels()["app"] != "web" {
		t.Fatalf("labels = %v, want app=web alone", got.GetMetadata().GetLabels())
	}
	if _, ok := tmpl.GetMetadata().GetLabels()[PodTemplateHashLabel]; !ok {
		t.Fatal("WithoutHash changed its argument")
	}
}
