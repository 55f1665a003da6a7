package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "endpointslice"

// Labels and values of the slices, as Kubernetes names them.
const (
	// LabelServiceName names the Service a slice belongs to.
	LabelServiceName = "kubernetes.io/service-name"
	// LabelManagedBy names the controller that manages a slice.
	LabelManagedBy = "endpointslice.kubernetes.io/managed-by"
	// ControllerName is this controller's LabelManagedBy value.
	ControllerName = "endpointslice-controller.k8s.io"
	// LabelHeadless marks the slices of a Service with clusterIP None.
	LabelHeadless = "service.kubernetes.io/headless"
	// LabelTopologyZone is the Node label endpoints take their zone from.
	LabelTopologyZone = "topology.kubernetes.io/zone"
	// AddressTypeIPv4 is the address type of every slice written.
	AddressTypeIPv4 = "IPv4"
	// ClusterIPNone is the clusterIP of a headless Service.
	ClusterIPNone = "None"
)

// Defaults and bounds of Options.
const (
	DefaultWorkers              = 5 // --concurrent-service-endpoint-syncs
	DefaultMaxEndpointsPerSlice = 100
	MaxMaxEndpointsPerSlice     = 1000 // the API's bound on a slice's endpoints
)

// sliceChangeDelay delays the sync a change of a slice by someone else
// causes (Kubernetes' endpointSliceChangeMinSyncDelay), so that the
// controller does not fight another writer write for write.
const sliceChangeDelay = time.Second

// Options configure the controller. Zero values pick the defaults.
type Options struct {
	// Workers is the number of Services synced in parallel (default 5).
	Workers int
	// MaxEndpointsPerSlice is the most endpoints a slice holds (default
	// 100, at most 1000; Kubernetes' --max-endpoints-per-slice).
	MaxEndpointsPerSlice int
	// BatchPeriod delays the sync a pod change causes, so that more
	// changes share it (Kubernetes' --endpoint-updates-batch-period,
	// default 0: no delay; the queue coalesces the changes that arrive
	// while a Service waits or syncs).
	BatchPeriod time.Duration
}

// Validate checks o, naming the field at fault.
func (o Options) Validate() error {
	switch {
	case o.Workers < 0:
		return fmt.Errorf("endpointslice: Workers: %d, must be 0 (the default) or more", o.Workers)
	case o.MaxEndpointsPerSlice < 0 || o.MaxEndpointsPerSlice > MaxMaxEndpointsPerSlice:
		return fmt.Errorf("endpointslice: MaxEndpointsPerSlice: %d, must be between 1 and %d (0: the default, %d)", o.MaxEndpointsPerSlice, MaxMaxEndpointsPerSlice, DefaultMaxEndpointsPerSlice)
	case o.BatchPeriod < 0:
		return fmt.Errorf("endpointslice: BatchPeriod: %v, must not be negative", o.BatchPeriod)
	}
	return nil
}

// Controller keeps each Service's EndpointSlices; see the package
// documentation.
type Controller struct {
	opts Options
	err  error // Options' fault: Run returns it
	log  *zap.Logger
	rec  events.Recorder

	services    *informer.Informer[*corev1.Service]
	pods        *informer.Informer[*corev1.Pod]
	nodes       *informer.Informer[*corev1.Node]
	slices      *informer.Informer[*discoveryv1.EndpointSlice]
	sliceClient *client.Resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]

	tracker *tracker
	m       *metrics
	queue   *controller.Controller
}

// New builds the controller on mc's shared informers (services, pods,
// nodes, endpointslices) and registers its handlers. Options that are not
// valid make Run return the error.
func New(mc *manager.Context, o Options) *Controller {
	return newController(mc, o, informer.For(mc.Informers, client.EndpointSlices(mc.Conn)))
}

