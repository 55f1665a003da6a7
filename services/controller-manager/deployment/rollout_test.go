package deployment

import (
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "skiff.dev/proto/apps/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func num(i int32) *metav1.IntOrString {
	return &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: i}}
}

func pct(s string) *metav1.IntOrString {
	return &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: s}}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// rs is a ReplicaSet state for the tables: age orders them (higher is
// newer); current and ready equal spec unless a case says otherwise.
func rs(name string, age int, spec, available int32) rsState {
	return rsState{Name: name, Created: t0.Add(time.Duration(age) * time.Minute), Replicas: spec, Current: spec, Ready: available, Available: available, Desired: -1, MaxReplicas: -1}
}

// withCurrent sets the pods r's controller counted (status.replicas).
func withCurrent(r rsState, current int32) rsState {
	r.Current = current
	return r
}

func TestResolveFenceposts(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		surge, unavailable        *metav1.IntOrString
		replicas                  int32
		wantSurge, wantUnavailale int32
		wantErr                   bool
	}{
		{"defaults of 25% on 10", pct("25%"), pct("25%"), 10, 3, 2, false},
		{"defaults of 25% on 4", pct("25%"), pct("25%"), 4, 1, 1, false},
		{"defaults of 25% on 1: surge rounds up, unavailable down", pct("25%"), pct("25%"), 1, 1, 0, false},
		{"counts as they are", num(2), num(3), 10, 2, 3, false},
		{"both zero: one unavailable", num(0), num(0), 10, 0, 1, false},
		{"both round to zero: one unavailable", pct("0%"), pct("5%"), 10, 0, 1, false},
		{"unset counts as zero", nil, num(1), 5, 0, 1, false},
		{"100% unavailable", num(0), pct("100%"), 7, 0, 7, false},
		{"not a percentage", pct("25"), num(1), 4, 0, 0, true},
		{"negative percentage", pct("-5%"), num(1), 4, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, u, err := resolveFenceposts(tc.surge, tc.unavailable, tc.replicas)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (s != tc.wantSurge || u != tc.wantUnavailale) {
				t.Errorf("surge, unavailable = %d, %d; want %d, %d", s, u, tc.wantSurge, tc.wantUnavailale)
			}
		})
	}
}

