package cache

import (
	"testing"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/scheduler/framework"
)

// antiPod is a pod on node with a required anti-affinity term on hostname
// against pods labelled app=web.
func antiPod(name, node string) *framework.PodInfo {
	return framework.NewPodInfo(&corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name, Uid: "uid-" + name, Labels: map[string]string{"app": "web"}},
		Spec: &corev1.PodSpec{NodeName: node, Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				TopologyKey:   "kubernetes.io/hostname",
			}},
		}}},
	})
}

func nodeNames(list []*framework.NodeInfo) []string {
	var out []string
	for _, n := range list {
		out = append(out, n.Name())
	}
	return out
}

// The snapshot lists the nodes holding pods with affinity, as pods come
// and go, so that InterPodAffinity reads those nodes only.
func TestSnapshotListsNodesWithAffinityPods(t *testing.T) {
	c := New(0, nil)
	c.AddNode(node("n1"))
	c.AddNode(node("n2"))
	snap := framework.NewEmptySnapshot()
	c.UpdateSnapshot(snap)
	if got := nodeNames(snap.HavePodsWithRequiredAntiAffinityList); len(got) != 0 {
		t.Fatalf("no pods yet: nodes with anti-affinity pods = %v", got)
	}

	a := antiPod("a", "n2")
	c.AddPod(a)
	c.AddPod(bound(pod("plain", "1"), "n1"))
	c.UpdateSnapshot(snap)
	if got := nodeNames(snap.HavePodsWithRequiredAntiAffinityList); len(got) != 1 || got[0] != "n2" {
		t.Fatalf("nodes with anti-affinity pods = %v, want [n2]", got)
	}
	if got := nodeNames(snap.HavePodsWithAffinityList); len(got) != 1 || got[0] != "n2" {
		t.Fatalf("nodes with affinity pods = %v, want [n2]", got)
	}
	if n := snap.Get("n2"); len(n.PodsWithRequiredAntiAffinity) != 1 || len(n.Pods) != 1 {
		t.Fatalf("n2: %d pods, %d with anti-affinity; want 1, 1", len(n.Pods), len(n.PodsWithRequiredAntiAffinity))
	}

	c.RemovePod(a.Pod)
	c.UpdateSnapshot(snap)
	if got := nodeNames(snap.HavePodsWithRequiredAntiAffinityList); len(got) != 0 {
		t.Fatalf("after the pod left: nodes with anti-affinity pods = %v", got)
	}
	if n := snap.Get("n2"); len(n.PodsWithAffinity) != 0 {
		t.Fatalf("n2 still lists %d pods with affinity", len(n.PodsWithAffinity))
	}
}

// A bound pod's new labels reach the snapshot even though its requests
// did not change (spread and affinity match pods by label).
func TestLabelChangeReachesSnapshot(t *testing.T) {
	c := New(0, nil)
	c.AddNode(node("n1"))
	a := antiPod("a", "n1")
	c.AddPod(a)
	snap := framework.NewEmptySnapshot()
	c.UpdateSnapshot(snap)

	p := proto.Clone(a.Pod).(*corev1.Pod)
	p.Metadata.Labels = map[string]string{"app": "db"}
	c.UpdatePod(framework.NewPodInfo(p))
	c.UpdateSnapshot(snap)
	n := snap.Get("n1")
	if got := n.Pods[0].Pod.GetMetadata().GetLabels()["app"]; got != "db" {
		t.Errorf("snapshot pod label app=%q, want db", got)
	}
	if got := n.PodsWithRequiredAntiAffinity[0].Pod.GetMetadata().GetLabels()["app"]; got != "db" {
		t.Errorf("snapshot anti-affinity list label app=%q, want db", got)
	}
}
