package garbagecollector

import (
	"slices"
	"testing"

	metav1 "skiff.dev/proto/meta/v1"
)

func TestDecideDependent(t *testing.T) {
	twoOwners := obj("ConfigMap", "cm", "cm", ownedBy("a", true), ownedBy("b", false))
	cases := []struct {
		name          string
		node          *Node
		owners        map[string]ownerStatus
		hasDependents bool
		want          decision
	}{
		{"no owner", obj("Pod", "p", "p"), nil, false, decision{verdict: keep}},
		{"its owner is alive", obj("Pod", "p", "p", ownedBy("a", true)), map[string]ownerStatus{"a": ownerSolid}, false, decision{verdict: keep}},
		{"its owner is gone", obj("Pod", "p", "p", ownedBy("a", true)), map[string]ownerStatus{"a": ownerDangling}, false,
			decision{verdict: deleteIt, policy: propagationBackground}},
		{"one owner gone, the other alive: only the reference goes", twoOwners, map[string]ownerStatus{"a": ownerDangling, "b": ownerSolid}, false,
			decision{verdict: removeRefs, remove: []string{"a"}}},
		{"both owners gone", twoOwners, map[string]ownerStatus{"a": ownerDangling, "b": ownerDangling}, false,
			decision{verdict: deleteIt, policy: propagationBackground}},
		{"one owner waiting, the other alive: the waiting owner must not wait for it", twoOwners, map[string]ownerStatus{"a": ownerWaiting, "b": ownerSolid}, false,
			decision{verdict: removeRefs, remove: []string{"a"}}},
		{"one owner waiting, the other gone, no dependents: background", twoOwners, map[string]ownerStatus{"a": ownerWaiting, "b": ownerDangling}, false,
			decision{verdict: deleteIt, policy: propagationBackground}},
		{"its owner waits and it has dependents: foreground, so the wait covers them", obj("Pod", "p", "p", ownedBy("a", true)),
			map[string]ownerStatus{"a": ownerWaiting}, true, decision{verdict: deleteIt, policy: propagationForeground}},
		{"its owner is gone and it has dependents: background (they are collected after it)", obj("Pod", "p", "p", ownedBy("a", true)),
			map[string]ownerStatus{"a": ownerDangling}, true, decision{verdict: deleteIt, policy: propagationBackground}},
		{"an orphan finalizer it already carries is honoured", obj("Pod", "p", "p", ownedBy("a", true), func(n *Node) { n.Finalizers = []string{FinalizerOrphan} }),
			map[string]ownerStatus{"a": ownerDangling}, true, decision{verdict: deleteIt, policy: propagationOrphan}},
		{"a foregroundDeletion finalizer it already carries is honoured", obj("Pod", "p", "p", ownedBy("a", true), func(n *Node) { n.Finalizers = []string{FinalizerDeleteDependents} }),
			map[string]ownerStatus{"a": ownerDangling}, false, decision{verdict: deleteIt, policy: propagationForeground}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := decideDependent(c.node, c.owners, c.hasDependents)
			if got.verdict != c.want.verdict || got.policy != c.want.policy || !slices.Equal(got.remove, c.want.remove) {
				t.Errorf("decideDependent = %v %q %q, want %v %q %q", got.verdict, got.policy, got.remove, c.want.verdict, c.want.policy, c.want.remove)
			}
		})
	}
}

func TestPlanForeground(t *testing.T) {
	owner := obj("ReplicaSet", "rs", "rs", deleting(FinalizerDeleteDependents))
	cases := []struct {
		name      string
		deps      []*Node
		wantDone  bool
		wantNudge []string
	}{
		{"no dependents: done", nil, true, nil},
		{"only non-blocking dependents: done, they are not waited for", []*Node{obj("Pod", "p", "p", ownedBy("rs", false))}, true, nil},
		{"a blocking dependent not yet deleted: nudged", []*Node{obj("Pod", "p", "p", ownedBy("rs", true))}, false, []string{"p"}},
		{"a blocking dependent being deleted: waited for, not nudged", []*Node{obj("Pod", "p", "p", ownedBy("rs", true), deleting())}, false, nil},
		{"a blocking dependent deleting its own dependents: nudged", []*Node{obj("Pod", "p", "p", ownedBy("rs", true), deleting(FinalizerDeleteDependents))}, false, []string{"p"}},
		{"blocking on another owner only: done", []*Node{obj("Pod", "p", "p", ownedBy("other", true), ownedBy("rs", false))}, true, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := planForeground(owner, c.deps)
			if p.done != c.wantDone || !slices.Equal(p.nudge, c.wantNudge) {
				t.Errorf("planForeground = done %v nudge %q, want done %v nudge %q", p.done, p.nudge, c.wantDone, c.wantNudge)
			}
		})
	}
}

