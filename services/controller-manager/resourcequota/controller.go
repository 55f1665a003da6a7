package resourcequota

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/object"
	"skiff.dev/internal/quantity"
	"skiff.dev/internal/quota"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/dynamic"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "resourcequota"

// DefaultSyncPeriod is how often every quota is recomputed.
const DefaultSyncPeriod = 5 * time.Minute

// Options configure the controller. Zero values pick the defaults.
type Options struct {
	// Workers recompute quotas in parallel (default 1).
	Workers int
	// SyncPeriod recomputes every quota this often (default DefaultSyncPeriod).
	SyncPeriod time.Duration
}

// Controller keeps ResourceQuota status true; see the package documentation.
type Controller struct {
	quotas *informer.Informer[*corev1.ResourceQuota]
	client *client.Resource[*corev1.ResourceQuota, *corev1.ResourceQuotaList]
	dyn    *dynamic.Client
	log    *zap.Logger
	period time.Duration
	runner *controller.Controller
	synced []interface{ Synced() <-chan struct{} }

	mu        sync.Mutex
	resources map[string]dynamic.Resource // by group/resource ("pods", "deployments.apps")
}

// New builds the controller on mc's shared informers. Call Run.
func New(mc *manager.Context, o Options) *Controller {
	parts := mc.For(Name)
	c := &Controller{
		quotas: informer.For(mc.Informers, client.ResourceQuotas(mc.Conn)),
		client: client.ResourceQuotas(mc.Conn),
		dyn:    dynamic.New(mc.Conn),
		log:    parts.Logger,
		period: o.SyncPeriod,
	}
	if c.period <= 0 {
		c.period = DefaultSyncPeriod
	}
	c.runner = parts.Runner(Name, o.Workers, c)
	c.quotas.AddHandler(informer.Handler[*corev1.ResourceQuota]{
		OnAdd: c.enqueue,
		OnUpdate: func(_, cur *corev1.ResourceQuota) {
			if stale(cur) {
				c.enqueue(cur)
			}
		},
	})
	pods := informer.For(mc.Informers, client.Pods(mc.Conn))
	pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnUpdate: func(old, cur *corev1.Pod) {
			if !quota.Terminal(old) && quota.Terminal(cur) {
				c.enqueueNamespace(cur.GetMetadata().GetNamespace())
			}
		},
		OnDelete: func(p *corev1.Pod) { c.enqueueNamespace(p.GetMetadata().GetNamespace()) },
	})
	c.synced = append(c.synced, c.quotas, pods,
		onDelete(c, informer.For(mc.Informers, client.ConfigMaps(mc.Conn))),
		onDelete(c, informer.For(mc.Informers, client.ReplicaSets(mc.Conn))),
		onDelete(c, informer.For(mc.Informers, client.Deployments(mc.Conn))))
	return c
}

// onDelete recomputes a namespace's quotas when one of its objects goes.
func onDelete[T object.Object](c *Controller, inf *informer.Informer[T]) *informer.Informer[T] {
	inf.AddHandler(informer.Handler[T]{OnDelete: func(obj T) { c.enqueueNamespace(obj.GetMetadata().GetNamespace()) }})
	return inf
}

// stale says whether a quota's status does not describe its spec: hard
// changed, or a limited resource has no usage yet.
func stale(rq *corev1.ResourceQuota) bool {
	if !maps.Equal(rq.GetSpec().GetHard(), rq.GetStatus().GetHard()) {
		return true
	}
	for k := range rq.GetSpec().GetHard() {
		if _, ok := rq.GetStatus().GetUsed()[k]; !ok {
			return true
		}
	}
	return false
}

func (c *Controller) enqueue(rq *corev1.ResourceQuota) { c.runner.Enqueue(informer.Key(rq)) }

func (c *Controller) enqueueNamespace(ns string) {
	for _, rq := range c.quotas.Store().ByNamespace(ns) {
		c.enqueue(rq)
	}
}

