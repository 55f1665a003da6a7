package replicaset

import (
	"slices"
	"testing"
	"time"

	corev1 "skiff.dev/proto/core/v1"
)

// TestCompareForDeletion checks each rule of the ranking on a pair of pods
// that differ by that rule only (and by the rules after it, which must not
// matter): the first pod of each case is deleted first.
func TestCompareForDeletion(t *testing.T) {
	t0 := epoch
	cases := []struct {
		name         string
		first, later *corev1.Pod
	}{
		{"unscheduled before scheduled",
			testPod("b", phase("Running"), ready(t0), created(t0)),
			testPod("a", onNode("n1"), phase("Pending"), created(t0.Add(time.Hour)))},
		{"pending before unknown",
			testPod("b", onNode("n1"), phase("Pending")),
			testPod("a", onNode("n1"), phase("Unknown"), created(t0.Add(time.Hour)))},
		{"unknown before running",
			testPod("b", onNode("n1"), ready(t0), phase("Unknown")),
			testPod("a", onNode("n1"), phase("Running"), notReady())},
		{"no phase counts as pending",
			testPod("b", onNode("n1")),
			testPod("a", onNode("n1"), phase("Unknown"))},
		{"not ready before ready",
			testPod("b", onNode("n1"), phase("Running"), notReady(), created(t0)),
			testPod("a", onNode("n1"), ready(t0), restarts(5), created(t0.Add(time.Hour)))},
		{"no ready condition before ready",
			testPod("b", phase("Running")),
			testPod("a", ready(t0))},
		{"ready since an unknown time before ready since a known one",
			testPod("b", ready(time.Time{})),
			testPod("a", ready(t0.Add(time.Hour)), restarts(3))},
		{"more recently ready first",
			testPod("b", ready(t0.Add(time.Minute)), created(t0)),
			testPod("a", ready(t0), restarts(9), created(t0.Add(time.Hour)))},
		{"ready time ignored for not ready pods: restarts decide",
			testPod("b", phase("Running"), restarts(2)),
			testPod("a", phase("Running"), restarts(1))},
		{"more restarts first, the highest container counts",
			testPod("b", ready(t0), restarts(0, 4), created(t0)),
			testPod("a", ready(t0), restarts(3, 3), created(t0.Add(time.Hour)))},
		{"newer first",
			testPod("b", ready(t0), created(t0.Add(time.Second))),
			testPod("a", ready(t0), created(t0))},
		{"unknown creation time first",
			testPod("b", ready(t0)),
			testPod("a", ready(t0), created(t0))},
		{"name breaks the last tie",
			testPod("a", ready(t0), created(t0)),
			testPod("b", ready(t0), created(t0))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := costOf(tc.first), costOf(tc.later)
			if got := compareForDeletion(a, b); got >= 0 {
				t.Errorf("compare(%s, %s) = %d, want < 0", tc.first.Metadata.Name, tc.later.Metadata.Name, got)
			}
			if got := compareForDeletion(b, a); got <= 0 {
				t.Errorf("compare(%s, %s) = %d, want > 0", tc.later.Metadata.Name, tc.first.Metadata.Name, got)
			}
			if got := compareForDeletion(a, a); got != 0 {
				t.Errorf("compare(%s, itself) = %d, want 0", tc.first.Metadata.Name, got)
			}
		})
	}
}

// TestPodsToDelete ranks a mixed set and picks the first n.
func TestPodsToDelete(t *testing.T) {
	t0 := epoch
	pods := []*corev1.Pod{
		testPod("ready-old", onNode("n"), ready(t0), created(t0)),
		testPod("ready-new", onNode("n"), ready(t0.Add(time.Minute)), created(t0)),
		testPod("unscheduled", created(t0)),
		testPod("pending", onNode("n"), phase("Pending"), created(t0)),
		testPod("running-not-ready", onNode("n"), phase("Running"), notReady(), created(t0)),
		testPod("ready-old-crashy", onNode("n"), ready(t0), restarts(7), created(t0)),
		testPod("unknown", onNode("n"), phase("Unknown"), created(t0)),
	}
	want := []string{"unscheduled", "pending", "unknown", "running-not-ready", "ready-new", "ready-old-crashy", "ready-old"}
	for n := 0; n <= len(pods)+1; n++ {
		got := names(podsToDelete(slices.Clone(pods), n))
		if w := want[:min(n, len(want))]; !slices.Equal(got, w) {
			t.Errorf("podsToDelete(n=%d) = %q, want %q", n, got, w)
		}
	}
	if got := names(rankForDeletion(pods)); !slices.Equal(got, want) {
		t.Errorf("rankForDeletion = %q, want %q", got, want)
	}
	if pods[0].Metadata.Name != "ready-old" {
		t.Errorf("rankForDeletion reordered its argument")
	}
}
