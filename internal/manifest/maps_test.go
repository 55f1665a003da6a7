package manifest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"

	policyv1 "skiff.dev/proto/policy/v1"
)

// A map whose values are written as scalars (a PodDisruptionBudget's
// disruptedPods: pod name -> time of its eviction) decodes as Encode
// writes it: the values are timestamps, not objects.
func TestMapOfTimestamps(t *testing.T) {
	want := &policyv1.PodDisruptionBudget{Status: &policyv1.PodDisruptionBudgetStatus{
		DisruptedPods: map[string]*timestamppb.Timestamp{"web-1": ts("2024-05-01T12:00:00Z")},
	}}
	got := &policyv1.PodDisruptionBudget{}
	if err := Decode(parse(t, "status:\n  disruptedPods: {web-1: \"2024-05-01T12:00:00Z\"}\n"), got, DecodeOptions{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	back := &policyv1.PodDisruptionBudget{}
	if err := Decode(Encode(want), back, DecodeOptions{}); err != nil {
		t.Fatalf("Encode's tree does not decode: %v", err)
	}
}