func TestDropOwnerRefs(t *testing.T) {
	refs := func(uids ...string) []*metav1.OwnerReference {
		var out []*metav1.OwnerReference
		for _, u := range uids {
			out = append(out, &metav1.OwnerReference{ApiVersion: "v1", Kind: "K", Name: u, Uid: u})
		}
		return out
	}
	cases := []struct {
		name        string
		have, drop  []string
		want        []string
		wantChanged bool
	}{
		{"one of two", []string{"a", "b"}, []string{"a"}, []string{"b"}, true},
		{"the only one", []string{"a"}, []string{"a"}, nil, true},
		{"not there", []string{"a"}, []string{"x"}, []string{"a"}, false},
		{"none", nil, []string{"x"}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &metav1.ObjectMeta{OwnerReferences: refs(c.have...)}
			changed := dropOwnerRefs(m, c.drop)
			var got []string
			for _, r := range m.OwnerReferences {
				got = append(got, r.Uid)
			}
			if changed != c.wantChanged || !slices.Equal(got, c.want) {
				t.Errorf("dropOwnerRefs = %v, refs %q; want %v, %q", changed, got, c.wantChanged, c.want)
			}
		})
	}
}

func TestDropFinalizer(t *testing.T) {
	cases := []struct {
		name        string
		have        []string
		drop        string
		want        []string
		wantChanged bool
	}{
		{"the only one", []string{FinalizerOrphan}, FinalizerOrphan, nil, true},
		{"others stay", []string{"skiff.dev/x", FinalizerDeleteDependents}, FinalizerDeleteDependents, []string{"skiff.dev/x"}, true},
		{"not there", []string{"skiff.dev/x"}, FinalizerOrphan, []string{"skiff.dev/x"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &metav1.ObjectMeta{Finalizers: slices.Clone(c.have)}
			changed := dropFinalizer(m, c.drop)
			if changed != c.wantChanged || !slices.Equal(m.Finalizers, c.want) {
				t.Errorf("dropFinalizer = %v, %q; want %v, %q", changed, m.Finalizers, c.wantChanged, c.want)
			}
		})
	}
}

func TestGroupKindOf(t *testing.T) {
	cases := []struct{ apiVersion, kind, want string }{
		{"v1", "Pod", "/Pod"},
		{"apps/v1", "ReplicaSet", "apps/ReplicaSet"},
		{"apps/v1beta1", "Deployment", "apps/Deployment"},
		{"coordination.k8s.io/v1", "Lease", "coordination.k8s.io/Lease"},
	}
	for _, c := range cases {
		if got := groupKindOf(c.apiVersion, c.kind); got != c.want {
			t.Errorf("groupKindOf(%q, %q) = %q, want %q", c.apiVersion, c.kind, got, c.want)
		}
	}
}

func TestResolveOwner(t *testing.T) {
	pod := obj("Pod", "p", "p", ownedBy("rs", true))
	clusterDep := obj("Node", "n", "n", ownedBy("rs", true), func(n *Node) { n.Namespace = "" })
	rs := obj("ReplicaSet", "rs", "rs")
	rsElsewhere := obj("ReplicaSet", "rs", "rs", func(n *Node) { n.Namespace = "other" })
	node := obj("Node", "node", "rs", func(n *Node) { n.Namespace = "" })
	fg := obj("ReplicaSet", "rs", "rs", deleting(FinalizerDeleteDependents))
	ref := pod.Owners[0]
	cases := []struct {
		name  string
		dep   *Node
		sc    scope
		state OwnerState
		owner *Node
		want  resolution
	}{
		{"present", pod, scopeNamespaced, OwnerPresent, rs, resolution{status: ownerSolid}},
		{"present, deleting its dependents", pod, scopeNamespaced, OwnerPresent, fg, resolution{status: ownerWaiting}},
		{"present, cluster-scoped owner of a namespaced object", pod, scopeCluster, OwnerPresent, node, resolution{status: ownerSolid}},
		{"known absent", pod, scopeNamespaced, OwnerAbsent, nil, resolution{status: ownerDangling}},
		{"unknown: look it up", pod, scopeNamespaced, OwnerUnknown, nil, resolution{lookup: true}},
		{"unknown cluster-scoped: look it up", pod, scopeCluster, OwnerUnknown, nil, resolution{lookup: true}},
		{"present in another namespace: absent for this dependent", pod, scopeNamespaced, OwnerPresent, rsElsewhere,
			resolution{status: ownerDangling, invalid: reasonOwnerRefInvalidNamespace}},
		{"a cluster-scoped object with a namespaced owner: unresolvable, kept", clusterDep, scopeNamespaced, OwnerAbsent, nil,
			resolution{status: ownerSolid, invalid: reasonOwnerRefInvalidNamespace}},
		{"a kind not watched: kept", pod, scopeUnknown, OwnerUnknown, nil, resolution{status: ownerSolid, invalid: reasonOwnerRefInvalidKind}},
		{"a kind not watched, uid known absent: dangling", pod, scopeUnknown, OwnerAbsent, nil, resolution{status: ownerDangling}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := resolveOwner(c.dep, ref, c.sc, c.state, c.owner); got != c.want {
				t.Errorf("resolveOwner = %+v, want %+v", got, c.want)
			}
		})
	}
}
