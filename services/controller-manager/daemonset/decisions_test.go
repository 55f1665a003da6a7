package daemonset

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/labels"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

var t0 = time.Unix(1_000_000, 0)

func node(name string, labels map[string]string, taints ...*corev1.Taint) *corev1.Node {
	return &corev1.Node{Metadata: &metav1.ObjectMeta{Name: name, Labels: labels}, Spec: &corev1.NodeSpec{Taints: taints}}
}

func taint(key, effect string) *corev1.Taint { return &corev1.Taint{Key: key, Effect: effect} }

func dsWith(mutate func(*corev1.PodSpec)) *appsv1.DaemonSet {
	spec := &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "i"}}}
	if mutate != nil {
		mutate(spec)
	}
	return &appsv1.DaemonSet{
		Metadata: &metav1.ObjectMeta{Name: "ds", Namespace: "default", Uid: "ds-uid", Generation: 3},
		Spec: &appsv1.DaemonSetSpec{
			Template:       &corev1.PodTemplateSpec{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "ds"}}, Spec: spec},
			UpdateStrategy: &appsv1.DaemonSetUpdateStrategy{Type: "RollingUpdate", RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: intOr(1), MaxSurge: intOr(0)}},
		},
	}
}

func intOr(i int32) *metav1.IntOrString {
	return &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: i}}
}

func pctOr(s string) *metav1.IntOrString {
	return &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: s}}
}

func TestNodeShouldRunDaemonPod(t *testing.T) {
	ssd := map[string]string{"disk": "ssd"}
	cases := []struct {
		name string
		node *corev1.Node
		ds   *appsv1.DaemonSet
		want Fit
	}{
		{"plain node", node("n", nil), dsWith(nil), Fit{true, true}},
		{"nodeSelector matches", node("n", ssd), dsWith(func(s *corev1.PodSpec) { s.NodeSelector = ssd }), Fit{true, true}},
		{"nodeSelector does not", node("n", nil), dsWith(func(s *corev1.PodSpec) { s.NodeSelector = ssd }), Fit{}},
		{"template nodeName elsewhere", node("n", nil), dsWith(func(s *corev1.PodSpec) { s.NodeName = "m" }), Fit{}},
		{"required affinity excludes", node("n", ssd), dsWith(func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []*corev1.NodeSelectorTerm{{MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "disk", Operator: "NotIn", Values: []string{"ssd"}}}}},
			}}}
		}), Fit{}},
		{"required affinity admits", node("n", ssd), dsWith(func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []*corev1.NodeSelectorTerm{{MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "disk", Operator: "Exists"}}}},
			}}}
		}), Fit{true, true}},
		{"untolerated NoSchedule: may continue", node("n", nil, taint("dedicated", "NoSchedule")), dsWith(nil), Fit{false, true}},
		{"untolerated NoExecute: neither", node("n", nil, taint("dedicated", "NoExecute")), dsWith(nil), Fit{}},
		{"PreferNoSchedule does not count", node("n", nil, taint("dedicated", "PreferNoSchedule")), dsWith(nil), Fit{true, true}},
		{"tolerated by the template", node("n", nil, taint("dedicated", "NoExecute")), dsWith(func(s *corev1.PodSpec) {
			s.Tolerations = []*corev1.Toleration{{Key: "dedicated", Operator: "Exists"}}
		}), Fit{true, true}},
		{"not-ready NoExecute tolerated by the controller", node("n", nil, taint(TaintNotReady, "NoExecute")), dsWith(nil), Fit{true, true}},
		{"unreachable NoExecute tolerated", node("n", nil, taint(TaintUnreachable, "NoExecute")), dsWith(nil), Fit{true, true}},
		{"unschedulable tolerated", node("n", nil, taint(TaintUnschedulable, "NoSchedule")), dsWith(nil), Fit{true, true}},
		{"disk-pressure tolerated", node("n", nil, taint(TaintDiskPressure, "NoSchedule")), dsWith(nil), Fit{true, true}},
		{"network-unavailable: not without hostNetwork", node("n", nil, taint(TaintNetworkUnavailable, "NoSchedule")), dsWith(nil), Fit{false, true}},
		{"network-unavailable: tolerated with hostNetwork", node("n", nil, taint(TaintNetworkUnavailable, "NoSchedule")),
			dsWith(func(s *corev1.PodSpec) { s.HostNetwork = true }), Fit{true, true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NodeShouldRunDaemonPod(tc.node, tc.ds); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNewPod(t *testing.T) {
	ds := dsWith(func(s *corev1.PodSpec) {
		s.Tolerations = []*corev1.Toleration{{Key: TaintNotReady, Operator: "Exists", Effect: "NoExecute", TolerationSeconds: ptr[int64](5)}}
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []*corev1.NodeSelectorTerm{{MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "a", Operator: "Exists"}}}}},
		}}
	})
	p := NewPod(ds, "n7", "h1", 3)
	if got := TargetNode(p); got != "n7" {
		t.Errorf("TargetNode = %q", got)
	}
	terms := p.GetSpec().GetAffinity().GetNodeAffinity().GetRequiredDuringSchedulingIgnoredDuringExecution().GetNodeSelectorTerms()
	if len(terms) != 1 || len(terms[0].GetMatchExpressions()) != 0 {
		t.Errorf("required terms %v, want only matchFields", terms)
	}
	if l := p.GetMetadata().GetLabels(); l["app"] != "ds" || l[RevisionLabel] != "h1" || l[TemplateGenerationLabel] != "3" {
		t.Errorf("labels %v", l)
	}
	if p.GetMetadata().GetGenerateName() != "ds-" || p.GetMetadata().GetOwnerReferences()[0].GetUid() != "ds-uid" {
		t.Errorf("meta %v", p.GetMetadata())
	}
	tols := p.GetSpec().GetTolerations()
	if len(tols) != 6 {
		t.Fatalf("%d tolerations, want 6: %v", len(tols), tols)
	}
	if tols[0].TolerationSeconds != nil {
		t.Errorf("the not-ready toleration keeps tolerationSeconds: %v", tols[0])
	}
	// The template is untouched.
	if len(ds.Spec.Template.Spec.Tolerations) != 1 || len(ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions) != 1 {
		t.Error("NewPod changed the template")
	}
}

