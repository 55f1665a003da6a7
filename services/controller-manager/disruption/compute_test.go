package disruption

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	policyv1 "skiff.dev/proto/policy/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ios(s string) *metav1.IntOrString {
	return &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: s}}
}
func ioi(i int32) *metav1.IntOrString {
	return &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: i}}
}

// testPod is a pod owned by the controller uid ("": none), Ready or not.
func testPod(name, owner string, ready bool) *corev1.Pod {
	p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name}, Status: &corev1.PodStatus{Phase: "Running"}}
	if owner != "" {
		p.Metadata.OwnerReferences = []*metav1.OwnerReference{{ApiVersion: "apps/v1", Kind: "ReplicaSet", Name: owner, Uid: owner, Controller: proto.Bool(true)}}
	}
	st := "False"
	if ready {
		st = "True"
	}
	p.Status.Conditions = []*corev1.PodCondition{{Type: "Ready", Status: st}}
	return p
}

func budget(minAvailable, maxUnavailable *metav1.IntOrString) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web", Generation: 3},
		Spec: &policyv1.PodDisruptionBudgetSpec{MinAvailable: minAvailable, MaxUnavailable: maxUnavailable}}
}

func TestExpected(t *testing.T) {
	scales := map[string]int32{"rs-a": 4, "rs-b": 2}
	scale := func(_ *corev1.Pod, ref *metav1.OwnerReference) (string, int32, bool) {
		n, ok := scales[ref.GetUid()]
		return ref.GetUid(), n, ok
	}
	three := []*corev1.Pod{testPod("a1", "rs-a", true), testPod("a2", "rs-a", true), testPod("b1", "rs-b", true)}
	cases := []struct {
		name               string
		pdb                *policyv1.PodDisruptionBudget
		pods               []*corev1.Pod
		expected, desired  int32
		unmanaged, failing bool
	}{
		{"integer minAvailable counts the pods", budget(ioi(2), nil), append(three, testPod("lone", "", true)), 4, 2, false, false},
		{"percentage minAvailable: the controllers' scale, rounded up", budget(ios("50%"), nil), three, 6, 3, false, false},
		{"percentage rounds up", budget(ios("34%"), nil), three, 6, 3, false, false},
		{"maxUnavailable integer", budget(nil, ioi(1)), three, 6, 5, false, false},
		{"maxUnavailable percentage rounded up", budget(nil, ios("10%")), three, 6, 5, false, false},
		{"maxUnavailable over the scale", budget(nil, ioi(10)), three, 6, 0, false, false},
		{"unmanaged pods are left out", budget(nil, ioi(1)), append(three, testPod("lone", "", true)), 6, 5, true, false},
		{"an unknown controller fails", budget(nil, ioi(1)), append(three, testPod("x", "rs-x", true)), 0, 0, false, true},
		{"neither", budget(nil, nil), three, 0, 0, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exp, des, unmanaged, err := Expected(c.pdb, c.pods, scale)
			if (err != nil) != c.failing {
				t.Fatalf("err %v, failing %v", err, c.failing)
			}
			if exp != c.expected || des != c.desired || (len(unmanaged) > 0) != c.unmanaged {
				t.Errorf("expected %d desired %d unmanaged %v, want %d %d %v", exp, des, unmanaged, c.expected, c.desired, c.unmanaged)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	now := t0.Add(time.Hour)
	recent, old := timestamppb.New(now.Add(-time.Minute)), timestamppb.New(now.Add(-3*time.Minute))
	deleting := testPod("d", "rs-a", true)
	deleting.Metadata.DeletionTimestamp = timestamppb.New(now)
	pods := []*corev1.Pod{testPod("a", "rs-a", true), testPod("b", "rs-a", true), testPod("c", "rs-a", true), testPod("unready", "rs-a", false), deleting}
	pdb := budget(ioi(1), nil)
	pdb.Status = &policyv1.PodDisruptionBudgetStatus{DisruptedPods: map[string]*timestamppb.Timestamp{"a": recent, "b": old, "d": recent, "gone": recent}}

	disrupted, expired, recheck := DisruptedPods(pdb, pods, now)
	if len(disrupted) != 1 || disrupted["a"] == nil || len(expired) != 1 || expired[0] != "b" {
		t.Errorf("disrupted %v expired %v: want a kept, b expired, d and gone dropped", disrupted, expired)
	}
	if want := recent.AsTime().Add(DeletionTimeout); !recheck.Equal(want) {
		t.Errorf("recheck %v, want %v", recheck, want)
	}
	// a is disrupted, d being deleted, unready not Ready: b and c.
	if got := CurrentHealthy(pods, disrupted, now); got != 2 {
		t.Errorf("currentHealthy %d, want 2", got)
	}

	cases := []struct {
		name                       string
		current, desired, expected int32
		allowed                    int32
		status, reason             string
	}{
		{"sufficient", 3, 1, 3, 2, "True", "SufficientPods"},
		{"exactly", 2, 2, 3, 0, "False", "InsufficientPods"},
		{"under", 1, 2, 3, 0, "False", "InsufficientPods"},
		{"no pods expected", 2, 0, 0, 0, "False", "InsufficientPods"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := Status(pdb, c.current, c.desired, c.expected, disrupted, now)
			if st.DisruptionsAllowed != c.allowed || st.ObservedGeneration != 3 || st.CurrentHealthy != c.current || st.DesiredHealthy != c.desired || st.ExpectedPods != c.expected {
				t.Errorf("status %v", st)
			}
			if len(st.Conditions) != 1 || st.Conditions[0].Status != c.status || st.Conditions[0].Reason != c.reason || st.Conditions[0].ObservedGeneration != 3 {
				t.Errorf("conditions %v, want DisruptionAllowed %s %s", st.Conditions, c.status, c.reason)
			}
		})
	}
	// The transition time stays while the condition's status does.
	pdb.Status = Status(pdb, 3, 1, 3, nil, now)
	if st := Status(pdb, 4, 1, 4, nil, now.Add(time.Minute)); !proto.Equal(st.Conditions[0].LastTransitionTime, timestamppb.New(now)) {
		t.Errorf("transition time moved: %v", st.Conditions[0])
	}
	if st := FailSafe(pdb, errTest("found no controllers for pod \"x\""), now.Add(time.Minute)); st.DisruptionsAllowed != 0 || st.Conditions[0].Reason != "SyncFailed" || st.Conditions[0].Message != "found no controllers for pod \"x\"" || !proto.Equal(st.Conditions[0].LastTransitionTime, timestamppb.New(now.Add(time.Minute))) {
		t.Errorf("fail-safe status %v", st)
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }
