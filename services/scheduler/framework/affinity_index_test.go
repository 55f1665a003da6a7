package framework_test

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/framework"
)

const (
	hostKey = "kubernetes.io/hostname"
	zoneKey = "topology.kubernetes.io/zone"
)

// zoneNode is a node with a hostname label and, unless z is "", a zone.
func zoneNode(name, z string) *corev1.Node {
	l := map[string]string{hostKey: name}
	if z != "" {
		l[zoneKey] = z
	}
	return &corev1.Node{Metadata: &metav1.ObjectMeta{Name: name, Labels: l}}
}

// labelled is a pod in ns with labels kv (key, value, ...).
func labelled(ns, name string, kv ...string) *corev1.Pod {
	l := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name, Uid: ns + "/" + name, Labels: l},
		Spec:     &corev1.PodSpec{},
	}
}

// sel is a label selector of matchLabels kv and the given expressions.
func sel(exprs []*metav1.LabelSelectorRequirement, kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchExpressions: exprs}
	if len(kv) > 0 {
		s.MatchLabels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			s.MatchLabels[kv[i]] = kv[i+1]
		}
	}
	return s
}

func antiTerm(key string, s *metav1.LabelSelector, namespaces ...string) *corev1.PodAffinityTerm {
	return &corev1.PodAffinityTerm{LabelSelector: s, TopologyKey: key, Namespaces: namespaces}
}

// withAnti gives p required anti-affinity terms.
func withAnti(p *corev1.Pod, ts ...*corev1.PodAffinityTerm) *corev1.Pod {
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: ts}}
	return p
}

func infos(pods ...*corev1.Pod) []*framework.PodInfo {
	var out []*framework.PodInfo
	for _, p := range pods {
		out = append(out, framework.NewPodInfo(p))
	}
	return out
}

// antiTermsFor lists the anti-affinity terms the index offers for pod, as
// "selector@topologyKey {value:count ...}", sorted.
func antiTermsFor(x *framework.AffinityIndex, pod *corev1.Pod) []string {
	var out []string
	x.ForEachAntiAffinityTerm(pod, func(t *framework.AffinityTerm, counts map[string]int64) {
		var cs []string
		for _, v := range slices.Sorted(maps.Keys(counts)) {
			cs = append(cs, v+":"+strconv.FormatInt(counts[v], 10))
		}
		out = append(out, t.Selector.String()+"@"+t.TopologyKey+" {"+strings.Join(cs, " ")+"}")
	})
	slices.Sort(out)
	return out
}

// Identical terms (the same namespace set, selector and topology key) are
// kept once, with their instances counted per domain; a pod on a node
// without the topology key keeps the term but counts in no domain.
func TestAffinityIndexKeepsIdenticalTermsOnce(t *testing.T) {
	webZone := func(name string, ns ...string) *corev1.Pod {
		return withAnti(labelled("default", name, "app", "db"), antiTerm(zoneKey, sel(nil, "app", "web"), ns...))
	}
	n1 := framework.NewNodeInfo(zoneNode("n1", "a"), infos(webZone("p1", "default", "prod"))...)
	n2 := framework.NewNodeInfo(zoneNode("n2", "a"), infos(webZone("p2", "prod", "default", "prod"))...)
	n3 := framework.NewNodeInfo(zoneNode("n3", "b"), infos(webZone("p3", "prod", "default"))...)
	n4 := framework.NewNodeInfo(zoneNode("n4", ""), infos(webZone("p4", "default", "prod"))...)
	// The pod's own namespace (no namespaces named) is another term.
	n5 := framework.NewNodeInfo(zoneNode("n5", "b"), infos(webZone("p5"))...)
	s := framework.NewSnapshot(n1, n2, n3, n4, n5)
	x := s.AffinityIndex

	got := x.String()
	for _, want := range []string{
		"anti \"topology.kubernetes.io/zone | default,prod | <nothing> | app=web\" refs=4 a:2 b:1\n",
		"anti \"topology.kubernetes.io/zone | default | <nothing> | app=web\" refs=1 b:1\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("index lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "anti "); n != 2 {
		t.Errorf("%d distinct terms, want 2:\n%s", n, got)
	}
	want := []string{"app=web@" + zoneKey + " {a:2 b:1}", "app=web@" + zoneKey + " {b:1}"}
	if got := antiTermsFor(x, labelled("default", "w", "app", "web")); !slices.Equal(got, want) {
		t.Errorf("terms for an app=web pod: %v, want %v", got, want)
	}
	if got := antiTermsFor(x, labelled("default", "d", "app", "db")); len(got) != 0 {
		t.Errorf("terms for an app=db pod: %v, want none (filed under app=web)", got)
	}
}

