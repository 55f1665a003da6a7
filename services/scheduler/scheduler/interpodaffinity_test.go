package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// podScheduledFalse waits until pod name has PodScheduled=False with
// reason and a message containing msg.
func (e *env) podScheduledFalse(name, reason, msg string) {
	e.t.Helper()
	e.await(10*time.Second, name+" PodScheduled=False "+reason, func() (bool, string) {
		p := e.pod(name)
		for _, c := range p.GetStatus().GetConditions() {
			if c.GetType() == "PodScheduled" && c.GetStatus() == "False" && c.GetReason() == reason && strings.Contains(c.GetMessage(), msg) {
				return p.GetSpec().GetNodeName() == "", describePod(p)
			}
		}
		return false, describePod(p)
	})
}

func affinityTerm(app string) *corev1.PodAffinityTerm {
	return &corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		TopologyKey:   "kubernetes.io/hostname",
	}
}

// TestAntiAffinityKeepsAPodPendingUntilANodeFrees: three pods that may
// not share a host, on two nodes: two are placed on different nodes, the
// third waits with Kubernetes' explanation, and is placed when one of the
// others is deleted.
func TestAntiAffinityKeepsAPodPendingUntilANodeFrees(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "n1", cpu: "4", mem: "4Gi"})
	e.createNode(nodeSpec{name: "n2", cpu: "4", mem: "4Gi"})
	e.startScheduler(Config{})
	web := func(name string) *corev1.Pod {
		p := newPod(name, "100m", "")
		p.Metadata.Labels["app"] = "web"
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{affinityTerm("web")},
		}}
		return p
	}
	e.createPod(web("w1"))
	e.createPod(web("w2"))
	n1, n2 := e.nodeOf("w1", 10*time.Second), e.nodeOf("w2", 10*time.Second)
	if n1 == n2 {
		t.Fatalf("w1 and w2 share node %s", n1)
	}
	e.createPod(web("w3"))
	e.podScheduledFalse("w3", "Unschedulable", "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.")

	// A pod deleted can make room: w3 takes w1's node.
	zero := int64(0)
	if _, err := client.Pods(e.conn).Delete(e.ctx, &metav1.DeleteRequest{Namespace: "test", Name: "w1", GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if n := e.nodeOf("w3", 10*time.Second); n != n1 {
		t.Errorf("w3 went to %s, want %s (w1's)", n, n1)
	}
}

// TestAffinityWaitsForAMatchingPod: a pod that must run beside a db pod
// waits, explained, until one is placed; then it goes to that node.
func TestAffinityWaitsForAMatchingPod(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "n1", cpu: "4", mem: "4Gi"})
	e.createNode(nodeSpec{name: "n2", cpu: "4", mem: "4Gi"})
	e.startScheduler(Config{})
	p := newPod("app", "100m", "")
	p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{affinityTerm("db")},
	}}
	e.createPod(p)
	e.podScheduledFalse("app", "Unschedulable", "0/2 nodes are available: 2 node(s) didn't match pod affinity rules.")

	db := newPod("db", "100m", "")
	db.Metadata.Labels["app"] = "db"
	db.Spec.NodeName = "n2"
	e.createPod(db)
	if n := e.nodeOf("app", 10*time.Second); n != "n2" {
		t.Errorf("app went to %s, want n2 (db's)", n)
	}
}

// TestExistingAntiAffinityIsSymmetric: a pod without terms stays off the
// node of a pod whose anti-affinity it matches.
func TestExistingAntiAffinityIsSymmetric(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "n1", cpu: "4", mem: "4Gi"})
	e.createNode(nodeSpec{name: "n2", cpu: "4", mem: "4Gi"})
	loner := newPod("loner", "100m", "")
	loner.Spec.NodeName = "n1"
	loner.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{affinityTerm("web")},
	}}
	e.createPod(loner)
	e.startScheduler(Config{})
	for i := range 4 {
		p := newPod(fmt.Sprintf("web-%d", i), "100m", "")
		p.Metadata.Labels["app"] = "web"
		e.createPod(p)
		if n := e.nodeOf(p.Metadata.Name, 10*time.Second); n != "n2" {
			t.Errorf("%s went to %s, want n2", p.Metadata.Name, n)
		}
	}
}

// TestAffinityNamespaceSelectorAndPreferredTerms: through the real
// apiserver and scheduler, a term looks at its own namespace's pods unless
// its namespaceSelector names others (a pod that must run beside a db in
// namespace data waits without it, and is placed on the db's node with
// it), and a preferred term draws a pod to the db's node although the
// other node is emptier.
func TestAffinityNamespaceSelectorAndPreferredTerms(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "n1", cpu: "4", mem: "4Gi"})
	e.createNode(nodeSpec{name: "n2", cpu: "4", mem: "4Gi"})
	if _, err := client.Namespaces(e.conn).Create(e.ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: "data", Labels: map[string]string{"team": "data"}}}); err != nil {
		t.Fatal(err)
	}
	db := newPod("db", "1", "")
	db.Metadata.Namespace = "data"
	db.Metadata.Labels["app"] = "db"
	db.Spec.NodeName = "n2"
	e.createPod(db)
	e.startScheduler(Config{})

	near := newPod("near", "100m", "")
	near.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{affinityTerm("db")},
	}}
	e.createPod(near)
	e.podScheduledFalse("near", "Unschedulable", "0/2 nodes are available: 2 node(s) didn't match pod affinity rules.")

	inData := func() *corev1.PodAffinityTerm {
		term := affinityTerm("db")
		term.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}}
		return term
	}
	across := newPod("across", "100m", "")
	across.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{inData()},
	}}
	e.createPod(across)
	if n := e.nodeOf("across", 10*time.Second); n != "n2" {
		t.Errorf("across went to %s, want n2 (the db's, in the namespace its namespaceSelector names)", n)
	}

	toward := newPod("toward", "100m", "")
	toward.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []*corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: inData()}},
	}}
	e.createPod(toward)
	if n := e.nodeOf("toward", 10*time.Second); n != "n2" {
		t.Errorf("toward went to %s, want n2 (preferred beside the db, though n1 is emptier)", n)
	}
}

// TestAffinityMatchLabelKeys: matchLabelKeys adds the pod's own values of
// those labels to its term's selector (at create, as Kubernetes does), so
// a rollout's new pods (another pod-template-hash) may share a node with
// the old ones they would otherwise repel, and not with each other.
func TestAffinityMatchLabelKeys(t *testing.T) {
	e := newEnv(t)
	e.createNode(nodeSpec{name: "n1", cpu: "4", mem: "4Gi"})
	e.startScheduler(Config{})
	web := func(name, hash string) *corev1.Pod {
		p := newPod(name, "100m", "")
		p.Metadata.Labels["app"] = "web"
		p.Metadata.Labels["pod-template-hash"] = hash
		term := affinityTerm("web")
		term.MatchLabelKeys = []string{"pod-template-hash"}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{term},
		}}
		return p
	}
	e.createPod(web("old", "aaa"))
	e.nodeOf("old", 10*time.Second)
	e.createPod(web("new", "bbb"))
	if n := e.nodeOf("new", 10*time.Second); n != "n1" {
		t.Errorf("new (another hash) went to %q, want n1 beside old", n)
	}
	e.createPod(web("new-2", "bbb"))
	e.podScheduledFalse("new-2", "Unschedulable", "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules.")
}
