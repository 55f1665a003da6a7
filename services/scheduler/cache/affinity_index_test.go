package cache

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/framework"
)

// freshIndex is the index built from scratch over s's nodes.
func freshIndex(s *framework.Snapshot) string {
	var nodes []*framework.NodeInfo
	for _, ni := range s.NodeInfoMap {
		nodes = append(nodes, ni.Clone())
	}
	return framework.NewSnapshot(nodes...).AffinityIndex.String()
}

// The snapshot's affinity index follows the cache through random pod and
// node changes (assume, confirm, forget, update with new labels, remove;
// node added, relabelled, removed), updated only for the nodes that
// changed: after every UpdateSnapshot it equals an index built from
// scratch over the snapshot's nodes.
func TestSnapshotAffinityIndexFollowsCache(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 18))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	nodeNamed := func(name string) *corev1.Node {
		n := node(name)
		n.Metadata.Labels = map[string]string{"kubernetes.io/hostname": name, "zone": pick("a", "b")}
		return n
	}
	podNamed := func(name string) *framework.PodInfo {
		p := &corev1.Pod{
			Metadata: &metav1.ObjectMeta{Namespace: pick("default", "prod"), Name: name, Uid: "uid-" + name,
				Labels: map[string]string{"app": pick("web", "db"), "group": pick("g1", "g2", "g3")}},
			Spec: &corev1.PodSpec{},
		}
		term := func() *corev1.PodAffinityTerm {
			return &corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"group": pick("g1", "g2", "g3")}},
				TopologyKey:   pick("kubernetes.io/hostname", "zone"),
			}
		}
		switch r.IntN(4) {
		case 0:
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{term()},
			}}
		case 1: // scoring terms: required affinity, preferred (anti-)affinity
			p.Spec.Affinity = &corev1.Affinity{
				PodAffinity: &corev1.PodAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution:  []*corev1.PodAffinityTerm{term()},
					PreferredDuringSchedulingIgnoredDuringExecution: []*corev1.WeightedPodAffinityTerm{{Weight: 1 + r.Int32N(100), PodAffinityTerm: term()}},
				},
				PodAntiAffinity: &corev1.PodAffinity{
					PreferredDuringSchedulingIgnoredDuringExecution: []*corev1.WeightedPodAffinityTerm{{Weight: 1 + r.Int32N(100), PodAffinityTerm: term()}},
				},
			}
		}
		return framework.NewPodInfo(p)
	}
	c := New(0, nil)
	snap := framework.NewEmptySnapshot()
	var pods []*framework.PodInfo // in the cache
	nodes := []string{"n0", "n1", "n2", "n3", "n4"}
	for _, n := range nodes[:3] {
		c.AddNode(nodeNamed(n))
	}
	for step := range 2000 {
		switch op := r.IntN(10); {
		case op < 3 || len(pods) == 0: // a pod assumed, or bound by the watch
			pi := podNamed(fmt.Sprintf("p%d", step))
			n := pick(nodes...)
			if r.IntN(2) == 0 {
				if err := c.AssumePod(pi, n); err != nil {
					t.Fatal(err)
				}
			} else {
				pi = bound(pi, n)
				c.AddPod(pi)
			}
			pods = append(pods, pi)
		case op < 5: // confirmed or updated where it is, sometimes relabelled
			i := r.IntN(len(pods))
			p := proto.Clone(pods[i].Pod).(*corev1.Pod)
			st := c.pods[pods[i].UID()]
			p.Spec.NodeName = st.node
			if r.IntN(2) == 0 {
				p.Metadata.Labels = map[string]string{"app": pick("web", "db"), "group": pick("g1", "g2", "g3")}
			}
			pods[i] = framework.NewPodInfo(p)
			c.UpdatePod(pods[i])
		case op < 7: // removed (or forgotten)
			i := r.IntN(len(pods))
			if c.IsAssumed(pods[i].UID()) && r.IntN(2) == 0 {
				if err := c.ForgetPod(pods[i]); err != nil {
					t.Fatal(err)
				}
			} else {
				c.RemovePod(pods[i].Pod)
			}
			pods = append(pods[:i], pods[i+1:]...)
		case op < 9: // a node added or relabelled
			c.AddNode(nodeNamed(pick(nodes...)))
		default:
			c.RemoveNode(node(pick(nodes...)))
		}
		if r.IntN(3) == 0 {
			continue // several changes between snapshots
		}
		c.UpdateSnapshot(snap)
		if got, want := snap.AffinityIndex.String(), freshIndex(snap); got != want {
			t.Fatalf("step %d: the snapshot's index\n%s\nbuilt from scratch\n%s", step, got, want)
		}
	}
}

// A snapshot without an index (made by hand) gets one built from its
// nodes on its first update.
func TestUpdateSnapshotBuildsMissingIndex(t *testing.T) {
	c := New(0, nil)
	c.AddNode(node("n1"))
	c.AddPod(antiPod("a", "n1"))
	snap := framework.NewEmptySnapshot()
	c.UpdateSnapshot(snap)
	want := snap.AffinityIndex.String()
	snap.AffinityIndex = nil
	c.UpdateSnapshot(snap)
	if snap.AffinityIndex == nil {
		t.Fatal("no index after the update")
	}
	if got := snap.AffinityIndex.String(); got != want {
		t.Fatalf("index\n%s\nwant\n%s", got, want)
	}
}