// CopyNodeInfo keeps the index in step with a node's pods and labels; a
// term leaves the index with its last instance.
func TestAffinityIndexFollowsNodeChanges(t *testing.T) {
	anti := func(name, app string) *framework.PodInfo {
		return framework.NewPodInfo(withAnti(labelled("default", name, "app", app), antiTerm(zoneKey, sel(nil, "app", "web"))))
	}
	p1, p2, plain := anti("p1", "web"), anti("p2", "db"), framework.NewPodInfo(labelled("default", "plain", "app", "web", "tier", "fe"))
	cacheNode := framework.NewNodeInfo(zoneNode("n1", "a"), p1)
	s := framework.NewEmptySnapshot()
	snapNode := cacheNode.Clone()
	s.NodeInfoMap["n1"] = snapNode
	s.IndexNodeInfo(snapNode)
	check := func(step string, want string) {
		t.Helper()
		if got := s.AffinityIndex.String(); got != want {
			t.Fatalf("%s: index\n%s\nwant\n%s", step, got, want)
		}
		// The same as an index built from scratch.
		fresh := framework.NewSnapshot(snapNode.Clone())
		if got := fresh.AffinityIndex.String(); got != want {
			t.Fatalf("%s: a fresh index\n%s\nwant\n%s", step, got, want)
		}
	}
	term := `anti "topology.kubernetes.io/zone | default | <nothing> | app=web"`
	check("one pod", term+" refs=1 a:1\npods default app=web [p1@n1]\nscoring 0\n")

	cacheNode.AddPod(p2)
	cacheNode.AddPod(plain)
	s.CopyNodeInfo(cacheNode, snapNode)
	check("three pods", term+" refs=2 a:2\npods default app=db [p2@n1]\npods default app=web [p1@n1 plain@n1]\npods default tier=fe [plain@n1]\nscoring 0\n")

	relabelled := cacheNode.Clone()
	relabelled.SetNode(zoneNode("n1", "b"))
	s.CopyNodeInfo(relabelled, snapNode)
	check("moved to zone b", term+" refs=2 b:2\npods default app=db [p2@n1]\npods default app=web [p1@n1 plain@n1]\npods default tier=fe [plain@n1]\nscoring 0\n")

	relabelled.RemovePod(p1)
	relabelled.RemovePod(plain)
	s.CopyNodeInfo(relabelled, snapNode)
	check("p1 and plain gone", term+" refs=1 b:1\npods default app=db [p2@n1]\nscoring 0\n")

	relabelled.RemovePod(p2)
	s.CopyNodeInfo(relabelled, snapNode)
	check("empty", "scoring 0\n")

	s.UnindexNodeInfo(snapNode)
	check("node gone", "scoring 0\n")
}