func TestBoundsOf(t *testing.T) {
	rolling := func(replicas int32, surge, unavailable *metav1.IntOrString) *appsv1.Deployment {
		return &appsv1.Deployment{Spec: &appsv1.DeploymentSpec{Replicas: &replicas, Strategy: &appsv1.DeploymentStrategy{
			Type: RollingUpdate, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: surge, MaxUnavailable: unavailable}}}}
	}
	three := int32(3)
	for _, tc := range []struct {
		name string
		d    *appsv1.Deployment
		want bounds
	}{
		{"rolling", rolling(10, pct("25%"), pct("25%")), bounds{10, 3, 2}},
		{"maxUnavailable at most replicas", rolling(2, num(0), num(5)), bounds{2, 0, 2}},
		{"no unavailable at 0 replicas", rolling(0, pct("25%"), pct("25%")), bounds{0, 0, 0}},
		{"recreate: no surge, no unavailable", &appsv1.Deployment{Spec: &appsv1.DeploymentSpec{Replicas: &three, Strategy: &appsv1.DeploymentStrategy{Type: Recreate}}}, bounds{3, 0, 0}},
		{"unset replicas is 1", &appsv1.Deployment{Spec: &appsv1.DeploymentSpec{Strategy: &appsv1.DeploymentStrategy{Type: Recreate}}}, bounds{1, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := boundsOf(tc.d)
			if err != nil || got != tc.want {
				t.Errorf("boundsOf = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestPlanRolling(t *testing.T) {
	for _, tc := range []struct {
		name               string
		replicas           int32
		surge, unavailable *metav1.IntOrString
		newRS              rsState
		old                []rsState
		want               []string
	}{
		{
			name: "a new ReplicaSet starts with the surge", replicas: 3, surge: num(1), unavailable: num(0),
			newRS: rs("new", 9, 0, 0), old: []rsState{rs("v1", 1, 3, 3)},
			want: []string{"new 0->1"},
		},
		{
			name: "at the surge, nothing until the new pod is available", replicas: 3, surge: num(1), unavailable: num(0),
			newRS: rs("new", 9, 1, 0), old: []rsState{rs("v1", 1, 3, 3)},
		},
		{
			name: "a new pod available lets one old go", replicas: 3, surge: num(1), unavailable: num(0),
			newRS: rs("new", 9, 1, 1), old: []rsState{rs("v1", 1, 3, 3)},
			want: []string{"v1 3->2"},
		},
		{
			name: "an old pod gone lets the new ReplicaSet grow", replicas: 3, surge: num(1), unavailable: num(0),
			newRS: rs("new", 9, 1, 1), old: []rsState{rs("v1", 1, 2, 3)},
			want: []string{"new 1->2"},
		},
		{
			// Its pods above its size still exist until its controller
			// deletes them: growing now would exceed replicas+maxSurge.
			name: "an old pod scaled away but not deleted yet holds the new ReplicaSet back", replicas: 3, surge: num(1), unavailable: num(0),
			newRS: rs("new", 9, 1, 1), old: []rsState{withCurrent(rs("v1", 1, 2, 3), 3)},
		},
		{
			name: "an old status counting pods above its size does not count them", replicas: 3, surge: num(1), unavailable: num(0),
			newRS: rs("new", 9, 2, 1), old: []rsState{rs("v1", 1, 2, 3)},
		},
		{
			name: "done", replicas: 3, surge: num(1), unavailable: num(0),
			newRS: rs("new", 9, 3, 3), old: []rsState{rs("v1", 1, 0, 0)},
		},
		{
			name: "default bounds on 4: one up first", replicas: 4, surge: pct("25%"), unavailable: pct("25%"),
			newRS: rs("new", 9, 0, 0), old: []rsState{rs("v1", 1, 4, 4)},
			want: []string{"new 0->1"},
		},
		{
			name: "default bounds on 4: then one down without waiting", replicas: 4, surge: pct("25%"), unavailable: pct("25%"),
			newRS: rs("new", 9, 1, 0), old: []rsState{rs("v1", 1, 4, 4)},
			want: []string{"v1 4->3"},
		},
		{
			name: "surge rounds up, unavailable rounds down", replicas: 10, surge: pct("15%"), unavailable: pct("15%"),
			newRS: rs("new", 9, 0, 0), old: []rsState{rs("v1", 1, 10, 10)},
			want: []string{"new 0->2"},
		},
		{
			name: "surge rounds up, unavailable rounds down: scaling down", replicas: 10, surge: pct("15%"), unavailable: pct("15%"),
			newRS: rs("new", 9, 2, 0), old: []rsState{rs("v1", 1, 10, 10)},
			want: []string{"v1 10->9"},
		},
		{
			name: "no surge and no unavailable: one unavailable", replicas: 3, surge: num(0), unavailable: pct("0%"),
			newRS: rs("new", 9, 0, 0), old: []rsState{rs("v1", 1, 3, 3)},
			want: []string{"v1 3->2"},
		},
		{
			name: "unhealthy old replicas go first", replicas: 4, surge: num(0), unavailable: num(1),
			newRS: rs("new", 9, 1, 1), old: []rsState{rs("broken", 1, 2, 0), rs("v2", 2, 2, 2)},
			want: []string{"broken 2->0"},
		},
		{
			name: "unhealthy replicas are cleaned up only as far as the total allows", replicas: 4, surge: num(0), unavailable: num(1),
			newRS: rs("new", 9, 0, 0), old: []rsState{rs("v2", 2, 2, 2), rs("broken", 1, 2, 0)},
			want: []string{"broken 2->1"},
		},
		{
			name: "oldest ReplicaSets are scaled down first", replicas: 4, surge: num(0), unavailable: num(1),
			newRS: rs("new", 9, 2, 2), old: []rsState{rs("v2", 2, 2, 2), rs("v1", 1, 2, 2)},
			want: []string{"v1 2->0", "v2 2->1"},
		},
		{
			name: "the new ReplicaSet above replicas comes down to it", replicas: 3, surge: num(1), unavailable: num(0),
			newRS: rs("new", 9, 5, 5), old: []rsState{rs("v1", 1, 1, 1)},
			want: []string{"new 5->3"},
		},
		{
			name: "scaled to zero mid-rollout: old ones go", replicas: 0, surge: pct("25%"), unavailable: pct("25%"),
			newRS: rs("new", 9, 0, 0), old: []rsState{rs("v1", 1, 3, 3)},
			want: []string{"v1 3->0"},
		},
		{
			name: "100% unavailable: all old down at once", replicas: 3, surge: num(0), unavailable: pct("100%"),
			newRS: rs("new", 9, 0, 0), old: []rsState{rs("v1", 1, 3, 3)},
			want: []string{"v1 3->0"},
		},
		{
			name: "100% surge: the new ReplicaSet at full size at once", replicas: 3, surge: pct("100%"), unavailable: num(0),
			newRS: rs("new", 9, 0, 0), old: []rsState{rs("v1", 1, 3, 3)},
			want: []string{"new 0->3"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, u, err := resolveFenceposts(tc.surge, tc.unavailable, tc.replicas)
			if err != nil {
				t.Fatal(err)
			}
			b := bounds{Replicas: tc.replicas, MaxSurge: s}
			if tc.replicas > 0 {
				b.MaxUnavailable = min(u, tc.replicas)
			}
			got := stepStrings(planRolling(b, tc.newRS, tc.old))
			if !slices.Equal(got, tc.want) {
				t.Errorf("planRolling = %q, want %q", got, tc.want)
			}
		})
	}
}

func intOrString(v *metav1.IntOrString) string {
	if v.GetStrVal() != "" {
		return v.GetStrVal()
	}
	return fmt.Sprint(v.GetIntVal())
}

func stepStrings(steps []step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.String())
	}
	return out
}

// TestRollingUpdateKeepsMinAvailable runs whole rollouts of the arithmetic
// against a model of the ReplicaSet controller and kubelet (pods created
// unready, one becomes available per round; scale-downs remove unavailable
// pods first) and checks that available pods never drop below
// replicas-maxUnavailable and that total pods never exceed
// replicas+maxSurge.
func TestRollingUpdateKeepsMinAvailable(t *testing.T) {
	type pods struct{ spec, total, available int32 }
	for _, replicas := range []int32{1, 2, 3, 5, 10} {
		for _, bnd := range [][2]*metav1.IntOrString{
			{num(1), num(0)}, {num(0), num(1)}, {pct("25%"), pct("25%")}, {num(2), num(2)}, {pct("50%"), pct("0%")}, {pct("100%"), num(0)},
		} {
			name := fmt.Sprintf("replicas=%d,surge=%s,unavailable=%s", replicas, intOrString(bnd[0]), intOrString(bnd[1]))
			t.Run(name, func(t *testing.T) {
				s, u, err := resolveFenceposts(bnd[0], bnd[1], replicas)
				if err != nil {
					t.Fatal(err)
				}
				b := bounds{Replicas: replicas, MaxSurge: s, MaxUnavailable: min(u, replicas)}
				oldRS := pods{replicas, replicas, replicas}
				newRS := pods{}
				for round := 0; ; round++ {
					if round > 100 {
						t.Fatalf("no convergence: old %+v, new %+v", oldRS, newRS)
					}
					steps := planRolling(b,
						rsState{Name: "new", Created: t0.Add(time.Hour), Replicas: newRS.spec, Current: newRS.total, Available: newRS.available},
						[]rsState{{Name: "old", Created: t0, Replicas: oldRS.spec, Current: oldRS.total, Available: oldRS.available}})
					if len(steps) == 0 && newRS.available == newRS.total {
						break
					}
					for _, st := range steps {
						if st.Name == "new" {
							newRS.spec = st.To
						} else {
							oldRS.spec = st.To
						}
					}
					// The ReplicaSet controller: delete unavailable pods first, create unready ones.
					for _, p := range []*pods{&oldRS, &newRS} {
						if p.total > p.spec {
							unavailable := p.total - p.available
							p.available -= max(p.total-p.spec-unavailable, 0)
							p.total = p.spec
						}
						p.total = p.spec
					}
					if got := oldRS.available + newRS.available; got < b.MinAvailable() {
						t.Fatalf("round %d: %d available, below %d", round, got, b.MinAvailable())
					}
					if got := oldRS.total + newRS.total; got > b.Replicas+b.MaxSurge {
						t.Fatalf("round %d: %d pods, above %d", round, got, b.Replicas+b.MaxSurge)
					}
					// The kubelet: one pod of the new ReplicaSet becomes available.
					if newRS.available < newRS.total {
						newRS.available++
					}
				}
				if oldRS.spec != 0 || newRS.spec != replicas || newRS.available != replicas {
					t.Errorf("ended with old %+v, new %+v", oldRS, newRS)
				}
			})
		}
	}
}

func TestPlanRecreate(t *testing.T) {
	b := bounds{Replicas: 3}
	for _, tc := range []struct {
		name        string
		newRS       *rsState
		old         []rsState
		podsRunning bool
		wantPhase   recreatePhase
		want        []string
	}{
		{"old ReplicaSets go to zero first", nil, []rsState{rs("v1", 1, 3, 3), rs("v2", 2, 1, 0), rs("v0", 0, 0, 0)}, true, recreateScaleDown, []string{"v1 3->0", "v2 1->0"}},
		{"even with a new ReplicaSet scaled already", ptr(rs("new", 9, 1, 1)), []rsState{rs("v1", 1, 3, 3)}, true, recreateScaleDown, []string{"v1 3->0"}},
		{"then wait while old pods run", nil, []rsState{rs("v1", 1, 0, 0)}, true, recreateWait, nil},
		{"then create the new ReplicaSet", nil, []rsState{rs("v1", 1, 0, 0)}, false, recreateScaleUp, nil},
		{"or scale up the one there is", ptr(rs("new", 9, 0, 0)), []rsState{rs("v1", 1, 0, 0)}, false, recreateScaleUp, []string{"new 0->3"}},
		{"done", ptr(rs("new", 9, 3, 3)), []rsState{rs("v1", 1, 0, 0)}, false, recreateScaleUp, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			phase, steps := planRecreate(b, tc.newRS, tc.old, tc.podsRunning)
			if got := stepStrings(steps); phase != tc.wantPhase || !slices.Equal(got, tc.want) {
				t.Errorf("planRecreate = %d, %q; want %d, %q", phase, got, tc.wantPhase, tc.want)
			}
		})
	}
}

func TestPlanScale(t *testing.T) {
	annotated := func(r rsState, desired, maxReplicas int32) rsState {
		r.Desired, r.MaxReplicas = desired, maxReplicas
		return r
	}
	for _, tc := range []struct {
		name           string
		b              bounds
		rolling        bool
		newRS          *rsState
		old            []rsState
		statusReplicas int32
		want           []string
	}{
		{
			name: "one active ReplicaSet takes all", b: bounds{10, 3, 2}, rolling: true,
			newRS: ptr(rs("new", 9, 3, 3)), old: []rsState{rs("v1", 1, 0, 0)},
			want: []string{"new 3->10"},
		},
		{
			name: "scaled to zero", b: bounds{0, 0, 0}, rolling: true,
			newRS: ptr(rs("new", 9, 3, 3)),
			want:  []string{"new 3->0"},
		},
		{
			name: "no active ReplicaSet: the new one", b: bounds{2, 1, 0}, rolling: true,
			newRS: ptr(rs("new", 9, 0, 0)), old: []rsState{rs("v1", 1, 0, 0)},
			want: []string{"new 0->2"},
		},
		{
			name: "paused with a changed template: the newest old one", b: bounds{2, 1, 0}, rolling: true,
			old:  []rsState{rs("v1", 1, 0, 0), rs("v2", 2, 0, 0)},
			want: []string{"v2 0->2"},
		},
		{
			name: "a saturated new ReplicaSet: old ones to zero", b: bounds{3, 1, 0}, rolling: true,
			newRS: ptr(annotated(rs("new", 9, 3, 3), 3, 4)), old: []rsState{rs("v1", 1, 1, 1)},
			want: []string{"v1 1->0"},
		},
		{
			name: "mid-rollout up: in proportion", b: bounds{20, 2, 0}, rolling: true,
			// Was 10 (+1 surge): new 5, old 6; now 20 (+2 surge) allows 22.
			newRS: ptr(annotated(rs("new", 9, 5, 5), 10, 11)), old: []rsState{annotated(rs("v1", 1, 6, 6), 10, 11)},
			want: []string{"v1 6->12", "new 5->10"},
		},
		{
			name: "mid-rollout down: in proportion", b: bounds{5, 1, 0}, rolling: true,
			newRS: ptr(annotated(rs("new", 9, 5, 5), 10, 11)), old: []rsState{annotated(rs("v1", 1, 6, 6), 10, 11)},
			want: []string{"v1 6->3", "new 5->3"},
		},
		{
			name: "leftovers go to the largest", b: bounds{4, 1, 0}, rolling: true,
			newRS: ptr(annotated(rs("new", 9, 2, 2), 2, 3)), old: []rsState{annotated(rs("v1", 1, 1, 1), 2, 3)},
			// allowed 5, now 3: +2; new gets round(2*5/3)-2 = 1, v1 round(1*5/3)-1 = 1.
			want: []string{"new 2->3", "v1 1->2"},
		},
		{
			name: "equal sizes scaling down: the older first", b: bounds{2, 1, 0}, rolling: true,
			newRS: ptr(annotated(rs("new", 9, 2, 2), 3, 4)), old: []rsState{annotated(rs("v1", 1, 2, 2), 3, 4)},
			// allowed 3, now 4: -1, which rounding gives to the older one.
			want: []string{"v1 2->1"},
		},
		{
			name: "without annotations: status.replicas is the base", b: bounds{8, 0, 1}, rolling: true,
			newRS: ptr(rs("new", 9, 2, 2)), old: []rsState{rs("v1", 1, 2, 2)}, statusReplicas: 4,
			// Equal sizes scaling up: the newer first.
			want: []string{"new 2->4", "v1 2->4"},
		},
		{
			name: "recreate never scales in proportion", b: bounds{8, 0, 0}, rolling: false,
			newRS: ptr(rs("new", 9, 2, 2)), old: []rsState{rs("v1", 1, 2, 2)},
		},
		{
			name: "no ReplicaSet at all (paused before the first rollout)", b: bounds{3, 1, 0}, rolling: true,
		},
		{
			name: "nothing to do", b: bounds{3, 1, 0}, rolling: true,
			newRS: ptr(rs("new", 9, 3, 3)),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stepStrings(planScale(tc.b, tc.rolling, tc.newRS, tc.old, tc.statusReplicas))
			if !slices.Equal(got, tc.want) {
				t.Errorf("planScale = %q, want %q", got, tc.want)
			}
		})
	}
}