// newController builds the controller on the given slices informer (tests
// pass one whose events lag).
func newController(mc *manager.Context, o Options, sliceInformer *informer.Informer[*discoveryv1.EndpointSlice]) *Controller {
	err := o.Validate()
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.MaxEndpointsPerSlice <= 0 || o.MaxEndpointsPerSlice > MaxMaxEndpointsPerSlice {
		o.MaxEndpointsPerSlice = DefaultMaxEndpointsPerSlice
	}
	o.BatchPeriod = max(o.BatchPeriod, 0)
	parts := mc.For(Name)
	c := &Controller{
		opts:        o,
		err:         err,
		log:         parts.Logger,
		rec:         parts.Recorder,
		services:    informer.For(mc.Informers, client.Services(mc.Conn)),
		pods:        informer.For(mc.Informers, client.Pods(mc.Conn)),
		nodes:       informer.For(mc.Informers, client.Nodes(mc.Conn)),
		slices:      sliceInformer,
		sliceClient: client.EndpointSlices(mc.Conn),
		tracker:     newTracker(parts.Clock.Now),
		m:           newMetrics(mc.Registerer),
	}
	c.queue = parts.Runner(Name, o.Workers, controller.ReconcileFunc(c.Reconcile))
	c.register()
	return c
}

// Run waits for the informers to sync, then syncs Services until ctx ends,
// and returns nil (or the Options' fault at once).
func (c *Controller) Run(ctx context.Context) error {
	if c.err != nil {
		return c.err
	}
	if !informer.WaitForSync(ctx, c.services, c.pods, c.nodes, c.slices) {
		return nil
	}
	return c.queue.Run(ctx)
}

// staleRetry is when a Service whose cache was stale syncs again if no
// slice event woke it first.
const staleRetry = 100 * time.Millisecond

// errStale says the slices cache does not show the controller's last
// writes for a Service yet.
var errStale = errors.New("the EndpointSlice cache does not show this controller's last writes yet")

// Reconcile syncs one Service's slices ("namespace/name").
func (c *Controller) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	res, err := c.sync(ctx, key)
	switch {
	case errors.Is(err, errStale):
		// The slice event that brings the cache up to date wakes the
		// Service (handlers.go); staleRetry is the fallback.
		c.m.syncs.WithLabelValues(syncStale).Inc()
		return controller.Result{RequeueAfter: staleRetry}, nil
	case err != nil:
		c.m.syncs.WithLabelValues(syncError).Inc()
	default:
		c.m.syncs.WithLabelValues(syncSuccess).Inc()
	}
	return res, err
}

func (c *Controller) sync(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := controller.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.Terminal(err)
	}
	svc, ok := c.services.Store().GetByName(ns, name)
	if !ok {
		// Its slices go with it through the garbage collector.
		c.tracker.forgetService(key)
		c.m.forgetService(key)
		return controller.Result{}, nil
	}
	if svc.GetSpec().GetType() == "ExternalName" || len(svc.GetSpec().GetSelector()) == 0 {
		// No endpoints from this controller: the slices of a Service
		// without a selector are written by whoever runs its endpoints.
		c.m.forgetService(key)
		return controller.Result{}, nil
	}

	existing := c.cachedSlices(ns, name)
	if c.tracker.stale(key, existing) {
		return controller.Result{}, errStale
	}
	want := desiredEndpoints(svc, c.selectedPods(svc), c.node)
	if len(want.unknownNode) > 0 {
		c.log.Debug("pods left out until their node is known", zap.String("service", key), zap.Strings("pods", want.unknownNode))
	}
	p := plan(svc, want, existing, c.opts.MaxEndpointsPerSlice)
	c.m.setService(key, serviceCounts{endpoints: want.count(), slices: len(existing) + len(p.Create) - len(p.Delete)})
	if p.Writes() == 0 {
		return controller.Result{}, nil
	}
	if err := c.apply(ctx, key, svc, p); err != nil {
		c.rec.Eventf(svc, events.EventTypeWarning, "FailedToUpdateEndpointSlices", "Error updating Endpoint Slices for Service %s: %v", key, err)
		return controller.Result{}, err
	}
	c.log.Debug("synced endpoint slices", zap.String("service", key), zap.Int("endpoints", want.count()),
		zap.Int("created", len(p.Create)), zap.Int("updated", len(p.Update)), zap.Int("deleted", len(p.Delete)))
	return controller.Result{}, nil
}

