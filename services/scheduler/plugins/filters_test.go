package plugins

import (
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/framework"
)

func TestNodeName(t *testing.T) {
	named := pod("p", "", "")
	named.Spec.NodeName = "b"
	cases := []struct {
		name string
		pod  *corev1.Pod
		node string
		want string
	}{
		{"no node name fits anywhere", pod("p", "", ""), "a", ""},
		{"the named node fits", named, "b", ""},
		{"another node does not", named, "a", "UnschedulableAndUnresolvable: " + ReasonNodeName},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := statusString(NodeNamePlugin{}.Filter(ctx, nil, framework.NewPodInfo(tc.pod), nodeInfo(node(tc.node, "1", "1Gi", "10"))))
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if _, s := (NodeNamePlugin{}).PreFilter(ctx, nil, framework.NewPodInfo(pod("p", "", ""))); !s.IsSkip() {
		t.Errorf("PreFilter without a node name: %v, want Skip", s)
	}
	if r, s := (NodeNamePlugin{}).PreFilter(ctx, nil, framework.NewPodInfo(named)); !s.IsSuccess() || len(r.NodeNames) != 1 {
		t.Errorf("PreFilter with a node name: %v %v", r, s)
	}
}

func TestNodeUnschedulable(t *testing.T) {
	cordoned := node("n", "1", "1Gi", "10")
	cordoned.Spec.Unschedulable = true
	tolerant := pod("p", "", "")
	tolerant.Spec.Tolerations = []*corev1.Toleration{{Key: "node.kubernetes.io/unschedulable", Operator: "Exists", Effect: "NoSchedule"}}
	cases := []struct {
		name string
		pod  *corev1.Pod
		node *corev1.Node
		want string
	}{
		{"schedulable node", pod("p", "", ""), node("n", "1", "1Gi", "10"), ""},
		{"cordoned node", pod("p", "", ""), cordoned, "UnschedulableAndUnresolvable: " + ReasonNodeUnschedulable},
		{"cordoned node, tolerated", tolerant, cordoned, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := statusString(NodeUnschedulablePlugin{}.Filter(ctx, nil, framework.NewPodInfo(tc.pod), nodeInfo(tc.node)))
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTolerates(t *testing.T) {
	taint := &corev1.Taint{Key: "dedicated", Value: "gpu", Effect: "NoSchedule"}
	cases := []struct {
		name string
		tol  *corev1.Toleration
		want bool
	}{
		{"equal key value effect", &corev1.Toleration{Key: "dedicated", Operator: "Equal", Value: "gpu", Effect: "NoSchedule"}, true},
		{"empty operator is Equal", &corev1.Toleration{Key: "dedicated", Value: "gpu"}, true},
		{"other value", &corev1.Toleration{Key: "dedicated", Value: "cpu"}, false},
		{"exists ignores the value", &corev1.Toleration{Key: "dedicated", Operator: "Exists"}, true},
		{"other effect", &corev1.Toleration{Key: "dedicated", Operator: "Exists", Effect: "NoExecute"}, false},
		{"empty key with Exists tolerates everything", &corev1.Toleration{Operator: "Exists"}, true},
		{"other key", &corev1.Toleration{Key: "zone", Operator: "Exists"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Tolerates(tc.tol, taint); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTaintTolerationFilter(t *testing.T) {
	gpu := &corev1.Taint{Key: "dedicated", Value: "gpu", Effect: "NoSchedule"}
	soft := &corev1.Taint{Key: "spot", Value: "true", Effect: "PreferNoSchedule"}
	noexec := &corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: "NoExecute"}
	tolerant := pod("p", "", "")
	tolerant.Spec.Tolerations = []*corev1.Toleration{{Key: "dedicated", Operator: "Equal", Value: "gpu", Effect: "NoSchedule"}}
	cases := []struct {
		name string
		pod  *corev1.Pod
		node *corev1.Node
		want string
	}{
		{"untainted node", pod("p", "", ""), node("n", "1", "1Gi", "10"), ""},
		{"NoSchedule taint", pod("p", "", ""), withTaints(node("n", "1", "1Gi", "10"), gpu), "UnschedulableAndUnresolvable: node(s) had untolerated taint {dedicated: gpu}"},
		{"tolerated", tolerant, withTaints(node("n", "1", "1Gi", "10"), gpu), ""},
		{"PreferNoSchedule does not filter", pod("p", "", ""), withTaints(node("n", "1", "1Gi", "10"), soft), ""},
		{"NoExecute filters", tolerant, withTaints(node("n", "1", "1Gi", "10"), gpu, noexec), "UnschedulableAndUnresolvable: node(s) had untolerated taint {node.kubernetes.io/unreachable: }"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := statusString(TaintTolerationPlugin{}.Filter(ctx, nil, framework.NewPodInfo(tc.pod), nodeInfo(tc.node)))
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTaintTolerationScore(t *testing.T) {
	soft := func(k string) *corev1.Taint { return &corev1.Taint{Key: k, Value: "x", Effect: "PreferNoSchedule"} }
	nodes := []*framework.NodeInfo{
		nodeInfo(node("clean", "1", "1Gi", "10")),
		nodeInfo(withTaints(node("one", "1", "1Gi", "10"), soft("a"))),
		nodeInfo(withTaints(node("two", "1", "1Gi", "10"), soft("a"), soft("b"))),
	}
	p := pod("p", "", "")
	p.Spec.Tolerations = []*corev1.Toleration{{Key: "b", Operator: "Exists"}}
	pi := framework.NewPodInfo(p)
	state := framework.NewCycleState()
	pl := TaintTolerationPlugin{}
	if s := pl.PreScore(ctx, state, pi, nodes); !s.IsSuccess() {
		t.Fatal(s)
	}
	scores := make([]framework.NodeScore, len(nodes))
	for i, n := range nodes {
		v, _ := pl.Score(ctx, state, pi, n)
		scores[i] = framework.NodeScore{Name: n.Name(), Score: v}
	}
	pl.NormalizeScore(ctx, state, pi, scores)
	// "two" has one intolerable taint (b is tolerated), like "one".
	want := []int64{100, 0, 0}
	for i, s := range scores {
		if s.Score != want[i] {
			t.Errorf("%s: got %d, want %d", s.Name, s.Score, want[i])
		}
	}
	if s := pl.PreScore(ctx, state, pi, nodes[:1]); !s.IsSkip() {
		t.Errorf("no PreferNoSchedule taint among the nodes: %v, want Skip", s)
	}
}

func TestNodeAffinityFilter(t *testing.T) {
	withSelector := func(sel map[string]string) *corev1.Pod {
		p := pod("p", "", "")
		p.Spec.NodeSelector = sel
		return p
	}
	withRequired := func(terms ...*corev1.NodeSelectorTerm) *corev1.Pod {
		p := pod("p", "", "")
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
		}}
		return p
	}
	expr := func(key, op string, values ...string) *corev1.NodeSelectorTerm {
		return &corev1.NodeSelectorTerm{MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	ssd := withLabels(node("ssd", "1", "1Gi", "10"), "disk", "ssd", "cores", "16")
	hdd := withLabels(node("hdd", "1", "1Gi", "10"), "disk", "hdd", "cores", "4")
	rejected := "UnschedulableAndUnresolvable: " + ReasonNodeAffinity
	cases := []struct {
		name string
		pod  *corev1.Pod
		node *corev1.Node
		want string
	}{
		{"selector matches", withSelector(map[string]string{"disk": "ssd"}), ssd, ""},
		{"selector does not match", withSelector(map[string]string{"disk": "ssd"}), hdd, rejected},
		{"selector on a missing label", withSelector(map[string]string{"gpu": "yes"}), ssd, rejected},
		{"In", withRequired(expr("disk", "In", "ssd", "nvme")), ssd, ""},
		{"In, no match", withRequired(expr("disk", "In", "nvme")), ssd, rejected},
		{"NotIn", withRequired(expr("disk", "NotIn", "hdd")), ssd, ""},
		{"NotIn on a missing label matches", withRequired(expr("gpu", "NotIn", "yes")), ssd, ""},
		{"Exists", withRequired(expr("disk", "Exists")), hdd, ""},
		{"DoesNotExist", withRequired(expr("disk", "DoesNotExist")), hdd, rejected},
		{"Gt", withRequired(expr("cores", "Gt", "8")), ssd, ""},
		{"Gt, no", withRequired(expr("cores", "Gt", "8")), hdd, rejected},
		{"Lt", withRequired(expr("cores", "Lt", "8")), hdd, ""},
		{"terms are ORed", withRequired(expr("disk", "In", "nvme"), expr("disk", "In", "hdd")), hdd, ""},
		{"an empty term matches nothing", withRequired(&corev1.NodeSelectorTerm{}), hdd, rejected},
		{"matchFields metadata.name", withRequired(&corev1.NodeSelectorTerm{MatchFields: []*corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: "In", Values: []string{"hdd"}}}}), hdd, ""},
		{"selector and affinity both apply", func() *corev1.Pod {
			p := withRequired(expr("disk", "Exists"))
			p.Spec.NodeSelector = map[string]string{"cores": "16"}
			return p
		}(), hdd, rejected},
	}
	pl := NodeAffinityPlugin{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state := framework.NewCycleState()
			pi := framework.NewPodInfo(tc.pod)
			if _, s := pl.PreFilter(ctx, state, pi); s.IsSkip() {
				t.Fatalf("PreFilter skipped a pod with a selector or affinity")
			}
			if got := statusString(pl.Filter(ctx, state, pi, nodeInfo(tc.node))); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if _, s := pl.PreFilter(ctx, framework.NewCycleState(), framework.NewPodInfo(pod("p", "", ""))); !s.IsSkip() {
		t.Errorf("a pod without selector or affinity should Skip, got %v", s)
	}
}

func TestNodeAffinityScore(t *testing.T) {
	p := pod("p", "", "")
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []*corev1.PreferredSchedulingTerm{
			{Weight: 10, Preference: &corev1.NodeSelectorTerm{MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "disk", Operator: "In", Values: []string{"ssd"}}}}},
			{Weight: 30, Preference: &corev1.NodeSelectorTerm{MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "zone", Operator: "In", Values: []string{"a"}}}}},
		},
	}}
	nodes := []*framework.NodeInfo{
		nodeInfo(withLabels(node("both", "1", "1Gi", "10"), "disk", "ssd", "zone", "a")),
		nodeInfo(withLabels(node("ssd", "1", "1Gi", "10"), "disk", "ssd")),
		nodeInfo(node("none", "1", "1Gi", "10")),
	}
	pl := NodeAffinityPlugin{}
	pi := framework.NewPodInfo(p)
	state := framework.NewCycleState()
	if s := pl.PreScore(ctx, state, pi, nodes); !s.IsSuccess() {
		t.Fatal(s)
	}
	scores := make([]framework.NodeScore, len(nodes))
	for i, n := range nodes {
		v, _ := pl.Score(ctx, state, pi, n)
		scores[i] = framework.NodeScore{Name: n.Name(), Score: v}
	}
	pl.NormalizeScore(ctx, state, pi, scores)
	want := []int64{100, 25, 0}
	for i, s := range scores {
		if s.Score != want[i] {
			t.Errorf("%s: got %d, want %d", s.Name, s.Score, want[i])
		}
	}
}