func ptr[T any](v T) *T { return &v }

// pod is a daemon pod named name on node (bound when bound), created at
// t0+age seconds, with revision hash, ready when ready.
func pod(name, nodeName, hash string, age int, bound, ready bool) *corev1.Pod {
	p := NewPod(dsWith(nil), nodeName, hash, 1)
	p.Metadata.Name = name
	p.Metadata.CreationTimestamp = timestamppb.New(t0.Add(time.Duration(age) * time.Second))
	p.Status = &corev1.PodStatus{Phase: "Pending"}
	if bound {
		p.Spec.NodeName = nodeName
	}
	if ready {
		p.Status.Phase = "Running"
		p.Status.Conditions = []*corev1.PodCondition{{Type: "Ready", Status: "True", LastTransitionTime: timestamppb.New(t0)}}
	}
	return p
}

func withPhase(p *corev1.Pod, phase string) *corev1.Pod { p.Status.Phase = phase; return p }
func deleting(p *corev1.Pod) *corev1.Pod {
	p.Metadata.DeletionTimestamp = timestamppb.New(t0)
	return p
}

func state(ds *appsv1.DaemonSet, nodes []Node, pods ...*corev1.Pod) State {
	return State{DS: ds, Hash: "new", Nodes: nodes, Pods: groupByNode(pods), Now: t0.Add(time.Hour)}
}

func run(names ...string) []Node {
	var out []Node
	for _, n := range names {
		out = append(out, Node{Name: n, Fit: Fit{true, true}})
	}
	return out
}

func podNames(ps []*corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.GetMetadata().GetName())
	}
	slices.Sort(out)
	return out
}

