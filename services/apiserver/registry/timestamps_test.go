package registry

import (
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestNormalizeTimes(t *testing.T) {
	at := time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)
	precise := func() *timestamppb.Timestamp { return timestamppb.New(at) }
	sec := timestamppb.New(at.Truncate(time.Second))
	micro := timestamppb.New(at.Truncate(time.Microsecond))
	for _, tc := range []struct {
		name    string
		in, out proto.Message
	}{
		{
			name: "metadata times are whole seconds",
			in:   &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{CreationTimestamp: precise(), DeletionTimestamp: precise()}},
			out:  &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{CreationTimestamp: sec, DeletionTimestamp: sec}},
		},
		{
			name: "times in lists: conditions and taints",
			in: &corev1.Node{
				Spec:   &corev1.NodeSpec{Taints: []*corev1.Taint{{Key: "a", Effect: "NoSchedule", TimeAdded: precise()}, {Key: "b", Effect: "NoSchedule"}}},
				Status: &corev1.NodeStatus{Conditions: []*corev1.NodeCondition{{Type: "Ready", LastHeartbeatTime: precise(), LastTransitionTime: precise()}}},
			},
			out: &corev1.Node{
				Spec:   &corev1.NodeSpec{Taints: []*corev1.Taint{{Key: "a", Effect: "NoSchedule", TimeAdded: sec}, {Key: "b", Effect: "NoSchedule"}}},
				Status: &corev1.NodeStatus{Conditions: []*corev1.NodeCondition{{Type: "Ready", LastHeartbeatTime: sec, LastTransitionTime: sec}}},
			},
		},
		{
			name: "a lease's times are MicroTimes",
			in:   &coordinationv1.Lease{Spec: &coordinationv1.LeaseSpec{AcquireTime: precise(), RenewTime: precise()}},
			out:  &coordinationv1.Lease{Spec: &coordinationv1.LeaseSpec{AcquireTime: micro, RenewTime: micro}},
		},
		{
			name: "an event has both",
			in:   &corev1.Event{FirstTimestamp: precise(), LastTimestamp: precise(), EventTime: precise()},
			out:  &corev1.Event{FirstTimestamp: sec, LastTimestamp: sec, EventTime: micro},
		},
		{
			name: "container states deep in a pod's status",
			in: &corev1.Pod{Status: &corev1.PodStatus{StartTime: precise(), ContainerStatuses: []*corev1.ContainerStatus{{
				Name: "web", State: &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: precise(), FinishedAt: precise()}},
			}}}},
			out: &corev1.Pod{Status: &corev1.PodStatus{StartTime: sec, ContainerStatuses: []*corev1.ContainerStatus{{
				Name: "web", State: &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: sec, FinishedAt: sec}},
			}}}},
		},
		{
			name: "no times: nothing changes",
			in:   &corev1.ConfigMap{Data: map[string]string{"a": "b"}},
			out:  &corev1.ConfigMap{Data: map[string]string{"a": "b"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			normalizeTimes(tc.in.ProtoReflect())
			if !proto.Equal(tc.in, tc.out) {
				t.Errorf("normalized:\n%s\nwant:\n%s", prototext.Format(tc.in), prototext.Format(tc.out))
			}
		})
	}
}
