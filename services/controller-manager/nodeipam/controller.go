package nodeipam

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "nodeipam"

// Defaults of --cluster-cidr and --node-cidr-mask-size (IPv4; an IPv6
// cluster CIDR defaults to /64 subnets).
const (
	DefaultClusterCIDR        = "10.244.0.0/16"
	DefaultNodeCIDRMaskSize   = 24
	DefaultNodeCIDRMaskSizeV6 = 64
)

// Options configure the controller. Zero values pick the defaults.
type Options struct {
	// ClusterCIDR is cut into the nodes' pod subnets (default
	// DefaultClusterCIDR).
	ClusterCIDR netip.Prefix
	// NodeCIDRMaskSize is the size of each node's subnet (default
	// DefaultNodeCIDRMaskSize, or DefaultNodeCIDRMaskSizeV6).
	NodeCIDRMaskSize int
	// Workers reconcile nodes in parallel (default 1).
	Workers int
}

// NewSet is the CIDRSet of o, with its defaults: what New uses, and what
// a program calls to check its flags.
func (o Options) NewSet() (*CIDRSet, error) {
	cluster := o.ClusterCIDR
	if !cluster.IsValid() {
		cluster = netip.MustParsePrefix(DefaultClusterCIDR)
	}
	mask := o.NodeCIDRMaskSize
	if mask == 0 {
		mask = DefaultNodeCIDRMaskSize
		if cluster.Addr().Is6() {
			mask = DefaultNodeCIDRMaskSizeV6
		}
	}
	return NewCIDRSet(cluster, mask)
}

// Controller gives nodes their pod subnets; see the package documentation.
type Controller struct {
	nodes      *informer.Informer[*corev1.Node]
	nodeClient *client.Resource[*corev1.Node, *corev1.NodeList]
	recorder   events.Recorder
	log        *zap.Logger
	m          *metrics
	runner     *controller.Controller
	err        error // from the options: Run returns it

	mu  sync.Mutex
	set *CIDRSet
	// owned is the subnet accounted to each node name: found on the Node,
	// or allocated for it (written, or being written).
	owned map[string]netip.Prefix
	// warned is the podCIDR each node was last warned about, so that its
	// every update does not repeat the event.
	warned map[string]string
}

// New builds the controller on mc's shared nodes informer and registers its
// handlers. Invalid options make Run fail. Call Run.
func New(mc *manager.Context, o Options) *Controller {
	parts := mc.For(Name)
	c := &Controller{
		nodes:      informer.For(mc.Informers, client.Nodes(mc.Conn)),
		nodeClient: client.Nodes(mc.Conn),
		recorder:   parts.Recorder,
		log:        parts.Logger,
		m:          newMetrics(mc.Registerer),
		owned:      map[string]netip.Prefix{},
		warned:     map[string]string{},
	}
	c.set, c.err = o.NewSet()
	if c.err == nil {
		c.m.total.Set(float64(c.set.Total()))
	}
	c.runner = parts.Runner(Name, o.Workers, c)
	enqueue := func(n *corev1.Node) { c.runner.Enqueue(n.GetMetadata().GetName()) }
	c.nodes.AddHandler(informer.Handler[*corev1.Node]{
		OnAdd: enqueue,
		OnUpdate: func(old, cur *corev1.Node) {
			// Only the podCIDR matters (and a new node under the name).
			if old.GetSpec().GetPodCidr() != cur.GetSpec().GetPodCidr() || old.GetMetadata().GetUid() != cur.GetMetadata().GetUid() {
				enqueue(cur)
			}
		},
		OnDelete: enqueue,
	})
	return c
}

// Run waits for the nodes informer to sync, marks the subnets already on
// nodes as taken, then reconciles nodes until ctx ends and returns nil.
func (c *Controller) Run(ctx context.Context) error {
	if c.err != nil {
		return fmt.Errorf("%s controller: %w", Name, c.err)
	}
	if !informer.WaitForSync(ctx, c.nodes) {
		return nil
	}
	c.occupyExisting()
	return c.runner.Run(ctx)
}

