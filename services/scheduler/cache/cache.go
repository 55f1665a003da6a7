// Package cache is the scheduler's view of where pods are, with resource
// accounting: every node with the pods counted on it (framework.NodeInfo).
//
// A pod's life in the cache, as Kubernetes draws it:
//
//	          AssumePod                  AddPod (the watch shows it bound)
//	(none) ------------> Assumed -----------------------------------> Added
//	                      |   |  FinishBinding starts the TTL          |
//	          ForgetPod   |   |  (bind written, not yet seen)          | UpdatePod
//	   (bind failed)      v   v  Cleanup after the TTL (never seen)    | RemovePod
//	                     (none)                                       (none)
//
// The scheduler assumes a pod on its node as soon as it chooses the node,
// so the next pod already sees the allocation while the bind is in flight.
// The watch confirms the assumption (AddPod); a failed bind forgets it
// (ForgetPod); an assumption the watch never confirms expires (Cleanup),
// so a lost event cannot hold resources forever.
//
// Pods bound to a node the cache does not (yet, or any more) know are
// still counted, on a NodeInfo without a node, so that accounting is right
// when the node appears.
//
// UpdateSnapshot copies into a framework.Snapshot only the NodeInfos that
// changed since the snapshot was last updated: nodes are kept in a list
// ordered by their last change, newest first, and each change bumps a
// generation number. The snapshot's AffinityIndex (pods by label, the
// distinct required anti-affinity terms with counts per domain) is
// updated for those nodes only (framework.Snapshot.CopyNodeInfo).
//
// The package owns that accounting. It does not watch anything: the
// scheduler's informer handlers call it. It does not decide which pods
// count (finished pods are the caller's to remove).
package cache

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/framework"
)

// Cache is safe for concurrent use.
type Cache struct {
	ttl time.Duration
	now func() time.Time

	mu sync.RWMutex
	// nodes by name; head is the most recently changed.
	nodes map[string]*nodeItem
	head  *nodeItem
	// order lists the names of nodes with a known Node, in the order they
	// were added: the snapshot's list order.
	order []string
	pods  map[string]*podState // by uid
	// assumed holds the uids of assumed pods.
	assumed map[string]struct{}
}

type nodeItem struct {
	info       *framework.NodeInfo
	prev, next *nodeItem
}

type podState struct {
	pi       *framework.PodInfo
	node     string
	deadline time.Time // set by FinishBinding
	bound    bool      // FinishBinding was called
}

// New returns an empty cache whose assumed pods expire ttl after their
// binding finished (0: never). now is the clock (nil: time.Now).
func New(ttl time.Duration, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	return &Cache{
		ttl:     ttl,
		now:     now,
		nodes:   map[string]*nodeItem{},
		pods:    map[string]*podState{},
		assumed: map[string]struct{}{},
	}
}

// item returns the node's item, creating an empty one.
func (c *Cache) item(name string) *nodeItem {
	it, ok := c.nodes[name]
	if !ok {
		it = &nodeItem{info: framework.NewNodeInfo(nil)}
		c.nodes[name] = it
		c.pushFront(it)
	}
	return it
}

// moveToFront marks it as the most recently changed.
func (c *Cache) moveToFront(it *nodeItem) {
	if c.head == it {
		return
	}
	c.unlink(it)
	c.pushFront(it)
}

func (c *Cache) pushFront(it *nodeItem) {
	it.prev, it.next = nil, c.head
	if c.head != nil {
		c.head.prev = it
	}
	c.head = it
}

func (c *Cache) unlink(it *nodeItem) {
	if it.prev != nil {
		it.prev.next = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	}
	if c.head == it {
		c.head = it.next
	}
	it.prev, it.next = nil, nil
}

func (c *Cache) addPodLocked(pi *framework.PodInfo, node string) {
	it := c.item(node)
	it.info.AddPod(pi)
	c.moveToFront(it)
}

func (c *Cache) removePodLocked(pi *framework.PodInfo, node string) {
	it, ok := c.nodes[node]
	if !ok {
		return
	}
	it.info.RemovePod(pi)
	c.moveToFront(it)
	c.dropIfEmpty(node, it)
}

