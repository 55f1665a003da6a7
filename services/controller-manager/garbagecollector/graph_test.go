package garbagecollector

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	metav1 "skiff.dev/proto/meta/v1"
)

// obj builds a node: kind, name and uid, then options.
func obj(kind, name, uid string, opts ...func(*Node)) *Node {
	n := &Node{Identity: Identity{APIVersion: "v1", Kind: kind, Namespace: "ns", Name: name, UID: uid}, ResourceVersion: "1"}
	for _, o := range opts {
		o(n)
	}
	return n
}

// ownedBy adds an ownerReference (blockOwnerDeletion when block).
func ownedBy(uid string, block bool) func(*Node) {
	return func(n *Node) {
		n.Owners = append(n.Owners, OwnerRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "owner-" + uid, UID: uid, Controller: block, BlockOwnerDeletion: block})
	}
}

// deleting sets a deletionTimestamp and finalizers.
func deleting(finalizers ...string) func(*Node) {
	return func(n *Node) { n.Deleting, n.Finalizers = true, finalizers }
}

func uids(ns []*Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.UID
	}
	return out
}

func sorted(xs []string) []string {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return slices.Compact(xs)
}

func TestGraph(t *testing.T) {
	rs := obj("ReplicaSet", "rs", "rs")
	pod1 := obj("Pod", "p1", "p1", ownedBy("rs", true))
	pod2 := obj("Pod", "p2", "p2", ownedBy("rs", false))
	cases := []struct {
		name string
		// setup builds the graph; the Work of the last step is checked.
		steps []func(g *Graph) Work
		// wantDelete and wantOrphan are compared as sets.
		wantDelete, wantOrphan []string
		check                  func(t *testing.T, g *Graph)
	}{{
		name:       "a dependent of an owner never seen is checked",
		steps:      []func(*Graph) Work{upsert(pod1)},
		wantDelete: []string{"p1"},
		check: func(t *testing.T, g *Graph) {
			expectState(t, g, "rs", OwnerUnknown)
			expectDependents(t, g, "rs", "p1")
		},
	}, {
		name:  "a dependent of a present owner needs nothing",
		steps: []func(*Graph) Work{upsert(rs), upsert(pod1)},
		check: func(t *testing.T, g *Graph) { expectState(t, g, "rs", OwnerPresent) },
	}, {
		name:  "an owner seen after its dependent needs nothing",
		steps: []func(*Graph) Work{upsert(pod1), upsert(rs)},
	}, {
		name:       "an owner deleted: its dependents are checked and it is known absent",
		steps:      []func(*Graph) Work{upsert(rs), upsert(pod1), upsert(pod2), remove("rs")},
		wantDelete: []string{"p1", "p2"},
		check: func(t *testing.T, g *Graph) {
			expectState(t, g, "rs", OwnerAbsent)
			expectDependents(t, g, "rs", "p1", "p2")
		},
	}, {
		name:       "an update of a dependent of an absent owner checks it again",
		steps:      []func(*Graph) Work{upsert(rs), upsert(pod1), remove("rs"), upsert(pod1)},
		wantDelete: []string{"p1"},
	}, {
		name:  "the absent mark goes with the last dependent",
		steps: []func(*Graph) Work{upsert(rs), upsert(pod1), remove("rs"), remove("p1")},
		check: func(t *testing.T, g *Graph) {
			expectState(t, g, "rs", OwnerUnknown)
			expectDependents(t, g, "rs")
		},
	}, {
		name:  "an owner without dependents deleted: nothing to remember",
		steps: []func(*Graph) Work{upsert(rs), remove("rs")},
		check: func(t *testing.T, g *Graph) { expectState(t, g, "rs", OwnerUnknown) },
	}, {
		name:  "removing a uid never seen does nothing",
		steps: []func(*Graph) Work{upsert(rs), remove("nope")},
		check: func(t *testing.T, g *Graph) {
			if g.Len() != 1 {
				t.Errorf("Len = %d, want 1", g.Len())
			}
		},
	}, {
		name: "an owner entering foreground deletion: itself and every dependent",
		steps: []func(*Graph) Work{upsert(rs), upsert(pod1), upsert(pod2),
			upsert(obj("ReplicaSet", "rs", "rs", deleting(FinalizerDeleteDependents)))},
		wantDelete: []string{"rs", "p1", "p2"},
	}, {
		name: "a foreground owner updated again: only itself",
		steps: []func(*Graph) Work{upsert(rs), upsert(pod1),
			upsert(obj("ReplicaSet", "rs", "rs", deleting(FinalizerDeleteDependents))),
			upsert(obj("ReplicaSet", "rs", "rs", deleting(FinalizerDeleteDependents)))},
		wantDelete: []string{"rs"},
	}, {
		name: "a dependent of a foreground owner changes: the owner looks again",
		steps: []func(*Graph) Work{upsert(obj("ReplicaSet", "rs", "rs", deleting(FinalizerDeleteDependents))), upsert(pod1),
			upsert(obj("Pod", "p1", "p1", ownedBy("rs", false)))},
		wantDelete: []string{"rs", "p1"},
	}, {
		name: "a dependent drops its reference to a foreground owner: the owner looks again",
		steps: []func(*Graph) Work{upsert(obj("ReplicaSet", "rs", "rs", deleting(FinalizerDeleteDependents))), upsert(pod1),
			upsert(obj("Pod", "p1", "p1"))},
		wantDelete: []string{"rs"},
		check:      func(t *testing.T, g *Graph) { expectDependents(t, g, "rs") },
	}, {
		name: "a dependent of a foreground owner deleted: the owner looks again",
		steps: []func(*Graph) Work{upsert(obj("ReplicaSet", "rs", "rs", deleting(FinalizerDeleteDependents))), upsert(pod1),
			remove("p1")},
		wantDelete: []string{"rs"},
	}, {
		name:       "an owner deleted with orphan",
		steps:      []func(*Graph) Work{upsert(rs), upsert(pod1), upsert(obj("ReplicaSet", "rs", "rs", deleting(FinalizerOrphan)))},
		wantOrphan: []string{"rs"},
	}, {
		name:  "an orphan finalizer without deletionTimestamp is not a job",
		steps: []func(*Graph) Work{upsert(obj("ReplicaSet", "rs", "rs", func(n *Node) { n.Finalizers = []string{FinalizerOrphan} }))},
	}, {
		name: "a dependent drops one of two owners",
		steps: []func(*Graph) Work{upsert(obj("ReplicaSet", "a", "a")), upsert(obj("ReplicaSet", "b", "b")),
			upsert(obj("ConfigMap", "cm", "cm", ownedBy("a", false), ownedBy("b", false))),
			upsert(obj("ConfigMap", "cm", "cm", ownedBy("b", false)))},
		check: func(t *testing.T, g *Graph) {
			expectDependents(t, g, "a")
			expectDependents(t, g, "b", "cm")
			if g.HasDependents("a") {
				t.Error("HasDependents(a) = true after the reference went")
			}
		},
	}, {
		name:  "MarkAbsent: ignored for an observed node and for a uid nobody refers to",
		steps: []func(*Graph) Work{upsert(rs), markAbsent("rs"), markAbsent("nobody")},
		check: func(t *testing.T, g *Graph) {
			expectState(t, g, "rs", OwnerPresent)
			expectState(t, g, "nobody", OwnerUnknown)
		},
	}, {
		name:  "MarkAbsent of a referenced uid, then the owner shows up after all",
		steps: []func(*Graph) Work{upsert(pod1), markAbsent("rs"), upsert(rs)},
		check: func(t *testing.T, g *Graph) {
			expectState(t, g, "rs", OwnerPresent)
			g.Remove("rs")
			expectState(t, g, "rs", OwnerAbsent)
		},
	}, {
		name:       "an owner in another namespace: the reference is checked",
		steps:      []func(*Graph) Work{upsert(obj("ReplicaSet", "rs", "rs", func(n *Node) { n.Namespace = "other" })), upsert(pod1)},
		wantDelete: []string{"p1"},
	}, {
		name:  "a cluster-scoped owner of a namespaced object needs nothing",
		steps: []func(*Graph) Work{upsert(obj("Node", "rs", "rs", func(n *Node) { n.Namespace = "" })), upsert(pod1)},
	}, {
		name: "Pending: every half-finished job of a graph built from lists",
		steps: []func(*Graph) Work{
			upsert(obj("ReplicaSet", "fg", "fg", deleting(FinalizerDeleteDependents))),
			upsert(obj("Pod", "fg-dep", "fg-dep", ownedBy("fg", true))),
			upsert(obj("ReplicaSet", "or", "or", deleting(FinalizerOrphan))),
			upsert(obj("Pod", "or-dep", "or-dep", ownedBy("or", true))),
			upsert(obj("ConfigMap", "dangling", "dangling", ownedBy("never", false))),
			upsert(rs), upsert(pod1),
			upsert(obj("Pod", "deleting", "deleting", deleting())),
			func(g *Graph) Work { return g.Pending() },
		},
		wantDelete: []string{"fg", "fg-dep", "dangling"},
		wantOrphan: []string{"or"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewGraph()
			var w Work
			for _, step := range c.steps {
				w = step(g)
			}
			if got := sorted(w.Delete); !slices.Equal(got, sorted(c.wantDelete)) {
				t.Errorf("Delete work = %q, want %q", got, sorted(c.wantDelete))
			}
			if got := sorted(w.Orphan); !slices.Equal(got, sorted(c.wantOrphan)) {
				t.Errorf("Orphan work = %q, want %q", got, sorted(c.wantOrphan))
			}
			if c.check != nil {
				c.check(t, g)
			}
		})
	}
}