// occupyExisting accounts for every podCIDR on the nodes, oldest node
// first: of two nodes with the same subnet, the older keeps it.
func (c *Controller) occupyExisting() {
	nodes := c.nodes.Store().List()
	slices.SortFunc(nodes, func(a, b *corev1.Node) int {
		ta, tb := a.GetMetadata().GetCreationTimestamp().AsTime(), b.GetMetadata().GetCreationTimestamp().AsTime()
		return cmp.Or(ta.Compare(tb), cmp.Compare(a.GetMetadata().GetName(), b.GetMetadata().GetName()))
	})
	for _, n := range nodes {
		if n.GetSpec().GetPodCidr() != "" {
			c.account(n)
		}
	}
	c.mu.Lock()
	used, total := c.set.Used(), c.set.Total()
	c.mu.Unlock()
	c.log.Info("pod subnets already on nodes accounted for", zap.Stringer("clusterCIDR", c.set.Cluster()),
		zap.Int("maskSize", c.set.MaskSize()), zap.Int("used", used), zap.Int("total", total))
}

// Reconcile gives the node named key a subnet, accounts for the one it
// has, or frees the one of a node gone.
func (c *Controller) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	node, ok := c.nodes.Store().Get(key)
	if !ok {
		c.release(key)
		return controller.Result{}, nil
	}
	if node.GetSpec().GetPodCidr() != "" {
		c.account(node)
		return controller.Result{}, nil
	}
	return c.allocate(ctx, node)
}

// account marks a node's podCIDR as its subnet, unless it is invalid, lies
// outside the cluster CIDR or overlaps another node's: then a Warning, and
// the node is left alone.
func (c *Controller) account(node *corev1.Node) {
	name, cidr := node.GetMetadata().GetName(), node.GetSpec().GetPodCidr()
	p, err := netip.ParsePrefix(cidr)
	p = p.Masked()
	c.mu.Lock()
	defer c.mu.Unlock()
	if have, ok := c.owned[name]; ok {
		if err == nil && have == p {
			return
		}
		// The node has another subnet than the one reserved for it (its
		// podCIDR was set by someone else meanwhile): free ours.
		c.releaseLocked(name, have)
	}
	var reason, msg string
	switch {
	case err != nil || !c.set.Contains(p):
		reason = ReasonInvalidPodCIDR
		msg = fmt.Sprintf("Node %s has pod CIDR %s, outside the cluster CIDR %s: left alone (its pods may be unreachable from other nodes)", name, cidr, c.set.Cluster())
	default:
		if other := c.overlapLocked(p); other != "" {
			reason = ReasonPodCIDRConflict
			msg = fmt.Sprintf("Node %s has pod CIDR %s, which overlaps node %s's %s: left alone", name, cidr, other, c.owned[other])
		}
	}
	if reason != "" {
		if c.warned[name] != cidr {
			c.warned[name] = cidr
			c.recorder.Event(node, events.EventTypeWarning, reason, msg)
			c.m.errors.WithLabelValues(reason).Inc()
			c.log.Warn(msg)
		}
		return
	}
	_ = c.set.Occupy(p) // inside the cluster CIDR: cannot fail
	c.owned[name] = p
	delete(c.warned, name)
	c.m.allocated.Set(float64(c.set.Used()))
}

// overlapLocked names a node whose subnet overlaps p, or "".
func (c *Controller) overlapLocked(p netip.Prefix) string {
	if used, _ := c.set.InUse(p); !used {
		return ""
	}
	var names []string
	for name, q := range c.owned {
		if c.widen(q).Overlaps(c.widen(p)) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "(unknown)"
	}
	return names[0]
}

// widen is the subnet (or the range of subnets) p lies in.
func (c *Controller) widen(p netip.Prefix) netip.Prefix {
	return netip.PrefixFrom(p.Addr(), min(p.Bits(), c.set.MaskSize())).Masked()
}

