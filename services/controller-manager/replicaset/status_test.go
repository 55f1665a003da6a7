package replicaset

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
)

func TestCalculateStatus(t *testing.T) {
	now := epoch.Add(time.Hour)
	cases := []struct {
		name        string
		minReady    int32
		pods        []*corev1.Pod
		want        *appsv1.ReplicaSetStatus
		availableIn time.Duration
	}{
		{name: "no pods", want: &appsv1.ReplicaSetStatus{ObservedGeneration: 3}},
		{name: "counts",
			pods: []*corev1.Pod{
				testPod("a", labeled("app", "web", "tier", "front"), ready(now)),
				testPod("b", labeled("app", "web", "tier", "front", "extra", "x")),
				testPod("c", ready(now.Add(-time.Minute))),
				testPod("d", labeled("app", "web", "tier", "back"), phase("Running"), notReady()),
			},
			want: &appsv1.ReplicaSetStatus{Replicas: 4, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 3}},
		{name: "minReadySeconds: available after, next one first",
			minReady: 10,
			pods: []*corev1.Pod{
				testPod("long", ready(now.Add(-time.Minute))),
				testPod("just", ready(now.Add(-10*time.Second))),
				testPod("soon", ready(now.Add(-8*time.Second))),
				testPod("later", ready(now.Add(-time.Second))),
				testPod("unknown", ready(time.Time{})),
				testPod("not-ready", phase("Running")),
			},
			want:        &appsv1.ReplicaSetStatus{Replicas: 6, ReadyReplicas: 5, AvailableReplicas: 2, ObservedGeneration: 3},
			availableIn: 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, in := calculateStatus(testRS(3, tc.minReady), tc.pods, nil, now)
			if !proto.Equal(st, tc.want) {
				t.Errorf("status = %v, want %v", st, tc.want)
			}
			if in != tc.availableIn {
				t.Errorf("availableIn = %v, want %v", in, tc.availableIn)
			}
		})
	}
}

func TestReplicaFailureCondition(t *testing.T) {
	now := epoch
	fail := &manageError{reason: "FailedCreate", err: errors.New("quota exceeded")}
	other := &appsv1.ReplicaSetCondition{Type: "Other", Status: "True"}
	old := &appsv1.ReplicaSetCondition{Type: ReplicaFailure, Status: "True", Reason: "FailedDelete", LastTransitionTime: timestamppb.New(epoch.Add(-time.Hour))}
	cases := []struct {
		name    string
		conds   []*appsv1.ReplicaSetCondition
		failure *manageError
		want    []*appsv1.ReplicaSetCondition
	}{
		{"no failure, no condition", []*appsv1.ReplicaSetCondition{other}, nil, []*appsv1.ReplicaSetCondition{other}},
		{"a failure adds it", []*appsv1.ReplicaSetCondition{other}, fail, []*appsv1.ReplicaSetCondition{other,
			{Type: ReplicaFailure, Status: "True", Reason: "FailedCreate", Message: "quota exceeded", LastTransitionTime: timestamppb.New(now)}}},
		{"a failure keeps the first one", []*appsv1.ReplicaSetCondition{old, other}, fail, []*appsv1.ReplicaSetCondition{old, other}},
		{"success removes it", []*appsv1.ReplicaSetCondition{old, other}, nil, []*appsv1.ReplicaSetCondition{other}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := failureCondition(tc.conds, tc.failure, now)
			if !proto.Equal(&appsv1.ReplicaSetStatus{Conditions: got}, &appsv1.ReplicaSetStatus{Conditions: tc.want}) {
				t.Errorf("conditions = %v, want %v", got, tc.want)
			}
		})
	}
}
