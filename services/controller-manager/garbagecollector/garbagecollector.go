package garbagecollector

import (
	"context"
	"errors"
	"sync"

	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the collector's name in --controllers.
const Name = "garbagecollector"

// Event reasons (Warning).
const (
	reasonFailedDelete             = "FailedDelete"
	reasonFailedUpdate             = "FailedUpdate"
	reasonOwnerRefInvalidKind      = "OwnerRefInvalidKind"
	reasonOwnerRefInvalidNamespace = "OwnerRefInvalidNamespace"
)

// Options configure the collector.
type Options struct {
	// Workers is the number of uids each queue (attemptToDelete,
	// attemptToOrphan) works on in parallel; default 20.
	Workers int
}

// Controller is the garbage collector.
type Controller struct {
	log *zap.Logger
	rec events.Recorder
	m   *metrics

	kinds map[string]kind // by groupKind
	order []kind

	mu    sync.Mutex // guards graph
	graph *Graph

	attemptToDelete *controller.Controller
	attemptToOrphan *controller.Controller
}

// New builds the collector: it asks the shared factory for the informers of
// every kind it collects and registers its handlers. Call Run.
func New(mc *manager.Context, o Options) *Controller {
	if o.Workers <= 0 {
		o.Workers = 20
	}
	parts := mc.For(Name)
	c := &Controller{
		log:   parts.Logger,
		rec:   parts.Recorder,
		m:     newMetrics(mc.Registerer),
		kinds: map[string]kind{},
		graph: NewGraph(),
	}
	c.attemptToDelete = parts.Runner("garbage_collector_attempt_to_delete", o.Workers, controller.ReconcileFunc(c.reconcileDelete))
	c.attemptToOrphan = parts.Runner("garbage_collector_attempt_to_orphan", o.Workers, controller.ReconcileFunc(c.reconcileOrphan))

	// Every kind that may own or be owned, at its storage version
	// (kinds.gen.go, from internal/kinds/decl): an ownerReference at
	// apps/v1beta1 resolves to the same group and kind as apps/v1.
	watchKinds(c, mc.Informers, mc.Conn)
	return c
}

func (c *Controller) addKind(k kind) {
	c.kinds[k.groupKind()] = k
	c.order = append(c.order, k)
}

func (c *Controller) kindFor(apiVersion, kind string) kind {
	return c.kinds[groupKindOf(apiVersion, kind)]
}

// Run waits for the informers' first lists, queues every job the graph
// shows (what a previous run left half done included), then works the
// queues until ctx ends. It returns nil.
func (c *Controller) Run(ctx context.Context) error {
	synced := make([]interface{ Synced() <-chan struct{} }, len(c.order))
	for i, k := range c.order {
		synced[i] = syncedFunc(k.synced)
	}
	if informer.WaitForSync(ctx, synced...) {
		c.mu.Lock()
		w := c.graph.Pending()
		n := c.graph.Len()
		c.mu.Unlock()
		c.log.Info("graph built", zap.Int("nodes", n), zap.Int("attemptToDelete", len(w.Delete)), zap.Int("attemptToOrphan", len(w.Orphan)))
		c.enqueue(w)
	}
	// Run even when ctx ended during the wait: the runners shut their
	// queues down.

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, q := range []*controller.Controller{c.attemptToDelete, c.attemptToOrphan} {
		wg.Go(func() { errs[i] = q.Run(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

type syncedFunc func() <-chan struct{}

func (f syncedFunc) Synced() <-chan struct{} { return f() }

// observe puts an informer's object into the graph (handlers: no I/O).
func (c *Controller) observe(n *Node) {
	c.mu.Lock()
	w := c.graph.Upsert(n)
	size := c.graph.Len()
	c.mu.Unlock()
	c.m.nodes.Set(float64(size))
	c.enqueue(w)
}

// forget takes an object the informer saw deleted out of the graph.
func (c *Controller) forget(uid string) {
	c.mu.Lock()
	w := c.graph.Remove(uid)
	size := c.graph.Len()
	c.mu.Unlock()
	c.m.nodes.Set(float64(size))
	c.enqueue(w)
}

func (c *Controller) enqueue(w Work) {
	for _, uid := range w.Delete {
		c.attemptToDelete.Enqueue(uid)
	}
	for _, uid := range w.Orphan {
		c.attemptToOrphan.Enqueue(uid)
	}
}

// deleteView is what attemptToDelete reads of the graph for one node,
// under the lock.
type deleteView struct {
	node          *Node
	dependents    []*Node // only for a node deleting its dependents
	hasDependents bool
	owners        map[string]ownerStatus // owners the graph resolves
	lookup        []OwnerRef             // owners only the API can tell about
	invalid       []invalidRef           // references that can never be valid
}

type invalidRef struct {
	ref    OwnerRef
	reason string
}

func (c *Controller) viewForDelete(uid string) (deleteView, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.graph.Get(uid)
	if !ok {
		return deleteView{}, false
	}
	v := deleteView{node: n, hasDependents: c.graph.HasDependents(uid), owners: map[string]ownerStatus{}}
	if n.DeletingDependents() {
		v.dependents = c.graph.Dependents(uid)
		return v, true
	}
	for _, r := range n.Owners {
		owner, _ := c.graph.Get(r.UID)
		res := resolveOwner(n, r, c.scopeOf(r), c.graph.OwnerState(r.UID), owner)
		if res.invalid != "" {
			v.invalid = append(v.invalid, invalidRef{r, res.invalid})
		}
		if res.lookup {
			v.lookup = append(v.lookup, r)
		} else {
			v.owners[r.UID] = res.status
		}
	}
	return v, true
}

func (c *Controller) scopeOf(r OwnerRef) scope {
	switch k := c.kindFor(r.APIVersion, r.Kind); {
	case k == nil:
		return scopeUnknown
	case k.namespaced():
		return scopeNamespaced
	default:
		return scopeCluster
	}
}

// reconcileDelete is attemptToDelete for one uid: an owner in foreground
// deletion drops its finalizer once its blocking dependents are gone; a
// dependent whose owners are all gone (or waiting for it) is deleted; one
// with a live owner only loses its references to the others.
func (c *Controller) reconcileDelete(ctx context.Context, uid string) (controller.Result, error) {
	v, ok := c.viewForDelete(uid)
	if !ok {
		return controller.Result{}, nil // gone from the graph: nothing left to do
	}
	n := v.node
	if n.DeletingDependents() {
		return c.processForeground(ctx, n, v.dependents)
	}
	if n.Deleting || len(n.Owners) == 0 {
		return controller.Result{}, nil // already going, or nobody's dependent
	}
	for _, bad := range v.invalid {
		r := bad.ref
		switch bad.reason {
		case reasonOwnerRefInvalidKind:
			c.warn(n.Identity, bad.reason, "ownerReference to %s %s %q (uid %s): the garbage collector does not know this kind; the reference is left alone", r.APIVersion, r.Kind, r.Name, r.UID)
		case reasonOwnerRefInvalidNamespace:
			c.warn(n.Identity, bad.reason, "ownerReference to %s %q (uid %s) is invalid: a namespaced owner must be in its dependent's namespace, and a cluster-scoped object cannot have one", r.Kind, r.Name, r.UID)
		}
	}
	for _, r := range v.lookup {
		st, err := c.lookupOwner(ctx, n, r)
		if err != nil {
			return controller.Result{}, err
		}
		v.owners[r.UID] = st
	}
	d := decideDependent(n, v.owners, v.hasDependents)
	log := c.log.With(zap.String("object", describe(n.Identity)), zap.String("uid", n.UID))
	switch d.verdict {
	case removeRefs:
		wrote, err := c.update(ctx, n.Identity, func(m *metav1.ObjectMeta) bool { return dropOwnerRefs(m, d.remove) })
		if err != nil {
			return controller.Result{}, err
		}
		if wrote {
			log.Info("removed ownerReferences to owners that are gone or waiting", zap.Strings("owners", d.remove))
			c.m.refsGone.Inc()
		}
	case deleteIt:
		return c.deleteNode(ctx, n, d.policy, log)
	}
	return controller.Result{}, nil
}

// processForeground handles owner, deleting its dependents in the
// foreground: it waits for the blocking ones (their deletions bring it back
// through the graph), then removes the foregroundDeletion finalizer so the
// apiserver deletes it.
func (c *Controller) processForeground(ctx context.Context, owner *Node, deps []*Node) (controller.Result, error) {
	p := planForeground(owner, deps)
	if !p.done {
		for _, uid := range p.nudge {
			c.attemptToDelete.Enqueue(uid)
		}
		return controller.Result{}, nil
	}
	wrote, err := c.update(ctx, owner.Identity, func(m *metav1.ObjectMeta) bool { return dropFinalizer(m, FinalizerDeleteDependents) })
	if err != nil {
		return controller.Result{}, err
	}
	if wrote {
		c.log.Info("no blocking dependents left, removed the foregroundDeletion finalizer",
			zap.String("object", describe(owner.Identity)), zap.String("uid", owner.UID))
		c.m.finalizers.WithLabelValues(FinalizerDeleteDependents).Inc()
	}
	return controller.Result{}, nil
}

// reconcileOrphan is attemptToOrphan for one uid: an owner deleted with
// propagationPolicy Orphan loses every dependent's reference, then its
// orphan finalizer.
func (c *Controller) reconcileOrphan(ctx context.Context, uid string) (controller.Result, error) {
	c.mu.Lock()
	owner, ok := c.graph.Get(uid)
	var deps []*Node
	if ok {
		deps = c.graph.Dependents(uid)
	}
	c.mu.Unlock()
	if !ok || !owner.Orphaning() {
		return controller.Result{}, nil
	}
	log := c.log.With(zap.String("object", describe(owner.Identity)), zap.String("uid", owner.UID))
	for _, d := range deps {
		wrote, err := c.update(ctx, d.Identity, func(m *metav1.ObjectMeta) bool { return dropOwnerRefs(m, []string{uid}) })
		if err != nil {
			return controller.Result{}, err
		}
		if wrote {
			c.m.refsGone.Inc()
		}
	}
	wrote, err := c.update(ctx, owner.Identity, func(m *metav1.ObjectMeta) bool { return dropFinalizer(m, FinalizerOrphan) })
	if err != nil {
		return controller.Result{}, err
	}
	if wrote {
		log.Info("dependents orphaned, removed the orphan finalizer", zap.Int("dependents", len(deps)))
		c.m.finalizers.WithLabelValues(FinalizerOrphan).Inc()
	}
	return controller.Result{}, nil
}

// lookupOwner asks the API about an owner the graph does not know (the
// informers may lag, or it never existed), by name in the dependent's
// namespace (or the cluster, for a cluster-scoped kind). Not found, or
// found with another uid: the owner is gone.
func (c *Controller) lookupOwner(ctx context.Context, dep *Node, r OwnerRef) (ownerStatus, error) {
	k := c.kindFor(r.APIVersion, r.Kind)
	ns := ""
	if k.namespaced() {
		ns = dep.Namespace
	}
	m, err := k.get(ctx, ns, r.Name)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		c.m.lookups.WithLabelValues(lookupError).Inc()
		return 0, err
	case m.GetUid() == r.UID:
		c.m.lookups.WithLabelValues(lookupPresent).Inc()
		return statusOfPresent(NodeOf(r.APIVersion, r.Kind, m)), nil
	}
	c.m.lookups.WithLabelValues(lookupAbsent).Inc()
	c.mu.Lock()
	c.graph.MarkAbsent(r.UID)
	c.mu.Unlock()
	c.log.Debug("owner is absent", zap.String("dependent", describe(dep.Identity)), zap.String("owner", r.Kind+" "+r.Name), zap.String("ownerUID", r.UID))
	return ownerDangling, nil
}

// deleteNode deletes n, at the uid and resourceVersion the decision was
// made on.
func (c *Controller) deleteNode(ctx context.Context, n *Node, policy string, log *zap.Logger) (controller.Result, error) {
	k := c.kindFor(n.APIVersion, n.Kind)
	err := k.delete(ctx, &metav1.DeleteRequest{
		Namespace: n.Namespace, Name: n.Name,
		Preconditions:     &metav1.Preconditions{Uid: n.UID, ResourceVersion: n.ResourceVersion},
		PropagationPolicy: policy,
	})
	switch {
	case err == nil:
		log.Info("deleted dependent: no live owner left", zap.String("propagationPolicy", policy))
		c.m.deletes.WithLabelValues(policy).Inc()
	case apierrors.IsNotFound(err):
	case apierrors.IsConflict(err):
		// Changed since the graph saw it (new owners, maybe): decide again
		// on the state the informer brings.
		log.Debug("object changed since the decision, deciding again", zap.Error(err))
		return controller.Result{Requeue: true}, nil
	case ctx.Err() != nil:
		return controller.Result{}, err
	default:
		c.warn(n.Identity, reasonFailedDelete, "garbage collector failed to delete %s: %v", describe(n.Identity), err)
		return controller.Result{}, err
	}
	return controller.Result{}, nil
}

// update writes a change of metadata to the object id names and reports
// whether it wrote; an object already gone is no error.
func (c *Controller) update(ctx context.Context, id Identity, mutate func(*metav1.ObjectMeta) bool) (bool, error) {
	k := c.kindFor(id.APIVersion, id.Kind)
	wrote, err := k.update(ctx, id, mutate)
	if err == nil || apierrors.IsNotFound(err) {
		return wrote, nil
	}
	if ctx.Err() == nil {
		c.warn(id, reasonFailedUpdate, "garbage collector failed to update %s: %v", describe(id), err)
	}
	return false, err
}

// warn records a Warning event about id.
func (c *Controller) warn(id Identity, reason, format string, args ...any) {
	k := c.kindFor(id.APIVersion, id.Kind)
	if k == nil {
		return
	}
	c.rec.Eventf(k.object(id), events.EventTypeWarning, reason, format, args...)
}

// describe names an object for logs: "Pod default/web-1".
func describe(id Identity) string {
	if id.Namespace == "" {
		return id.Kind + " " + id.Name
	}
	return id.Kind + " " + id.Namespace + "/" + id.Name
}