// allocate reserves a subnet for the node and writes it.
func (c *Controller) allocate(ctx context.Context, node *corev1.Node) (controller.Result, error) {
	name := node.GetMetadata().GetName()
	c.mu.Lock()
	p, ok := c.owned[name] // reserved by an earlier attempt, whose write may have landed
	if !ok {
		var err error
		if p, err = c.set.AllocateNext(); err != nil {
			used, total := c.set.Used(), c.set.Total()
			c.mu.Unlock()
			c.recorder.Eventf(node, events.EventTypeWarning, ReasonCIDRNotAvailable,
				"Node %s: no /%d pod subnet left in the cluster CIDR %s (%d of %d in use)", name, c.set.MaskSize(), c.set.Cluster(), used, total)
			c.m.errors.WithLabelValues(ReasonCIDRNotAvailable).Inc()
			c.log.Warn("no pod subnet left", zap.String("node", name), zap.Int("used", used), zap.Int("total", total))
			// Backoff, and a look again as soon as a node goes (release).
			return controller.Result{Requeue: true}, nil
		}
		c.owned[name] = p
		c.m.allocated.Set(float64(c.set.Used()))
	}
	c.mu.Unlock()

	var written *corev1.Node
	cur := node
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		if cur == nil {
			var err error
			if cur, err = c.nodeClient.Get(ctx, "", name); err != nil {
				return err
			}
		}
		if cur.GetSpec().GetPodCidr() != "" {
			written = cur // someone else set it meanwhile: keep theirs
			return nil
		}
		next := proto.Clone(cur).(*corev1.Node)
		if next.Spec == nil {
			next.Spec = &corev1.NodeSpec{}
		}
		next.Spec.PodCidr = p.String()
		next.Spec.PodCidrs = []string{p.String()}
		w, err := c.nodeClient.Update(ctx, next)
		if err != nil {
			cur = nil // read it again on a conflict
			return err
		}
		written = w
		c.m.allocations.Inc()
		c.recorder.Eventf(w, events.EventTypeNormal, ReasonCIDRAssigned, "Assigned pod CIDR %s", p)
		c.log.Info("pod CIDR assigned", zap.String("node", name), zap.Stringer("podCIDR", p))
		return nil
	})
	switch {
	case apierrors.IsNotFound(err):
		c.release(name)
		return controller.Result{}, nil
	case err != nil:
		// Keep the reservation: the write may have landed, and the retry
		// writes the same subnet.
		return controller.Result{}, fmt.Errorf("node %q: assign pod CIDR %s: %w", name, p, err)
	}
	c.account(written)
	return controller.Result{}, nil
}

// release frees the subnet of a node gone, and looks again at the nodes
// that wait for one or were in conflict.
func (c *Controller) release(name string) {
	c.mu.Lock()
	p, ok := c.owned[name]
	if ok {
		c.releaseLocked(name, p)
		c.m.releases.Inc()
	}
	delete(c.warned, name)
	c.mu.Unlock()
	if !ok {
		return
	}
	c.log.Info("pod CIDR released", zap.String("node", name), zap.Stringer("podCIDR", p))
	for _, n := range c.nodes.Store().List() {
		c.mu.Lock()
		_, accounted := c.owned[n.GetMetadata().GetName()]
		c.mu.Unlock()
		if !accounted {
			c.runner.Enqueue(n.GetMetadata().GetName())
		}
	}
}

func (c *Controller) releaseLocked(name string, p netip.Prefix) {
	delete(c.owned, name)
	_ = c.set.Release(p) // accounted subnets lie inside the cluster CIDR
	c.m.allocated.Set(float64(c.set.Used()))
}

// Usage is how many subnets are in use, and how many there are.
func (c *Controller) Usage() (used, total int) {
	if c.err != nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.set.Used(), c.set.Total()
}
