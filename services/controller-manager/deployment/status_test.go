package deployment

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	appsv1 "skiff.dev/proto/apps/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// counted is a ReplicaSet with status counts.
func counted(name string, spec, current, ready, available int32) *appsv1.ReplicaSet {
	r := replicaSet(name, "", "nginx", 0, spec, current)
	r.Status.ReadyReplicas, r.Status.AvailableReplicas = ready, available
	return r
}

// deploymentWith is a 3-replica Deployment (generation 2) with a deadline
// of 10s (nil: none) and the given status.
func deploymentWith(deadline *int32, st *appsv1.DeploymentStatus) *appsv1.Deployment {
	three := int32(3)
	return &appsv1.Deployment{
		Metadata: &metav1.ObjectMeta{Name: "web", Generation: 2},
		Spec:     &appsv1.DeploymentSpec{Replicas: &three, ProgressDeadlineSeconds: deadline},
		Status:   st,
	}
}

func progressingAt(reason, status string, at time.Time) *appsv1.DeploymentCondition {
	return &appsv1.DeploymentCondition{Type: ConditionProgressing, Status: status, Reason: reason,
		LastUpdateTime: timestamppb.New(at), LastTransitionTime: timestamppb.New(at)}
}

func TestCalculateStatus(t *testing.T) {
	b := bounds{Replicas: 3, MaxSurge: 1, MaxUnavailable: 1}
	newRS := counted("new", 2, 2, 2, 1)
	old := counted("old", 2, 3, 2, 2)
	d := deploymentWith(nil, &appsv1.DeploymentStatus{CollisionCount: ptr(int32(1))})
	st := calculateStatus(d, []*appsv1.ReplicaSet{old, newRS}, newRS, b, t0)
	want := &appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 5, UpdatedReplicas: 2, ReadyReplicas: 4, AvailableReplicas: 3, UnavailableReplicas: 1, CollisionCount: ptr(int32(1))}
	if st.ObservedGeneration != want.ObservedGeneration || st.Replicas != want.Replicas || st.UpdatedReplicas != want.UpdatedReplicas ||
		st.ReadyReplicas != want.ReadyReplicas || st.AvailableReplicas != want.AvailableReplicas || st.UnavailableReplicas != want.UnavailableReplicas ||
		st.GetCollisionCount() != 1 {
		t.Errorf("calculateStatus counts = %v, want %v", st, want)
	}
	for _, tc := range []struct {
		name       string
		available  int32
		b          bounds
		wantStatus string
		wantReason string
	}{
		{"enough available", 2, bounds{Replicas: 3, MaxUnavailable: 1}, "True", ReasonMinimumReplicasAvailable},
		{"too few available", 1, bounds{Replicas: 3, MaxUnavailable: 1}, "False", ReasonMinimumReplicasUnavailable},
		{"recreate needs all", 2, bounds{Replicas: 3}, "False", ReasonMinimumReplicasUnavailable},
		{"zero replicas", 0, bounds{}, "True", ReasonMinimumReplicasAvailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := counted("new", tc.b.Replicas, tc.b.Replicas, tc.available, tc.available)
			c := getCondition(calculateStatus(d, []*appsv1.ReplicaSet{r}, r, tc.b, t0), ConditionAvailable)
			if c.GetStatus() != tc.wantStatus || c.GetReason() != tc.wantReason {
				t.Errorf("Available = %s/%s, want %s/%s", c.GetStatus(), c.GetReason(), tc.wantStatus, tc.wantReason)
			}
		})
	}
}