// apply makes the plan's writes: creates (none while the Service is being
// deleted, not to race the garbage collector), updates at the slices'
// resourceVersions, deletes with the slices' uids as preconditions. It
// stops at the first failure; the retry plans again from the cache.
func (c *Controller) apply(ctx context.Context, key string, svc *corev1.Service, p Plan) error {
	c.tracker.startWrites(key)
	defer func() {
		if c.tracker.endWrites(key) {
			c.enqueueForSlice(key) // someone else changed a slice meanwhile
		}
	}()
	if svc.GetMetadata().GetDeletionTimestamp() == nil {
		for _, s := range p.Create {
			got, err := c.sliceClient.Create(ctx, s)
			if err != nil {
				return fmt.Errorf("create EndpointSlice for Service %s: %w", key, err)
			}
			c.tracker.wrote(key, got)
			c.m.changes.WithLabelValues("create").Inc()
		}
	}
	for _, s := range p.Update {
		got, err := c.sliceClient.Update(ctx, s)
		if err != nil {
			return fmt.Errorf("update EndpointSlice %s/%s: %w", s.GetMetadata().GetNamespace(), s.GetMetadata().GetName(), err)
		}
		c.tracker.wrote(key, got)
		c.m.changes.WithLabelValues("update").Inc()
	}
	for _, s := range p.Delete {
		m := s.GetMetadata()
		_, err := c.sliceClient.Delete(ctx, &metav1.DeleteRequest{
			Namespace: m.GetNamespace(), Name: m.GetName(),
			Preconditions: &metav1.Preconditions{Uid: m.GetUid()},
		})
		switch {
		case apierrors.IsNotFound(err):
			continue // gone already
		case err != nil:
			return fmt.Errorf("delete EndpointSlice %s/%s: %w", m.GetNamespace(), m.GetName(), err)
		}
		c.tracker.deleting(key, s)
		c.m.changes.WithLabelValues("delete").Inc()
	}
	return nil
}

// cachedSlices returns the cached slices of Service ns/name managed by this
// controller, leaving out those being deleted.
func (c *Controller) cachedSlices(ns, name string) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	c.slices.Store().EachByIndex(informer.IndexLabel, LabelServiceName+"="+name, func(s *discoveryv1.EndpointSlice) {
		m := s.GetMetadata()
		if m.GetNamespace() == ns && m.GetLabels()[LabelManagedBy] == ControllerName && m.GetDeletionTimestamp() == nil {
			out = append(out, s)
		}
	})
	return out
}

// selectedPods returns the cached pods of svc's namespace its selector
// matches, read through the label index of one of the selector's pairs
// (the pods of one app, not every pod of the namespace).
func (c *Controller) selectedPods(svc *corev1.Service) []*corev1.Pod {
	sel := svc.GetSpec().GetSelector()
	ns := svc.GetMetadata().GetNamespace()
	key := slices.Min(slices.Collect(maps.Keys(sel)))
	var out []*corev1.Pod
	c.pods.Store().EachByIndex(informer.IndexLabel, key+"="+sel[key], func(p *corev1.Pod) {
		if p.GetMetadata().GetNamespace() == ns && selects(sel, p.GetMetadata().GetLabels()) {
			out = append(out, p)
		}
	})
	return out
}

// node looks a Node up in the cache.
func (c *Controller) node(name string) (*corev1.Node, bool) {
	if name == "" {
		return nil, false
	}
	return c.nodes.Store().Get(name)
}

// selects reports whether a Service's selector (non-empty) matches labels:
// every key with its value.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}
