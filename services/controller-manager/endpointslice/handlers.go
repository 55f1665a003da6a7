package endpointslice

import (
	"maps"
	"slices"

	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
)

// The handlers below run on the informers' goroutines: they only map an
// event to the Services it concerns and enqueue their keys.

// register adds the handlers, and the pods-by-node index the node handler
// reads.
func (c *Controller) register() {
	c.pods.AddIndex(informer.IndexNodeName, informer.PodNodeName)
	c.services.AddHandler(informer.Handler[*corev1.Service]{
		OnAdd:    func(s *corev1.Service) { c.queue.Enqueue(informer.Key(s)) },
		OnUpdate: func(_, s *corev1.Service) { c.queue.Enqueue(informer.Key(s)) },
		OnDelete: func(s *corev1.Service) { c.queue.Enqueue(informer.Key(s)) },
	})
	c.pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd:    c.addPod,
		OnUpdate: c.updatePod,
		OnDelete: c.addPod, // the Services it was a member of
	})
	c.slices.AddHandler(informer.Handler[*discoveryv1.EndpointSlice]{
		OnAdd:    c.addSlice,
		OnUpdate: c.updateSlice,
		OnDelete: c.deleteSlice,
	})
	c.nodes.AddHandler(informer.Handler[*corev1.Node]{
		OnAdd: c.nodeChanged,
		OnUpdate: func(old, cur *corev1.Node) {
			if old.GetMetadata().GetLabels()[LabelTopologyZone] != cur.GetMetadata().GetLabels()[LabelTopologyZone] {
				c.nodeChanged(cur)
			}
		},
		OnDelete: c.nodeChanged,
	})
}

// enqueuePodChange queues a Service after a pod change, BatchPeriod later.
func (c *Controller) enqueuePodChange(key string) {
	if c.opts.BatchPeriod > 0 {
		c.queue.EnqueueAfter(key, c.opts.BatchPeriod)
		return
	}
	c.queue.Enqueue(key)
}

func (c *Controller) addPod(p *corev1.Pod) {
	for _, key := range c.memberOf(p) {
		c.enqueuePodChange(key)
	}
}

// updatePod queues the Services whose endpoints the change may alter: all
// the pod's Services, old and new, if what its endpoint is made of
// changed; only those it joined or left if just its labels did
// (GetServicesToUpdateOnPodChange in Kubernetes).
func (c *Controller) updatePod(old, cur *corev1.Pod) {
	if old.GetMetadata().GetResourceVersion() == cur.GetMetadata().GetResourceVersion() {
		return // a resync
	}
	podChanged, labelsChanged := podEndpointChanged(old, cur)
	if !podChanged && !labelsChanged {
		return
	}
	now := c.memberOf(cur)
	if !labelsChanged {
		for _, key := range now {
			c.enqueuePodChange(key)
		}
		return
	}
	before := c.memberOf(old)
	for _, key := range now {
		if podChanged || !slices.Contains(before, key) {
			c.enqueuePodChange(key)
		}
	}
	for _, key := range before {
		if !slices.Contains(now, key) {
			c.enqueuePodChange(key)
		}
	}
}

// podEndpointChanged compares what a pod's endpoint is made of (podChanged)
// and the labels that decide the Services it is in (labelsChanged). The
// pod's name, uid, hostname, subdomain and ports cannot change.
func podEndpointChanged(old, cur *corev1.Pod) (podChanged, labelsChanged bool) {
	om, cm := old.GetMetadata(), cur.GetMetadata()
	labelsChanged = !maps.Equal(om.GetLabels(), cm.GetLabels())
	podChanged = (om.GetDeletionTimestamp() == nil) != (cm.GetDeletionTimestamp() == nil) ||
		podReady(old) != podReady(cur) ||
		shouldBeEndpoint(old) != shouldBeEndpoint(cur) ||
		old.GetStatus().GetPodIp() != cur.GetStatus().GetPodIp() ||
		!slices.EqualFunc(old.GetStatus().GetPodIps(), cur.GetStatus().GetPodIps(), func(a, b *corev1.PodIP) bool { return a.GetIp() == b.GetIp() }) ||
		old.GetSpec().GetNodeName() != cur.GetSpec().GetNodeName()
	return podChanged, labelsChanged
}

// memberOf returns the keys of the Services of p's namespace whose
// selectors match p's labels.
func (c *Controller) memberOf(p *corev1.Pod) []string {
	var out []string
	labels := p.GetMetadata().GetLabels()
	c.services.Store().EachByIndex(informer.IndexNamespace, p.GetMetadata().GetNamespace(), func(s *corev1.Service) {
		if selects(s.GetSpec().GetSelector(), labels) {
			out = append(out, informer.Key(s))
		}
	})
	return out
}

// serviceKeyOf returns the key of the Service a managed slice belongs to,
// or "" for a slice this controller does not manage.
func serviceKeyOf(s *discoveryv1.EndpointSlice) string {
	m := s.GetMetadata()
	name := m.GetLabels()[LabelServiceName]
	if name == "" || m.GetLabels()[LabelManagedBy] != ControllerName {
		return ""
	}
	return informer.KeyOf(m.GetNamespace(), name)
}

// enqueueForSlice queues the Service of a slice someone else changed,
// sliceChangeDelay later.
func (c *Controller) enqueueForSlice(key string) {
	if key != "" {
		c.queue.EnqueueAfter(key, sliceChangeDelay)
	}
}

// wakeIfWaiting syncs a Service at once if its last sync waited for the
// slices cache, which just changed.
func (c *Controller) wakeIfWaiting(key string) {
	if key != "" && c.tracker.wake(key) {
		c.queue.Enqueue(key)
	}
}

// addSlice: a slice the controller did not just write (after a restart,
// or someone else's) makes its Service sync.
func (c *Controller) addSlice(s *discoveryv1.EndpointSlice) {
	key := serviceKeyOf(s)
	if key != "" && !c.tracker.ownWrite(key, s) {
		c.enqueueForSlice(key)
	}
	c.wakeIfWaiting(key)
}

// updateSlice: a slice moved between Services (its labels changed) makes
// both sync; a change that is not the controller's own write makes its
// Service sync.
func (c *Controller) updateSlice(old, cur *discoveryv1.EndpointSlice) {
	oldKey, curKey := serviceKeyOf(old), serviceKeyOf(cur)
	if oldKey != curKey {
		c.enqueueForSlice(oldKey)
		c.enqueueForSlice(curKey)
		return
	}
	if curKey != "" && old.GetMetadata().GetResourceVersion() != cur.GetMetadata().GetResourceVersion() && !c.tracker.ownWrite(curKey, cur) {
		c.enqueueForSlice(curKey)
	}
	c.wakeIfWaiting(curKey)
}

// deleteSlice: a slice the controller did not delete itself makes its
// Service sync (a deleted slice is written again).
func (c *Controller) deleteSlice(s *discoveryv1.EndpointSlice) {
	key := serviceKeyOf(s)
	if key == "" {
		return
	}
	if !c.tracker.gone(key, s) {
		c.enqueueForSlice(key)
	}
	c.wakeIfWaiting(key)
}

// nodeChanged queues the Services of the pods on a node that appeared,
// went, or changed zone.
func (c *Controller) nodeChanged(n *corev1.Node) {
	seen := map[string]bool{}
	c.pods.Store().EachByIndex(informer.IndexNodeName, n.GetMetadata().GetName(), func(p *corev1.Pod) {
		for _, key := range c.memberOf(p) {
			if !seen[key] {
				seen[key] = true
				c.queue.Enqueue(key)
			}
		}
	})
}