func TestRolloutStatusProgressing(t *testing.T) {
	ten := int32(10)
	b := bounds{Replicas: 3, MaxSurge: 1}
	start := t0
	for _, tc := range []struct {
		name           string
		deadline       *int32
		old            *appsv1.DeploymentStatus
		newRS, oldRS   *appsv1.ReplicaSet
		now            time.Time
		wantStatus     string
		wantReason     string // "" : no Progressing condition
		wantUpdated    time.Time
		wantTransition time.Time
		wantCheckAfter time.Duration
	}{
		{
			name: "no progress yet: the condition stays, a check at the deadline", deadline: &ten,
			old:   &appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 3, Conditions: []*appsv1.DeploymentCondition{progressingAt(ReasonNewReplicaSetCreated, "True", start)}},
			newRS: counted("new", 1, 1, 0, 0), oldRS: counted("old", 3, 3, 3, 3), now: start.Add(4 * time.Second),
			wantStatus: "True", wantReason: ReasonNewReplicaSetCreated, wantUpdated: start, wantTransition: start,
			wantCheckAfter: 6*time.Second + 10*time.Millisecond,
		},
		{
			name: "progress refreshes lastUpdateTime, not lastTransitionTime", deadline: &ten,
			old:   &appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 3, Conditions: []*appsv1.DeploymentCondition{progressingAt(ReasonNewReplicaSetCreated, "True", start)}},
			newRS: counted("new", 1, 1, 1, 1), oldRS: counted("old", 3, 3, 3, 3), now: start.Add(4 * time.Second),
			wantStatus: "True", wantReason: ReasonReplicaSetUpdated, wantUpdated: start.Add(4 * time.Second), wantTransition: start,
			wantCheckAfter: 10*time.Second + 10*time.Millisecond,
		},
		{
			name: "every replica updated and available: complete", deadline: &ten,
			old:   &appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, Conditions: []*appsv1.DeploymentCondition{progressingAt(ReasonReplicaSetUpdated, "True", start)}},
			newRS: counted("new", 3, 3, 3, 3), oldRS: counted("old", 0, 0, 0, 0), now: start.Add(20 * time.Second),
			wantStatus: "True", wantReason: ReasonNewReplicaSetAvailable, wantUpdated: start.Add(20 * time.Second), wantTransition: start,
		},
		{
			name: "no progress past the deadline: timed out", deadline: &ten,
			old:   &appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 3, Conditions: []*appsv1.DeploymentCondition{progressingAt(ReasonReplicaSetUpdated, "True", start)}},
			newRS: counted("new", 1, 1, 0, 0), oldRS: counted("old", 3, 3, 3, 3), now: start.Add(11 * time.Second),
			wantStatus: "False", wantReason: ReasonProgressDeadlineExceeded, wantUpdated: start.Add(11 * time.Second), wantTransition: start.Add(11 * time.Second),
		},
		{
			name: "progress after a timeout makes it progressing again", deadline: &ten,
			old:   &appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 3, Conditions: []*appsv1.DeploymentCondition{progressingAt(ReasonProgressDeadlineExceeded, "False", start)}},
			newRS: counted("new", 1, 1, 1, 1), oldRS: counted("old", 3, 3, 3, 3), now: start.Add(30 * time.Second),
			wantStatus: "True", wantReason: ReasonReplicaSetUpdated, wantUpdated: start.Add(30 * time.Second), wantTransition: start.Add(30 * time.Second),
			wantCheckAfter: 10*time.Second + 10*time.Millisecond,
		},
		{
			name: "a completed rollout stays complete long after", deadline: &ten,
			old:   &appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, Conditions: []*appsv1.DeploymentCondition{progressingAt(ReasonNewReplicaSetAvailable, "True", start)}},
			newRS: counted("new", 3, 3, 2, 2), oldRS: counted("old", 0, 0, 0, 0), now: start.Add(time.Hour),
			wantStatus: "True", wantReason: ReasonNewReplicaSetAvailable, wantUpdated: start, wantTransition: start,
		},
		{
			name:  "without a deadline there is no Progressing condition",
			old:   &appsv1.DeploymentStatus{Conditions: []*appsv1.DeploymentCondition{progressingAt(ReasonReplicaSetUpdated, "True", start)}},
			newRS: counted("new", 1, 1, 0, 0), oldRS: counted("old", 3, 3, 3, 3), now: start,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := deploymentWith(tc.deadline, tc.old)
			st, after := rolloutStatus(d, []*appsv1.ReplicaSet{tc.oldRS, tc.newRS}, tc.newRS, b, tc.now)
			c := getCondition(st, ConditionProgressing)
			if tc.wantReason == "" {
				if c != nil {
					t.Fatalf("Progressing = %v, want none", c)
				}
				return
			}
			if c.GetStatus() != tc.wantStatus || c.GetReason() != tc.wantReason {
				t.Fatalf("Progressing = %s/%s (%s), want %s/%s", c.GetStatus(), c.GetReason(), c.GetMessage(), tc.wantStatus, tc.wantReason)
			}
			if !c.GetLastUpdateTime().AsTime().Equal(tc.wantUpdated) || !c.GetLastTransitionTime().AsTime().Equal(tc.wantTransition) {
				t.Errorf("updated %v, transition %v; want %v, %v", c.GetLastUpdateTime().AsTime(), c.GetLastTransitionTime().AsTime(), tc.wantUpdated, tc.wantTransition)
			}
			if after != tc.wantCheckAfter {
				t.Errorf("check after %v, want %v", after, tc.wantCheckAfter)
			}
		})
	}
}

