package podgc

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is epoch plus s seconds.
func at(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }

// pod builds pod name, created at(created), on node (unbound if ""), in
// phase; deleting sets a deletionTimestamp.
func pod(name, node, phase string, created int, deleting bool) *corev1.Pod {
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "ns", Name: name, Uid: "uid-" + name, CreationTimestamp: timestamppb.New(at(created))},
		Spec:     &corev1.PodSpec{NodeName: node},
		Status:   &corev1.PodStatus{Phase: phase},
	}
	if deleting {
		p.Metadata.DeletionTimestamp = timestamppb.New(at(created + 1))
	}
	return p
}

// held is p deleted with grace period 0, kept by a finalizer.
func held(p *corev1.Pod) *corev1.Pod {
	p.Metadata.DeletionGracePeriodSeconds = proto.Int64(0)
	p.Metadata.Finalizers = []string{"example.com/hold"}
	return p
}

// evictedPod is a pod its agent evicted (Failed, reason Evicted).
func evictedPod(name string, created int) *corev1.Pod {
	p := pod(name, "n1", "Failed", created, false)
	p.Status.Reason = "Evicted"
	return p
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.GetMetadata().GetName())
	}
	return out
}

func TestDecide(t *testing.T) {
	cached := func(name string) bool { return name == "n1" || name == "n2" }
	tests := []struct {
		name        string
		pods        []*corev1.Pod
		threshold   int
		terminated  []string
		orphaned    map[string][]string
		unscheduled []string
	}{
		{
			name:      "running pods on cached nodes, pending unbound pods: nothing",
			pods:      []*corev1.Pod{pod("a", "n1", "Running", 0, false), pod("b", "n2", "Pending", 0, false), pod("c", "", "Pending", 0, false)},
			threshold: 1, terminated: []string{}, orphaned: map[string][]string{}, unscheduled: []string{},
		},
		{
			name:      "terminated pods within the threshold stay",
			pods:      []*corev1.Pod{pod("a", "n1", "Succeeded", 0, false), pod("b", "n1", "Failed", 1, false), pod("c", "n1", "Running", 2, false)},
			threshold: 2, terminated: []string{}, orphaned: map[string][]string{}, unscheduled: []string{},
		},
		{
			name: "beyond the threshold the oldest go, evicted ones first, then by creation and name",
			pods: []*corev1.Pod{
				pod("new", "n1", "Succeeded", 50, false), pod("old", "n1", "Failed", 10, false),
				pod("tie-b", "n1", "Succeeded", 20, false), pod("tie-a", "n1", "Succeeded", 20, false),
				evictedPod("evicted", 60), pod("running", "n1", "Running", 0, false),
			},
			threshold: 2, terminated: []string{"evicted", "old", "tie-a"}, orphaned: map[string][]string{}, unscheduled: []string{},
		},
		{
			name:      "threshold 0: terminated pods are not counted",
			pods:      []*corev1.Pod{pod("a", "n1", "Succeeded", 0, false), pod("b", "n1", "Failed", 1, false)},
			threshold: 0, terminated: []string{}, orphaned: map[string][]string{}, unscheduled: []string{},
		},
		{
			name: "pods of nodes missing from the cache, running or terminating, by node",
			pods: []*corev1.Pod{
				pod("a", "gone", "Running", 0, false), pod("b", "gone", "Running", 0, true),
				pod("c", "other", "Pending", 0, false), pod("d", "n1", "Running", 0, false),
			},
			threshold: 10, terminated: []string{}, orphaned: map[string][]string{"gone": {"a", "b"}, "other": {"c"}}, unscheduled: []string{},
		},
		{
			name:      "terminating pods bound to no node",
			pods:      []*corev1.Pod{pod("a", "", "Pending", 0, true), pod("b", "", "Pending", 0, false), pod("c", "n1", "Running", 0, true)},
			threshold: 10, terminated: []string{}, orphaned: map[string][]string{}, unscheduled: []string{"a"},
		},
		{
			name: "a pod goes for one reason only: terminated first",
			pods: []*corev1.Pod{
				pod("old-orphan", "gone", "Succeeded", 0, false), pod("new-orphan", "gone", "Failed", 5, false),
				pod("unbound", "", "Failed", 1, true),
			},
			threshold: 1, terminated: []string{"old-orphan", "unbound"}, orphaned: map[string][]string{"gone": {"new-orphan"}}, unscheduled: []string{},
		},
		{
			name: "pods a finalizer holds after a force delete: left alone, not counted",
			pods: []*corev1.Pod{
				held(pod("held-orphan", "gone", "Failed", 0, true)), held(pod("held-unbound", "", "Failed", 0, true)),
				held(pod("held-old", "n1", "Succeeded", 0, true)), pod("done", "n1", "Succeeded", 5, false),
				pod("orphan-graceful", "gone", "Failed", 0, true),
			},
			threshold: 1, terminated: []string{"orphan-graceful"}, orphaned: map[string][]string{}, unscheduled: []string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.pods, cached, tc.threshold)
			if got := names(p.Terminated); !slices.Equal(got, tc.terminated) {
				t.Errorf("terminated = %q, want %q", got, tc.terminated)
			}
			if len(p.Orphaned) != len(tc.orphaned) {
				t.Errorf("orphaned on %d nodes, want %d: %v", len(p.Orphaned), len(tc.orphaned), p.Orphaned)
			}
			for node, want := range tc.orphaned {
				if got := names(p.Orphaned[node]); !slices.Equal(got, want) {
					t.Errorf("orphaned on %s = %q, want %q", node, got, want)
				}
			}
			if got := names(p.Unscheduled); !slices.Equal(got, tc.unscheduled) {
				t.Errorf("unscheduled = %q, want %q", got, tc.unscheduled)
			}
		})
	}
}

func TestQuarantine(t *testing.T) {
	q := newQuarantine(40 * time.Second)
	missing := func(nodes ...string) map[string][]*corev1.Pod {
		m := map[string][]*corev1.Pod{}
		for _, n := range nodes {
			m[n] = nil
		}
		return m
	}
	steps := []struct {
		name    string
		now     int
		missing map[string][]*corev1.Pod
		due     []string
		next    time.Time
	}{
		{"nothing missing", 0, missing(), nil, time.Time{}},
		{"a node missing: quarantined for 40 s", 10, missing("a"), nil, at(50)},
		{"another one later: the earliest end is next", 30, missing("a", "b"), nil, at(50)},
		{"a's quarantine over, exactly", 50, missing("a", "b"), []string{"a"}, at(70)},
		{"a back in the cache: forgotten", 60, missing("b"), nil, at(70)},
		{"a missing again: a new quarantine", 65, missing("a", "b"), nil, at(70)},
		{"both over later", 200, missing("a", "b"), []string{"a", "b"}, time.Time{}},
	}
	for _, s := range steps {
		due, next := q.update(s.missing, at(s.now))
		if !slices.Equal(due, s.due) || !next.Equal(s.next) {
			t.Fatalf("%s: update at %d = %v, %v; want %v, %v", s.name, s.now, due, next, s.due, s.next)
		}
	}
	if end := q.again("a", at(200)); !end.Equal(at(240)) {
		t.Errorf("again: quarantine ends %v, want %v", end, at(240))
	}
	if due, next := q.update(missing("a", "b"), at(210)); !slices.Equal(due, []string{"b"}) || !next.Equal(at(240)) {
		t.Errorf("after again: %v, %v; want [b], %v", due, next, at(240))
	}
}
