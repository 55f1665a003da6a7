package garbagecollector

import (
	"slices"
	"sort"

	metav1 "skiff.dev/proto/meta/v1"
)

// Finalizers the apiserver adds for a Delete's propagation policy, which the
// garbage collector removes once it has done the job.
const (
	FinalizerOrphan           = "orphan"
	FinalizerDeleteDependents = "foregroundDeletion"
)

// Identity names one object: what an ownerReference or a Delete needs.
type Identity struct {
	APIVersion, Kind, Namespace, Name, UID string
}

// OwnerRef is one ownerReference of a node.
type OwnerRef struct {
	APIVersion, Kind, Name, UID string
	Controller                  bool
	BlockOwnerDeletion          bool
}

// Node is one object the informers show. Nodes are immutable once in the
// graph: an update replaces the node, so a node handed out by the graph may
// be read without the graph's lock.
type Node struct {
	Identity
	ResourceVersion string
	Owners          []OwnerRef
	// Deleting: the object has a deletionTimestamp.
	Deleting   bool
	Finalizers []string
}

// NodeOf builds the node of an object of kind apiVersion/kind from its metadata.
func NodeOf(apiVersion, kind string, m *metav1.ObjectMeta) *Node {
	n := &Node{
		Identity: Identity{
			APIVersion: apiVersion, Kind: kind,
			Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUid(),
		},
		ResourceVersion: m.GetResourceVersion(),
		Deleting:        m.GetDeletionTimestamp() != nil,
		Finalizers:      slices.Clone(m.GetFinalizers()),
	}
	for _, r := range m.GetOwnerReferences() {
		n.Owners = append(n.Owners, OwnerRef{
			APIVersion: r.GetApiVersion(), Kind: r.GetKind(), Name: r.GetName(), UID: r.GetUid(),
			Controller: r.GetController(), BlockOwnerDeletion: r.GetBlockOwnerDeletion(),
		})
	}
	return n
}

// HasFinalizer reports whether the node carries finalizer f.
func (n *Node) HasFinalizer(f string) bool { return slices.Contains(n.Finalizers, f) }

// DeletingDependents reports whether the node is being deleted in the
// foreground: it goes once its blocking dependents are gone.
func (n *Node) DeletingDependents() bool {
	return n.Deleting && n.HasFinalizer(FinalizerDeleteDependents)
}

// Orphaning reports whether the node is being deleted with its dependents
// orphaned: it goes once they no longer refer to it.
func (n *Node) Orphaning() bool { return n.Deleting && n.HasFinalizer(FinalizerOrphan) }

// ownerRef returns the node's reference to owner uid, if any.
func (n *Node) ownerRef(uid string) (OwnerRef, bool) {
	for _, r := range n.Owners {
		if r.UID == uid {
			return r, true
		}
	}
	return OwnerRef{}, false
}

// OwnerState is what the graph knows of an owner uid.
type OwnerState int

const (
	// OwnerUnknown: never observed and not known to be gone; only a live
	// lookup can tell (the informers may lag).
	OwnerUnknown OwnerState = iota
	// OwnerPresent: observed by an informer and not deleted since.
	OwnerPresent
	// OwnerAbsent: observed deleted, or looked up and not found.
	OwnerAbsent
)

func (s OwnerState) String() string {
	return [...]string{"unknown", "present", "absent"}[s]
}

// Work is what a change to the graph asks the collector to look at: uids for
// the attemptToDelete queue and for the attemptToOrphan queue. A uid may be
// listed more than once; the queues deduplicate.
type Work struct {
	Delete []string
	Orphan []string
}

func (w *Work) add(o Work) {
	w.Delete = append(w.Delete, o.Delete...)
	w.Orphan = append(w.Orphan, o.Orphan...)
}

// Graph is the ownerReference graph: nodes by uid, the dependents of every
// owner uid (observed or not), and the owner uids known to be gone. It does
// no I/O and is not safe for concurrent use: the collector guards it with a
// mutex.
type Graph struct {
	nodes      map[string]*Node
	dependents map[string]map[string]struct{} // owner uid -> dependent uids
	// absent holds owner uids known to be gone, for as long as some
	// dependent still refers to them (so it stays bounded).
	absent map[string]struct{}
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{
		nodes:      map[string]*Node{},
		dependents: map[string]map[string]struct{}{},
		absent:     map[string]struct{}{},
	}
}

// Len is the number of observed nodes.
func (g *Graph) Len() int { return len(g.nodes) }

// Get returns the node with uid.
func (g *Graph) Get(uid string) (*Node, bool) {
	n, ok := g.nodes[uid]
	return n, ok
}

// OwnerState says whether the owner uid is present, known absent, or unknown.
func (g *Graph) OwnerState(uid string) OwnerState {
	if _, ok := g.nodes[uid]; ok {
		return OwnerPresent
	}
	if _, ok := g.absent[uid]; ok {
		return OwnerAbsent
	}
	return OwnerUnknown
}