// dropIfEmpty forgets a node item that has neither a node nor pods.
func (c *Cache) dropIfEmpty(name string, it *nodeItem) {
	if it.info.Node() == nil && len(it.info.Pods) == 0 {
		c.unlink(it)
		delete(c.nodes, name)
	}
}

// AssumePod counts pi on node before its bind is confirmed.
func (c *Cache) AssumePod(pi *framework.PodInfo, node string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	uid := pi.UID()
	if _, ok := c.pods[uid]; ok {
		return fmt.Errorf("pod %s (uid %s) is already in the scheduler cache", pi.Key(), uid)
	}
	c.addPodLocked(pi, node)
	c.pods[uid] = &podState{pi: pi, node: node}
	c.assumed[uid] = struct{}{}
	return nil
}

// FinishBinding starts the expiry clock of an assumed pod whose bind was
// written.
func (c *Cache) FinishBinding(pi *framework.PodInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uid := pi.UID()
	if _, ok := c.assumed[uid]; !ok {
		return
	}
	st := c.pods[uid]
	st.bound = true
	st.deadline = c.now().Add(c.ttl)
}

// ForgetPod undoes AssumePod (the bind failed or was not attempted).
func (c *Cache) ForgetPod(pi *framework.PodInfo) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	uid := pi.UID()
	if _, ok := c.assumed[uid]; !ok {
		return fmt.Errorf("pod %s (uid %s) is not assumed", pi.Key(), uid)
	}
	st := c.pods[uid]
	c.removePodLocked(st.pi, st.node)
	delete(c.pods, uid)
	delete(c.assumed, uid)
	return nil
}

// AddPod counts a pod the watch shows bound to pi.Pod's spec.nodeName. It
// confirms the pod's assumption, moving it if it was bound elsewhere.
func (c *Cache) AddPod(pi *framework.PodInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uid, node := pi.UID(), pi.Pod.GetSpec().GetNodeName()
	if st, ok := c.pods[uid]; ok {
		delete(c.assumed, uid)
		if st.node == node {
			// Confirmed where assumed (or an update): usually the same
			// requests, so nothing to recount.
			it := c.item(node)
			gen := it.info.Generation
			it.info.ConfirmPod(pi)
			if it.info.Generation != gen {
				c.moveToFront(it)
			}
			st.pi, st.bound = pi, false
			return
		}
		// Bound elsewhere than assumed (another scheduler won).
		c.removePodLocked(st.pi, st.node)
	}
	c.addPodLocked(pi, node)
	c.pods[uid] = &podState{pi: pi, node: node}
}

// UpdatePod replaces a bound pod's accounting with cur's.
func (c *Cache) UpdatePod(cur *framework.PodInfo) {
	c.AddPod(cur)
}

// RemovePod stops counting a pod (deleted, or finished).
func (c *Cache) RemovePod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uid := pod.GetMetadata().GetUid()
	st, ok := c.pods[uid]
	if !ok {
		return
	}
	c.removePodLocked(st.pi, st.node)
	delete(c.pods, uid)
	delete(c.assumed, uid)
}

// IsAssumed reports whether the pod with uid is assumed.
func (c *Cache) IsAssumed(uid string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.assumed[uid]
	return ok
}

// Has reports whether the pod with uid is counted (assumed or added).
func (c *Cache) Has(uid string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.pods[uid]
	return ok
}

// AddNode adds or updates a node.
func (c *Cache) AddNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := node.GetMetadata().GetName()
	it := c.item(name)
	if it.info.Node() == nil {
		c.order = append(c.order, name)
	}
	it.info.SetNode(node)
	c.moveToFront(it)
}

// UpdateNode replaces a node.
func (c *Cache) UpdateNode(node *corev1.Node) { c.AddNode(node) }