// A term is filed under one label pair its selector requires (matchLabels
// or an In of one value), so only pods with that label see it; a term
// requiring no pair is offered for every pod.
func TestAffinityIndexPairs(t *testing.T) {
	in := func(key string, values ...string) *metav1.LabelSelectorRequirement {
		return &metav1.LabelSelectorRequirement{Key: key, Operator: "In", Values: values}
	}
	exists := &metav1.LabelSelectorRequirement{Key: "app", Operator: "Exists"}
	pods := infos(
		withAnti(labelled("default", "p1"), antiTerm(hostKey, sel([]*metav1.LabelSelectorRequirement{in("app", "web")}))),
		withAnti(labelled("default", "p2"), antiTerm(hostKey, sel([]*metav1.LabelSelectorRequirement{in("app", "web", "db")}))),
		withAnti(labelled("default", "p3"), antiTerm(hostKey, sel([]*metav1.LabelSelectorRequirement{exists}))),
		withAnti(labelled("default", "p4"), antiTerm(hostKey, nil)), // nil selector: matches nothing
		// Two pairs: filed under the one with fewer terms (group).
		withAnti(labelled("default", "p5"), antiTerm(hostKey, sel(nil, "app", "web", "group", "g1"))),
	)
	x := framework.NewSnapshot(framework.NewNodeInfo(zoneNode("n1", "a"), pods...)).AffinityIndex
	web := antiTermsFor(x, labelled("default", "w", "app", "web"))
	want := []string{
		"<nothing>@" + hostKey + " {n1:1}",
		"app in (db,web)@" + hostKey + " {n1:1}",
		"app in (web)@" + hostKey + " {n1:1}",
		"app@" + hostKey + " {n1:1}",
	}
	if !slices.Equal(web, want) {
		t.Errorf("terms for app=web: %v, want %v", web, want)
	}
	other := antiTermsFor(x, labelled("default", "o", "tier", "fe"))
	if want := []string{"<nothing>@" + hostKey + " {n1:1}", "app in (db,web)@" + hostKey + " {n1:1}", "app@" + hostKey + " {n1:1}"}; !slices.Equal(other, want) {
		t.Errorf("terms for tier=fe: %v, want the unpaired %v", other, want)
	}
	g1 := antiTermsFor(x, labelled("default", "g", "group", "g1"))
	if !slices.Contains(g1, "app=web,group=g1@"+hostKey+" {n1:1}") {
		t.Errorf("terms for group=g1: %v, want app=web,group=g1 among them", g1)
	}
}