func upsert(n *Node) func(*Graph) Work { return func(g *Graph) Work { return g.Upsert(n) } }
func remove(uid string) func(*Graph) Work {
	return func(g *Graph) Work { return g.Remove(uid) }
}
func markAbsent(uid string) func(*Graph) Work {
	return func(g *Graph) Work { g.MarkAbsent(uid); return Work{} }
}

func expectState(t *testing.T, g *Graph, uid string, want OwnerState) {
	t.Helper()
	if got := g.OwnerState(uid); got != want {
		t.Errorf("OwnerState(%s) = %v, want %v", uid, got, want)
	}
}

func expectDependents(t *testing.T, g *Graph, owner string, want ...string) {
	t.Helper()
	if got := uids(g.Dependents(owner)); !slices.Equal(got, want) && (len(got) != 0 || len(want) != 0) {
		t.Errorf("Dependents(%s) = %q, want %q", owner, got, want)
	}
}

func TestNodeOf(t *testing.T) {
	m := &metav1.ObjectMeta{
		Namespace: "ns", Name: "web-1", Uid: "u1", ResourceVersion: "7",
		DeletionTimestamp: timestamppb.Now(),
		Finalizers:        []string{FinalizerDeleteDependents},
		OwnerReferences: []*metav1.OwnerReference{
			{ApiVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", Uid: "rs", Controller: proto.Bool(true), BlockOwnerDeletion: proto.Bool(true)},
			{ApiVersion: "v1", Kind: "ConfigMap", Name: "cfg", Uid: "cm"},
		},
	}
	n := NodeOf("v1", "Pod", m)
	want := Node{
		Identity:        Identity{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "web-1", UID: "u1"},
		ResourceVersion: "7",
		Owners: []OwnerRef{
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs", Controller: true, BlockOwnerDeletion: true},
			{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg", UID: "cm"},
		},
		Deleting:   true,
		Finalizers: []string{FinalizerDeleteDependents},
	}
	if n.Identity != want.Identity || n.ResourceVersion != want.ResourceVersion || n.Deleting != want.Deleting ||
		!slices.Equal(n.Owners, want.Owners) || !slices.Equal(n.Finalizers, want.Finalizers) {
		t.Errorf("NodeOf = %+v, want %+v", *n, want)
	}
	if !n.DeletingDependents() || n.Orphaning() {
		t.Errorf("DeletingDependents = %v, Orphaning = %v; want true, false", n.DeletingDependents(), n.Orphaning())
	}
	m.Finalizers[0] = "changed"
	if n.Finalizers[0] != FinalizerDeleteDependents {
		t.Error("NodeOf shares the finalizers slice with the object")
	}
}