// RemoveNode forgets a node; pods still bound to it stay counted until
// they are removed.
func (c *Cache) RemoveNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := node.GetMetadata().GetName()
	it, ok := c.nodes[name]
	if !ok || it.info.Node() == nil {
		return
	}
	it.info.RemoveNode()
	c.moveToFront(it)
	if i := slices.Index(c.order, name); i >= 0 {
		c.order = slices.Delete(c.order, i, i+1)
	}
	c.dropIfEmpty(name, it)
}

// Cleanup expires the assumed pods whose binding finished more than the
// TTL before now, and returns them.
func (c *Cache) Cleanup(now time.Time) []*framework.PodInfo {
	if c.ttl <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var expired []*framework.PodInfo
	for uid := range c.assumed {
		st := c.pods[uid]
		if !st.bound || now.Before(st.deadline) {
			continue
		}
		c.removePodLocked(st.pi, st.node)
		delete(c.pods, uid)
		delete(c.assumed, uid)
		expired = append(expired, st.pi)
	}
	return expired
}

// Run calls Cleanup every period until ctx ends; onExpire (may be nil)
// hears of each expired pod.
func (c *Cache) Run(ctx context.Context, period time.Duration, onExpire func(*framework.PodInfo)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, pi := range c.Cleanup(c.now()) {
				if onExpire != nil {
					onExpire(pi)
				}
			}
		}
	}
}

// UpdateSnapshot brings s up to date with the cache, copying only the
// nodes that changed since s was last updated. s must only be read by
// the caller (the scheduling goroutine) between updates.
func (c *Cache) UpdateSnapshot(s *framework.Snapshot) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if s.NodeInfoMap == nil {
		s.NodeInfoMap = map[string]*framework.NodeInfo{}
	}
	s.EnsureAffinityIndex()
	rebuild := false
	// affinityChanged: a node's affinity lists became empty or non-empty,
	// so the snapshot's lists of such nodes are rebuilt.
	affinityChanged := false
	for it := c.head; it != nil && it.info.Generation > s.Generation; it = it.next {
		if it.info.Node() == nil {
			continue
		}
		name := it.info.Name()
		if existing, ok := s.NodeInfoMap[name]; ok {
			hadAffinity, hadAnti := len(existing.PodsWithAffinity) > 0, len(existing.PodsWithRequiredAntiAffinity) > 0
			s.CopyNodeInfo(it.info, existing)
			if hadAffinity != (len(existing.PodsWithAffinity) > 0) || hadAnti != (len(existing.PodsWithRequiredAntiAffinity) > 0) {
				affinityChanged = true
			}
		} else {
			ni := it.info.Clone()
			s.NodeInfoMap[name] = ni
			s.IndexNodeInfo(ni)
			rebuild = true
		}
	}
	if c.head != nil {
		s.Generation = max(s.Generation, c.head.info.Generation)
	}
	if len(s.NodeInfoMap) > len(c.order) {
		for name := range s.NodeInfoMap {
			if it, ok := c.nodes[name]; !ok || it.info.Node() == nil {
				s.UnindexNodeInfo(s.NodeInfoMap[name])
				delete(s.NodeInfoMap, name)
			}
		}
		rebuild = true
	}
	if rebuild || len(s.NodeInfoList) != len(c.order) {
		s.NodeInfoList = s.NodeInfoList[:0]
		for _, name := range c.order {
			s.NodeInfoList = append(s.NodeInfoList, s.NodeInfoMap[name])
		}
		affinityChanged = true
	}
	if affinityChanged {
		s.UpdateAffinityLists()
	}
}

// Counts are the cache's sizes, for metrics.
type Counts struct {
	Nodes, Pods, AssumedPods int
}

// Counts returns the number of nodes, pods and assumed pods.
func (c *Cache) Counts() Counts {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return Counts{Nodes: len(c.order), Pods: len(c.pods), AssumedPods: len(c.assumed)}
}

// NodeInfo returns a copy of the named node's accounting (nil if unknown).
func (c *Cache) NodeInfo(name string) *framework.NodeInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if it, ok := c.nodes[name]; ok {
		return it.info.Clone()
	}
	return nil
}
