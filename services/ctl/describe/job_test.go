package describe

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestDescribeJob(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	ready := int32(0)
	j := &batchv1.Job{
		Metadata: &metav1.ObjectMeta{Name: "pi", Namespace: "default", Labels: map[string]string{"batch.kubernetes.io/job-name": "pi"}},
		Spec: &batchv1.JobSpec{
			Parallelism: proto.Int32(2), Completions: proto.Int32(4), CompletionMode: "Indexed", Suspend: proto.Bool(false), BackoffLimit: proto.Int32(6),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u1"}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"batch.kubernetes.io/job-name": "pi"}},
				Spec:     &corev1.PodSpec{RestartPolicy: "Never", Containers: []*corev1.Container{{Name: "pi", Image: "perl:5.34.0"}}},
			},
		},
		Status: &batchv1.JobStatus{StartTime: timestamppb.New(t0), CompletionTime: timestamppb.New(t0.Add(27 * time.Second)),
			Succeeded: 4, Ready: &ready, CompletedIndexes: "0-3"},
	}
	var b strings.Builder
	events := []*corev1.Event{{InvolvedObject: &corev1.ObjectReference{Kind: "Job", Name: "pi"}, Type: "Normal", Reason: "Completed", Message: "Job completed",
		Source: &corev1.EventSource{Component: "job-controller"}, LastTimestamp: timestamppb.New(t0.Add(27 * time.Second)), Count: 1}}
	if err := Job(&b, j, events, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"Name:               pi\n",
		"Selector:           batch.kubernetes.io/controller-uid=u1\n",
		"Parallelism:        2\n",
		"Completions:        4\n",
		"Completion Mode:    Indexed\n",
		"Suspend:            false\n",
		"Backoff Limit:      6\n",
		"Start Time:         Wed, 01 May 2024 12:00:00 +0000\n",
		"Completed At:       Wed, 01 May 2024 12:00:27 +0000\n",
		"Duration:           27s\n",
		"Pods Statuses:      0 Active (0 Ready) / 4 Succeeded / 0 Failed\n",
		"Completed Indexes:  0-3\n",
		"Pod Template:\n",
		"Normal  Completed  33s   job-controller  Job completed",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if capIndexes("1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,35,37,39", 20) != "1,3,5,7,9,11,13,15,..." {
		t.Errorf("capIndexes: %q", capIndexes("1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,35,37,39", 20))
	}
}

// A Job without a status (just created, or not yet synced) describes
// without a panic (the conformance test found a nil dereference).
func TestDescribeJobWithoutStatus(t *testing.T) {
	for _, j := range []*batchv1.Job{
		{Metadata: &metav1.ObjectMeta{Name: "fresh", Namespace: "default"}},
		{Metadata: &metav1.ObjectMeta{Name: "fresh", Namespace: "default"}, Spec: &batchv1.JobSpec{CompletionMode: "Indexed"}},
	} {
		var b strings.Builder
		if err := Describe(&b, j, Related{}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "Pods Statuses:") {
			t.Errorf("no Pods Statuses in:\n%s", b.String())
		}
	}
}