func TestRolloutStatusReplicaFailure(t *testing.T) {
	b := bounds{Replicas: 3}
	newRS := counted("new", 3, 0, 0, 0)
	newRS.Status.Conditions = []*appsv1.ReplicaSetCondition{{Type: ConditionReplicaFailure, Status: "True", Reason: "FailedCreate", Message: "quota", LastTransitionTime: timestamppb.New(t0)}}
	d := deploymentWith(nil, &appsv1.DeploymentStatus{})
	st, _ := rolloutStatus(d, []*appsv1.ReplicaSet{newRS}, newRS, b, t0)
	if c := getCondition(st, ConditionReplicaFailure); c.GetStatus() != "True" || c.GetReason() != "FailedCreate" || c.GetMessage() != "quota" {
		t.Errorf("ReplicaFailure = %v", c)
	}
	newRS.Status.Conditions = nil
	d.Status = st
	st, _ = rolloutStatus(d, []*appsv1.ReplicaSet{newRS}, newRS, b, t0)
	if c := getCondition(st, ConditionReplicaFailure); c != nil {
		t.Errorf("ReplicaFailure stays after the ReplicaSet's went: %v", c)
	}
}

func TestPausedCondition(t *testing.T) {
	ten := int32(10)
	for _, tc := range []struct {
		name        string
		paused      bool
		deadline    *int32
		cond        *appsv1.DeploymentCondition
		wantChanged bool
		wantReason  string
	}{
		{"paused", true, &ten, progressingAt(ReasonReplicaSetUpdated, "True", t0), true, ReasonDeploymentPaused},
		{"still paused", true, &ten, progressingAt(ReasonDeploymentPaused, "Unknown", t0), false, ReasonDeploymentPaused},
		{"resumed", false, &ten, progressingAt(ReasonDeploymentPaused, "Unknown", t0), true, ReasonDeploymentResumed},
		{"running", false, &ten, progressingAt(ReasonReplicaSetUpdated, "True", t0), false, ReasonReplicaSetUpdated},
		{"a timeout is kept", true, &ten, progressingAt(ReasonProgressDeadlineExceeded, "False", t0), false, ReasonProgressDeadlineExceeded},
		{"no deadline, no condition", true, nil, nil, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := deploymentWith(tc.deadline, &appsv1.DeploymentStatus{})
			d.Spec.Paused = tc.paused
			if tc.cond != nil {
				d.Status.Conditions = []*appsv1.DeploymentCondition{tc.cond}
			}
			st := cloneStatus(d)
			changed := pausedCondition(d, st, t0.Add(time.Minute))
			if c := getCondition(st, ConditionProgressing); changed != tc.wantChanged || c.GetReason() != tc.wantReason {
				t.Errorf("pausedCondition = %v, %q; want %v, %q", changed, c.GetReason(), tc.wantChanged, tc.wantReason)
			}
		})
	}
}