func TestManage(t *testing.T) {
	surge := dsWith(nil)
	surge.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: intOr(0), MaxSurge: intOr(1)}
	cases := []struct {
		name      string
		s         State
		create    []string
		del       []string
		failed    int
		backedOff []string
	}{
		{"nodes without pods get one", state(dsWith(nil), run("a", "b"), pod("pa", "a", "new", 0, true, true)), []string{"b"}, nil, 0, nil},
		{"a pending unbound pod counts for its node", state(dsWith(nil), run("a"), pod("pa", "a", "new", 0, false, false)), nil, nil, 0, nil},
		{"node that should not run: its pods go", state(dsWith(nil), []Node{{Name: "a"}}, pod("pa", "a", "new", 0, true, true)), nil, []string{"pa"}, 0, nil},
		{"NoSchedule-tainted node keeps its pod", state(dsWith(nil), []Node{{Name: "a", Fit: Fit{false, true}}}, pod("pa", "a", "new", 0, true, true)), nil, nil, 0, nil},
		{"NoSchedule-tainted node gets no new pod", state(dsWith(nil), []Node{{Name: "a", Fit: Fit{false, true}}}), nil, nil, 0, nil},
		{"pods being deleted are left alone", state(dsWith(nil), []Node{{Name: "a"}}, deleting(pod("pa", "a", "new", 0, true, true))), nil, nil, 0, nil},
		{"failed pod deleted", state(dsWith(nil), run("a"), withPhase(pod("pa", "a", "new", 0, true, false), "Failed")), nil, []string{"pa"}, 1, nil},
		{"succeeded pod deleted", state(dsWith(nil), run("a"), withPhase(pod("pa", "a", "new", 0, true, false), "Succeeded")), nil, []string{"pa"}, 0, nil},
		{"two pods without surge: the oldest stays", state(dsWith(nil), run("a"), pod("p1", "a", "old", 0, true, true), pod("p2", "a", "new", 5, true, true)), nil, []string{"p2"}, 0, nil},
		{"surge: new not available, old ready: both stay", state(surge, run("a"), pod("p1", "a", "old", 0, true, true), pod("p2", "a", "new", 5, true, false)), nil, nil, 0, nil},
		{"surge: new available: old goes", state(surge, run("a"), pod("p1", "a", "old", 0, true, true), pod("p2", "a", "new", 5, true, true)), nil, []string{"p1"}, 0, nil},
		{"surge: old not ready: old goes", state(surge, run("a"), pod("p1", "a", "old", 0, true, false), pod("p2", "a", "new", 5, true, false)), nil, []string{"p1"}, 0, nil},
		{"surge: a third pod goes", state(surge, run("a"), pod("p1", "a", "old", 0, true, true), pod("p2", "a", "new", 5, true, false), pod("p3", "a", "new", 9, true, false)), nil, []string{"p3"}, 0, nil},
		{"unbound pod of a node that is gone", state(dsWith(nil), run("a"), pod("pa", "a", "new", 0, true, true), pod("px", "gone", "new", 0, false, false)), nil, []string{"px"}, 0, nil},
		{"bound pod of a node that is gone: the pod GC's", state(dsWith(nil), run("a"), pod("pa", "a", "new", 0, true, true), pod("px", "gone", "new", 0, true, true)), nil, nil, 0, nil},
	}
	backoff := state(dsWith(nil), run("a"), withPhase(pod("pa", "a", "new", 0, true, false), "Failed"))
	backoff.InBackoff = func(string) bool { return true }
	cases = append(cases, struct {
		name      string
		s         State
		create    []string
		del       []string
		failed    int
		backedOff []string
	}{"failed pod in backoff waits", backoff, nil, nil, 0, []string{"a"}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Manage(tc.s)
			if !slices.Equal(p.CreateOn, tc.create) || !slices.Equal(podNames(p.Delete), tc.del) || len(p.Failed) != tc.failed || !slices.Equal(p.BackedOff, tc.backedOff) {
				t.Errorf("got create %v delete %v failed %d backedOff %v; want %v %v %d %v", p.CreateOn, podNames(p.Delete), len(p.Failed), p.BackedOff, tc.create, tc.del, tc.failed, tc.backedOff)
			}
		})
	}
}

func TestRollingUpdate(t *testing.T) {
	ru := func(u, s *metav1.IntOrString) *appsv1.DaemonSet {
		ds := dsWith(nil)
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: u, MaxSurge: s}
		return ds
	}
	old := func(i int, ready bool) *corev1.Pod {
		return pod(fmt.Sprintf("old-%d", i), fmt.Sprintf("n%d", i), "old", 0, true, ready)
	}
	nw := func(i int, ready bool) *corev1.Pod {
		return pod(fmt.Sprintf("new-%d", i), fmt.Sprintf("n%d", i), "new", 10, true, ready)
	}
	four := run("n0", "n1", "n2", "n3")
	cases := []struct {
		name   string
		s      State
		create []string
		del    []string
	}{
		{"maxUnavailable 1: one old pod goes", state(ru(intOr(1), intOr(0)), four, old(0, true), old(1, true), old(2, true), old(3, true)), nil, []string{"old-0"}},
		{"maxUnavailable 50%: two", state(ru(pctOr("50%"), intOr(0)), four, old(0, true), old(1, true), old(2, true), old(3, true)), nil, []string{"old-0", "old-1"}},
		{"25% of 3 rounds up to 1", state(ru(pctOr("25%"), intOr(0)), run("n0", "n1", "n2"), old(0, true), old(1, true), old(2, true)), nil, []string{"old-0"}},
		{"a new pod not yet available uses the budget", state(ru(intOr(1), intOr(0)), four, nw(0, false), old(1, true), old(2, true), old(3, true)), nil, nil},
		{"a node with no pod uses the budget", state(ru(intOr(1), intOr(0)), four, old(1, true), old(2, true), old(3, true)), nil, nil},
		{"an unavailable old pod is replaced regardless", state(ru(intOr(1), intOr(0)), four, nw(0, false), old(1, false), old(2, true), old(3, true)), nil, []string{"old-1"}},
		{"done: nothing", state(ru(intOr(1), intOr(0)), four, nw(0, true), nw(1, true), nw(2, true), nw(3, true)), nil, nil},
		{"surge 1: one new pod beside an old one", state(ru(intOr(0), intOr(1)), four, old(0, true), old(1, true), old(2, true), old(3, true)), []string{"n0"}, nil},
		{"surge: a new pod not yet available uses the budget", state(ru(intOr(0), intOr(1)), four, old(0, true), nw(0, false), old(1, true), old(2, true), old(3, true)), nil, nil},
		{"surge: new available, old goes, next node surges", state(ru(intOr(0), intOr(1)), four, old(0, true), nw(0, true), old(1, true), old(2, true), old(3, true)), []string{"n1"}, []string{"old-0"}},
		{"surge: an unavailable old pod gets its new one at once", state(ru(intOr(0), intOr(1)), four, old(0, true), nw(0, false), old(1, false), old(2, true), old(3, true)), []string{"n1"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := RollingUpdate(tc.s)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.CreateOn, tc.create) || !slices.Equal(podNames(p.Delete), tc.del) {
				t.Errorf("got create %v delete %v; want %v %v", p.CreateOn, podNames(p.Delete), tc.create, tc.del)
			}
		})
	}
}