// MarkAbsent records that owner uid was looked up and is gone. It is
// ignored for an observed node, or a uid no dependent refers to.
func (g *Graph) MarkAbsent(uid string) {
	if _, ok := g.nodes[uid]; ok {
		return
	}
	if len(g.dependents[uid]) > 0 {
		g.absent[uid] = struct{}{}
	}
}

// Dependents returns the observed nodes with an ownerReference to uid,
// sorted by uid.
func (g *Graph) Dependents(uid string) []*Node {
	deps := g.dependents[uid]
	out := make([]*Node, 0, len(deps))
	for d := range deps {
		if n, ok := g.nodes[d]; ok {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out
}

// HasDependents reports whether any node refers to uid.
func (g *Graph) HasDependents(uid string) bool { return len(g.dependents[uid]) > 0 }

// Upsert adds or replaces the node n.UID (n must not be changed afterwards)
// and returns the work the change calls for.
func (g *Graph) Upsert(n *Node) Work {
	old := g.nodes[n.UID]
	g.nodes[n.UID] = n
	delete(g.absent, n.UID) // observed: it exists

	var w Work
	if old != nil {
		for _, r := range old.Owners {
			if _, still := n.ownerRef(r.UID); !still {
				g.unlink(r.UID, n.UID)
			}
			// A foreground owner re-checks its blocking dependents when one
			// of them changes (it may have dropped the reference or its
			// blockOwnerDeletion).
			w.Delete = append(w.Delete, g.waitingOwner(r.UID)...)
		}
	}
	for _, r := range n.Owners {
		deps := g.dependents[r.UID]
		if deps == nil {
			deps = map[string]struct{}{}
			g.dependents[r.UID] = deps
		}
		deps[n.UID] = struct{}{}
	}
	w.add(g.work(n))
	if n.DeletingDependents() && (old == nil || !old.DeletingDependents()) {
		// Entering foreground deletion: every dependent must go (or lose its
		// reference, if it has another live owner).
		for _, d := range g.Dependents(n.UID) {
			w.Delete = append(w.Delete, d.UID)
		}
	}
	return w
}

// Remove takes the node uid out of the graph after the informer saw it
// deleted, and returns the work that calls for: its dependents may now be
// garbage, and a foreground owner waiting for it may go.
func (g *Graph) Remove(uid string) Work {
	n, ok := g.nodes[uid]
	if !ok {
		return Work{}
	}
	delete(g.nodes, uid)
	var w Work
	for _, r := range n.Owners {
		g.unlink(r.UID, uid)
		w.Delete = append(w.Delete, g.waitingOwner(r.UID)...)
	}
	if deps := g.Dependents(uid); len(deps) > 0 {
		g.absent[uid] = struct{}{}
		for _, d := range deps {
			w.Delete = append(w.Delete, d.UID)
		}
	}
	return w
}

// Pending returns the work the whole graph calls for: after the informers'
// first lists (a restart), every job left half done is picked up again.
func (g *Graph) Pending() Work {
	var w Work
	uids := make([]string, 0, len(g.nodes))
	for uid := range g.nodes {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	for _, uid := range uids {
		n := g.nodes[uid]
		w.add(g.work(n))
		if n.DeletingDependents() {
			for _, d := range g.Dependents(uid) {
				w.Delete = append(w.Delete, d.UID)
			}
		}
	}
	return w
}

// work is what node n calls for on its own: a check of owners that are not
// present, are deleting their dependents or are in another namespace (an
// invalid reference), the foreground deletion it is in, or the orphaning it
// is in.
func (g *Graph) work(n *Node) Work {
	var w Work
	if n.Orphaning() {
		w.Orphan = append(w.Orphan, n.UID)
	}
	if n.DeletingDependents() {
		w.Delete = append(w.Delete, n.UID)
		return w
	}
	for _, r := range n.Owners {
		owner, ok := g.nodes[r.UID]
		if !ok || owner.DeletingDependents() || (owner.Namespace != "" && owner.Namespace != n.Namespace) {
			w.Delete = append(w.Delete, n.UID)
			break
		}
	}
	return w
}

// waitingOwner returns [uid] when uid is a node deleting its dependents.
func (g *Graph) waitingOwner(uid string) []string {
	if o, ok := g.nodes[uid]; ok && o.DeletingDependents() {
		return []string{uid}
	}
	return nil
}

// unlink forgets that dep refers to owner; an owner uid nobody refers to
// any more is forgotten too.
func (g *Graph) unlink(owner, dep string) {
	deps := g.dependents[owner]
	delete(deps, dep)
	if len(deps) == 0 {
		delete(g.dependents, owner)
		delete(g.absent, owner)
	}
}