// Run waits for the informers, then recomputes quotas (all of them every
// period) until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.synced...) {
		return nil
	}
	go func() {
		t := time.NewTicker(c.period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, rq := range c.quotas.Store().List() {
					c.enqueue(rq)
				}
			}
		}
	}()
	return c.runner.Run(ctx)
}

// Reconcile recomputes the status of the quota named key.
func (c *Controller) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	rq, ok := c.quotas.Store().Get(key)
	if !ok {
		return controller.Result{}, nil
	}
	used, err := c.usage(ctx, rq)
	if err != nil {
		return controller.Result{}, err
	}
	hard := rq.GetSpec().GetHard()
	if maps.Equal(rq.GetStatus().GetHard(), hard) && maps.Equal(rq.GetStatus().GetUsed(), used) {
		return controller.Result{}, nil
	}
	next := proto.Clone(rq).(*corev1.ResourceQuota)
	next.Status = &corev1.ResourceQuotaStatus{Hard: maps.Clone(hard), Used: used}
	if _, err := c.client.UpdateStatus(ctx, next); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return controller.Result{}, nil
		case apierrors.IsConflict(err):
			// Admission charged it (or it changed) since the informer's
			// copy: computed again, with backoff, once the informer has it.
			return controller.Result{Requeue: true}, nil
		}
		return controller.Result{}, fmt.Errorf("quota %s: writing status: %w", key, err)
	}
	c.log.Debug("quota usage", zap.String("quota", key), zap.Any("used", used))
	return controller.Result{}, nil
}

// usage counts what the quota's namespace holds of every resource its
// spec.hard limits.
func (c *Controller) usage(ctx context.Context, rq *corev1.ResourceQuota) (map[string]string, error) {
	hard := rq.GetSpec().GetHard()
	ns := rq.GetMetadata().GetNamespace()
	sum := map[string]quantity.Quantity{}
	listed := map[string]bool{}
	for k := range hard {
		gr := countedResource(k)
		if gr == "" || listed[gr] {
			continue
		}
		listed[gr] = true
		r, err := c.resource(ctx, gr)
		if err != nil {
			return nil, err
		}
		if r == nil {
			continue // not served: nothing of it exists
		}
		objs, err := c.dyn.List(ctx, *r, ns)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if quota.Matches(rq.GetSpec(), r.Group, r.Resource, obj) {
				quota.Sum(sum, quota.Usage(r.Group, r.Resource, obj))
			}
		}
	}
	used := make(map[string]string, len(hard))
	for k := range hard {
		used[k] = sum[k].String()
	}
	return used, nil
}

// countedResource is the group/resource whose objects a quota resource
// counts: "pods" for pods and the compute resources, "configmaps" for
// configmaps, "deployments.apps" for count/deployments.apps.
func countedResource(key string) string {
	switch key {
	case quota.CPU, quota.Memory, quota.RequestsCPU, quota.RequestsMemory, quota.LimitsCPU, quota.LimitsMemory:
		return "pods"
	}
	if gr, ok := strings.CutPrefix(key, "count/"); ok {
		return gr
	}
	return key // the legacy bare names: pods, configmaps, services...
}

// resource finds a served resource by group/resource, asking discovery
// again when it is not known (served since the last time); nil when the
// apiserver does not serve it.
func (c *Controller) resource(ctx context.Context, gr string) (*dynamic.Resource, error) {
	c.mu.Lock()
	r, ok := c.resources[gr]
	c.mu.Unlock()
	if ok {
		return &r, nil
	}
	all, err := c.dyn.Resources(ctx)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]dynamic.Resource, len(all))
	for _, r := range all {
		byName[r.GroupResource()] = r
	}
	c.mu.Lock()
	c.resources = byName
	c.mu.Unlock()
	if r, ok := byName[gr]; ok {
		return &r, nil
	}
	return nil, nil
}