func TestCounts(t *testing.T) {
	ds := dsWith(nil)
	ds.Spec.MinReadySeconds = 10
	nodes := []Node{{Name: "a", Fit: Fit{true, true}}, {Name: "b", Fit: Fit{true, true}}, {Name: "c", Fit: Fit{true, true}}, {Name: "d"}, {Name: "e", Fit: Fit{true, true}}}
	justReady := pod("pc", "c", "new", 0, true, true)
	justReady.Status.Conditions[0].LastTransitionTime = timestamppb.New(t0.Add(time.Hour - time.Second))
	s := state(ds, nodes,
		pod("pa", "a", "new", 0, true, true), // ready, available, updated
		pod("pb", "b", "old", 0, true, true), // ready, available, not updated
		justReady,                            // ready, not yet available
		pod("pd", "d", "new", 0, true, true), // misscheduled
	)
	got := Counts(s)
	want := &appsv1.DaemonSetStatus{DesiredNumberScheduled: 4, CurrentNumberScheduled: 3, NumberReady: 3, NumberAvailable: 2, UpdatedNumberScheduled: 2, NumberMisscheduled: 1, NumberUnavailable: 2, ObservedGeneration: 3}
	if got.String() != want.String() {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

func TestBackoff(t *testing.T) {
	now := t0
	b := newBackoff(func() time.Time { return now })
	if in, _ := b.inBackoff("k"); in {
		t.Fatal("in backoff before any failure")
	}
	b.next("k")
	if in, left := b.inBackoff("k"); !in || left != time.Second {
		t.Fatalf("after one failure: %v %v, want 1s", in, left)
	}
	now = now.Add(time.Second)
	if in, _ := b.inBackoff("k"); in {
		t.Fatal("still in backoff after 1s")
	}
	b.next("k")
	if _, left := b.inBackoff("k"); left != 2*time.Second {
		t.Fatalf("second delay %v, want 2s", left)
	}
	b.forget("k")
	if in, _ := b.inBackoff("k"); in {
		t.Fatal("forgotten key in backoff")
	}
}

func TestClaimPods(t *testing.T) {
	ds := dsWith(nil)
	sel, _ := labelsFor(map[string]string{"app": "ds"})
	mine := pod("mine", "a", "h", 0, true, true)
	mineUnmatched := pod("mine-unmatched", "a", "h", 0, true, true)
	mineUnmatched.Metadata.Labels = map[string]string{"app": "other"}
	orphan := pod("orphan", "a", "h", 0, true, true)
	orphan.Metadata.OwnerReferences = nil
	orphanDeleting := deleting(pod("orphan-deleting", "a", "h", 0, true, true))
	orphanDeleting.Metadata.OwnerReferences = nil
	others := pod("others", "a", "h", 0, true, true)
	others.Metadata.OwnerReferences[0].Uid = "someone-else"
	all := []*corev1.Pod{mine, mineUnmatched, orphan, orphanDeleting, others}

	c := controllerutil.ClaimPods(ds.GetMetadata(), sel, all)
	if got := podNames(c.Owned); !slices.Equal(got, []string{"mine"}) {
		t.Errorf("owned %v", got)
	}
	if got := podNames(c.Adopt); !slices.Equal(got, []string{"orphan"}) {
		t.Errorf("adopt %v", got)
	}
	if got := podNames(c.Release); !slices.Equal(got, []string{"mine-unmatched"}) {
		t.Errorf("release %v", got)
	}
	ds.Metadata.DeletionTimestamp = timestamppb.New(t0)
	c = controllerutil.ClaimPods(ds.GetMetadata(), sel, all)
	if len(c.Adopt) != 0 || len(c.Release) != 0 {
		t.Errorf("a DaemonSet being deleted adopts %v and releases %v", podNames(c.Adopt), podNames(c.Release))
	}
}

func labelsFor(m map[string]string) (labels.Selector, error) {
	return labels.FromProto(&metav1.LabelSelector{MatchLabels: m})
}
