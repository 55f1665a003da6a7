package integration

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/client"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
)

// precise is a time with every digit of its nanoseconds set: what the
// server keeps of it shows the precision it stores.
var precise = time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)

var (
	seconds = precise.Truncate(time.Second)      // metav1.Time
	micros  = precise.Truncate(time.Microsecond) // metav1.MicroTime
)

func wantTime(t *testing.T, field string, got *timestamppb.Timestamp, want time.Time) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: not set", field)
		return
	}
	if !got.AsTime().Equal(want) {
		t.Errorf("%s: %s, want %s", field, got.AsTime().Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
}

// Kubernetes keeps API times (metav1.Time) in whole seconds and MicroTime
// fields (a Lease's acquire and renew times, an Event's eventTime) in
// microseconds, whether the server sets them or the client sends them.
func TestTimestampsHaveKubernetesPrecision(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Now = func() time.Time { return precise }
	}))
	ctx := testContext(t)
	ts := timestamppb.New(precise)

	t.Run("creationTimestamp set by the server", func(t *testing.T) {
		cm, err := client.ConfigMaps(s.Conn).Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "precise"}})
		if err != nil {
			t.Fatal(err)
		}
		wantTime(t, "create's answer: metadata.creationTimestamp", cm.GetMetadata().GetCreationTimestamp(), seconds)
		got, err := client.ConfigMaps(s.Conn).Get(ctx, "default", "precise")
		if err != nil {
			t.Fatal(err)
		}
		wantTime(t, "stored metadata.creationTimestamp", got.GetMetadata().GetCreationTimestamp(), seconds)
	})

	t.Run("a lease's MicroTimes sent by the client", func(t *testing.T) {
		lease := &coordinationv1.Lease{
			Metadata: &metav1.ObjectMeta{Name: "precise"},
			Spec:     &coordinationv1.LeaseSpec{HolderIdentity: "a", AcquireTime: ts, RenewTime: ts},
		}
		created, err := client.Leases(s.Conn).Create(ctx, lease)
		if err != nil {
			t.Fatal(err)
		}
		wantTime(t, "create: spec.acquireTime", created.GetSpec().GetAcquireTime(), micros)
		wantTime(t, "create: spec.renewTime", created.GetSpec().GetRenewTime(), micros)
		renewed := proto.Clone(created).(*coordinationv1.Lease)
		renewed.Spec.RenewTime = timestamppb.New(precise.Add(time.Second))
		updated, err := client.Leases(s.Conn).Update(ctx, renewed)
		if err != nil {
			t.Fatal(err)
		}
		wantTime(t, "update: spec.renewTime", updated.GetSpec().GetRenewTime(), micros.Add(time.Second))
		got, err := client.Leases(s.Conn).Get(ctx, "default", "precise")
		if err != nil {
			t.Fatal(err)
		}
		wantTime(t, "stored spec.renewTime", got.GetSpec().GetRenewTime(), micros.Add(time.Second))
	})

	t.Run("an event's Time and MicroTime", func(t *testing.T) {
		ev, err := client.Events(s.Conn).Create(ctx, &corev1.Event{
			Metadata:       &metav1.ObjectMeta{Name: "precise"},
			InvolvedObject: &corev1.ObjectReference{Kind: "Pod", Name: "web"},
			Reason:         "Started", Type: "Normal",
			FirstTimestamp: ts, LastTimestamp: ts,
			EventTime: ts, ReportingComponent: "skiff.dev/test", ReportingInstance: "test", Action: "Start",
		})
		if err != nil {
			t.Fatal(err)
		}
		wantTime(t, "firstTimestamp", ev.GetFirstTimestamp(), seconds)
		wantTime(t, "lastTimestamp", ev.GetLastTimestamp(), seconds)
		wantTime(t, "eventTime", ev.GetEventTime(), micros)
	})

	t.Run("a status condition and a deletion", func(t *testing.T) {
		p := pod("default", "precise")
		p.Metadata.Finalizers = []string{"skiff.dev/test"}
		created, err := client.Pods(s.Conn).Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		created.Status = &corev1.PodStatus{StartTime: ts, Conditions: []*corev1.PodCondition{{Type: "Ready", Status: "False", LastTransitionTime: ts}}}
		updated, err := client.Pods(s.Conn).UpdateStatus(ctx, created)
		if err != nil {
			t.Fatal(err)
		}
		wantTime(t, "status.startTime", updated.GetStatus().GetStartTime(), seconds)
		wantTime(t, "status.conditions[0].lastTransitionTime", updated.GetStatus().GetConditions()[0].GetLastTransitionTime(), seconds)
		deleted, err := client.Pods(s.Conn).Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "precise", GracePeriodSeconds: proto.Int64(0)})
		if err != nil {
			t.Fatal(err)
		}
		wantTime(t, "metadata.deletionTimestamp", deleted.GetMetadata().GetDeletionTimestamp(), seconds)
	})
}