// ForEachCandidatePod offers the pods of the term's namespaces (once each,
// every namespace for a namespaceSelector {}) having its rarest required
// pair; it declines terms without one.
func TestAffinityIndexCandidatePods(t *testing.T) {
	pods := infos(
		labelled("a", "a1", "app", "web", "tier", "fe"),
		labelled("a", "a2", "app", "web", "tier", "be"),
		labelled("a", "a3", "app", "db"),
		labelled("b", "b1", "app", "web", "tier", "fe"),
		labelled("c", "c1", "app", "web", "tier", "fe"),
	)
	s := framework.NewSnapshot(
		framework.NewNodeInfo(zoneNode("n1", "a"), pods[:3]...),
		framework.NewNodeInfo(zoneNode("n2", "a"), pods[3:]...),
	)
	parse := func(pt *corev1.PodAffinityTerm) []framework.AffinityTerm {
		t.Helper()
		pi := framework.NewPodInfo(withAnti(labelled("a", "incoming"), pt))
		if pi.AffinityError != nil {
			t.Fatal(pi.AffinityError)
		}
		return pi.RequiredAntiAffinityTerms
	}
	candidates := func(terms []framework.AffinityTerm) ([]string, bool) {
		var out []string
		ok := s.AffinityIndex.ForEachCandidatePod(terms, func(p *framework.PodInfo, ni *framework.NodeInfo) {
			out = append(out, p.Pod.GetMetadata().GetName()+"@"+ni.Name())
		})
		slices.Sort(out)
		return out, ok
	}
	for _, tc := range []struct {
		name   string
		term   *corev1.PodAffinityTerm
		nsAll  bool
		want   []string
		wantOK bool
	}{
		{"the pod's own namespace", antiTerm(hostKey, sel(nil, "app", "web")), false, []string{"a1@n1", "a2@n1"}, true},
		{"named namespaces, once each", antiTerm(hostKey, sel(nil, "app", "web"), "b", "a", "b"), false, []string{"a1@n1", "a2@n1", "b1@n2"}, true},
		{"the rarest pair", antiTerm(hostKey, sel(nil, "app", "web", "tier", "be")), false, []string{"a2@n1"}, true},
		{"every namespace", antiTerm(hostKey, sel(nil, "tier", "fe")), true, []string{"a1@n1", "b1@n2", "c1@n2"}, true},
		{"no pod has the pair", antiTerm(hostKey, sel(nil, "app", "cache")), false, nil, true},
		{"a nil selector matches nothing", antiTerm(hostKey, nil), false, nil, true},
		{"no required pair", antiTerm(hostKey, sel([]*metav1.LabelSelectorRequirement{{Key: "app", Operator: "Exists"}})), false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.nsAll {
				tc.term.NamespaceSelector = &metav1.LabelSelector{}
			}
			got, ok := candidates(parse(tc.term))
			if ok != tc.wantOK || !slices.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
	// Several terms (required affinity, all to match): the rarest pair of
	// any of them.
	both := append(parse(antiTerm(hostKey, sel(nil, "app", "web"))), parse(antiTerm(zoneKey, sel(nil, "tier", "be")))...)
	if got, ok := candidates(both); !ok || !slices.Equal(got, []string{"a2@n1"}) {
		t.Errorf("two terms: got %v, %v; want [a2@n1], true", got, ok)
	}
}

// The scoring terms (required affinity at HardPodAffinityWeight,
// preferred affinity at its weight, preferred anti-affinity at minus its
// weight) are kept once per distinct term with their weights summed per
// domain; required anti-affinity does not score.
func TestAffinityIndexScoringTerms(t *testing.T) {
	webHost := func() *corev1.PodAffinityTerm { return antiTerm(hostKey, sel(nil, "app", "web")) }
	p1 := labelled("default", "p1", "app", "db")
	p1.Spec.Affinity = &corev1.Affinity{
		PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  []*corev1.PodAffinityTerm{webHost()},
			PreferredDuringSchedulingIgnoredDuringExecution: []*corev1.WeightedPodAffinityTerm{{Weight: 10, PodAffinityTerm: webHost()}},
		},
		PodAntiAffinity: &corev1.PodAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []*corev1.WeightedPodAffinityTerm{{Weight: 4, PodAffinityTerm: webHost()}},
		},
	}
	p2 := labelled("default", "p2", "app", "db")
	p2.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []*corev1.WeightedPodAffinityTerm{{Weight: 30, PodAffinityTerm: webHost()}},
	}}
	p3 := withAnti(labelled("default", "p3", "app", "db"), webHost())
	s := framework.NewSnapshot(
		framework.NewNodeInfo(zoneNode("n1", "a"), infos(p1)...),
		framework.NewNodeInfo(zoneNode("n2", "a"), infos(p2, p3)...),
	)
	type seen struct {
		sel            string
		counts, weight map[string]int64
	}
	var got []seen
	s.AffinityIndex.ForEachScoringTerm(labelled("default", "w", "app", "web"), func(t *framework.AffinityTerm, counts, weights map[string]int64) {
		got = append(got, seen{t.Selector.String(), maps.Clone(counts), maps.Clone(weights)})
	})
	if len(got) != 1 || got[0].sel != "app=web" ||
		!maps.Equal(got[0].counts, map[string]int64{"n1": 3, "n2": 1}) ||
		!maps.Equal(got[0].weight, map[string]int64{"n1": 1 + 10 - 4, "n2": -30}) {
		t.Fatalf("scoring terms for app=web: %+v; want one app=web with counts n1:3 n2:1, weights n1:7 n2:-30", got)
	}
	if !s.AffinityIndex.HasScoringPods() {
		t.Error("HasScoringPods = false")
	}
	if !strings.Contains(s.AffinityIndex.String(), "scoring 2\n") {
		t.Errorf("want 2 scoring pods (p3's required anti-affinity does not score):\n%s", s.AffinityIndex)
	}
}
