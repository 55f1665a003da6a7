package dns

import (
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
)

// LabelServiceName is the label of an EndpointSlice naming its Service.
const LabelServiceName = "kubernetes.io/service-name"

// objectKey names a namespaced object.
type objectKey struct{ namespace, name string }

// Index is the DNS server's copy of the cluster's names: the Services and
// EndpointSlices the informers deliver (or a test sets), and per Service
// the records they make (a serviceView, rebuilt whole by buildView when
// the Service or one of its slices changes). Lookups take a read lock and
// get immutable views. Safe for concurrent use.
type Index struct {
	zone string // lower case, fully qualified

	mu       sync.RWMutex
	services map[objectKey]*corev1.Service
	slices   map[objectKey]*discoveryv1.EndpointSlice
	sliceSvc map[objectKey]objectKey              // slice -> the Service it was indexed under
	slicesOf map[objectKey]map[objectKey]struct{} // Service -> its slices
	views    map[objectKey]*serviceView
	// reverse holds the PTR names of each address: ClusterIPs name their
	// Service, endpoints their endpoint name. Counted, as two
	// slices may hold the same endpoint for a moment.
	reverseSvc map[netip.Addr]map[string]int
	reverseEp  map[netip.Addr]map[string]int
	// namespaces, when not nil, are the namespaces that exist (SetNamespace);
	// nil: every namespace counts as existing.
	namespaces map[string]struct{}
	serial     uint32
	changed    func() // called after each change, outside the lock (tests)
}

// NewIndex returns an empty index of zone (the cluster domain).
func NewIndex(zone string) *Index {
	return &Index{
		zone:       fqdn(zone),
		services:   map[objectKey]*corev1.Service{},
		slices:     map[objectKey]*discoveryv1.EndpointSlice{},
		sliceSvc:   map[objectKey]objectKey{},
		slicesOf:   map[objectKey]map[objectKey]struct{}{},
		views:      map[objectKey]*serviceView{},
		reverseSvc: map[netip.Addr]map[string]int{},
		reverseEp:  map[netip.Addr]map[string]int{},
		serial:     uint32(time.Now().Unix()),
	}
}

// TrackNamespaces makes namespace names answer as CoreDNS does with its
// namespace informer: <ns>.svc.<zone> and pod names of a namespace exist
// only once SetNamespace has been called for it. Without it every
// namespace exists.
func (x *Index) TrackNamespaces() {
	x.mu.Lock()
	if x.namespaces == nil {
		x.namespaces = map[string]struct{}{}
	}
	x.mu.Unlock()
}

// SetNamespace records that a namespace exists (see TrackNamespaces).
func (x *Index) SetNamespace(name string) {
	x.mu.Lock()
	if x.namespaces == nil {
		x.namespaces = map[string]struct{}{}
	}
	x.namespaces[name] = struct{}{}
	x.mu.Unlock()
	x.notify()
}

// DeleteNamespace records that a namespace is gone.
func (x *Index) DeleteNamespace(name string) {
	x.mu.Lock()
	delete(x.namespaces, name)
	x.mu.Unlock()
	x.notify()
}

// SetService adds or replaces a Service. svc is kept: it must not change
// afterwards (informer objects never do).
func (x *Index) SetService(svc *corev1.Service) {
	k := objectKey{svc.GetMetadata().GetNamespace(), svc.GetMetadata().GetName()}
	x.mu.Lock()
	x.services[k] = svc
	x.rebuildLocked(k)
	x.mu.Unlock()
	x.notify()
}

// DeleteService removes a Service and its records.
func (x *Index) DeleteService(namespace, name string) {
	k := objectKey{namespace, name}
	x.mu.Lock()
	delete(x.services, k)
	x.rebuildLocked(k)
	x.mu.Unlock()
	x.notify()
}

// SetEndpointSlice adds or replaces an EndpointSlice; it counts for the
// Service its kubernetes.io/service-name label names (none: ignored). s is
// kept: it must not change afterwards.
func (x *Index) SetEndpointSlice(s *discoveryv1.EndpointSlice) {
	k := objectKey{s.GetMetadata().GetNamespace(), s.GetMetadata().GetName()}
	svcName := s.GetMetadata().GetLabels()[LabelServiceName]
	x.mu.Lock()
	x.removeSliceLocked(k)
	if svcName != "" {
		svc := objectKey{k.namespace, svcName}
		x.slices[k] = s
		x.sliceSvc[k] = svc
		if x.slicesOf[svc] == nil {
			x.slicesOf[svc] = map[objectKey]struct{}{}
		}
		x.slicesOf[svc][k] = struct{}{}
		x.rebuildLocked(svc)
	}
	x.mu.Unlock()
	x.notify()
}

// DeleteEndpointSlice removes an EndpointSlice.
func (x *Index) DeleteEndpointSlice(namespace, name string) {
	x.mu.Lock()
	x.removeSliceLocked(objectKey{namespace, name})
	x.mu.Unlock()
	x.notify()
}

func (x *Index) removeSliceLocked(k objectKey) {
	svc, ok := x.sliceSvc[k]
	if !ok {
		return
	}
	delete(x.slices, k)
	delete(x.sliceSvc, k)
	delete(x.slicesOf[svc], k)
	if len(x.slicesOf[svc]) == 0 {
		delete(x.slicesOf, svc)
	}
	x.rebuildLocked(svc)
}

// rebuildLocked recomputes the view of Service k and swaps it in, with its
// reverse names.
func (x *Index) rebuildLocked(k objectKey) {
	var next *serviceView
	if svc, ok := x.services[k]; ok {
		var ss []*discoveryv1.EndpointSlice
		for sk := range x.slicesOf[k] {
			ss = append(ss, x.slices[sk])
		}
		slices.SortFunc(ss, func(a, b *discoveryv1.EndpointSlice) int {
			return strings.Compare(a.GetMetadata().GetName(), b.GetMetadata().GetName())
		})
		next = buildView(svc, ss, x.zone)
	}
	if prev := x.views[k]; prev != nil {
		x.reverseLocked(prev, -1)
	}
	if next == nil {
		delete(x.views, k)
	} else {
		x.views[k] = next
		x.reverseLocked(next, +1)
	}
	x.serial++
}

func (x *Index) reverseLocked(v *serviceView, delta int) {
	count := func(m map[netip.Addr]map[string]int, ip netip.Addr, name string) {
		names := m[ip]
		if names == nil {
			names = map[string]int{}
			m[ip] = names
		}
		names[name] += delta
		if names[name] <= 0 {
			delete(names, name)
		}
		if len(names) == 0 {
			delete(m, ip)
		}
	}
	for _, ip := range v.clusterIPs {
		count(x.reverseSvc, ip, v.fqdn)
	}
	for _, g := range v.groups {
		for _, e := range g.endpoints {
			count(x.reverseEp, e.ip, e.fqdn)
		}
	}
}

func (x *Index) notify() {
	if x.changed != nil {
		x.changed()
	}
}

// view returns the records of Service namespace/name, or nil.
func (x *Index) view(namespace, name string) *serviceView {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.views[objectKey{namespace, name}]
}

// namespaceExists reports whether the namespace exists (always, unless
// namespaces are tracked).
func (x *Index) namespaceExists(ns string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.namespaces == nil {
		return true
	}
	_, ok := x.namespaces[ns]
	return ok
}

// ptr returns the names of ip: its Service's when it is a ClusterIP (as
// CoreDNS, the first), else the names of the endpoints that have it (of
// every Service, headless or not, as CoreDNS), sorted.
func (x *Index) ptr(ip netip.Addr) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if names := x.reverseSvc[ip]; len(names) > 0 {
		return sortedKeys(names)[:1]
	}
	return sortedKeys(x.reverseEp[ip])
}

// Serial is the SOA serial: it grows with every change.
func (x *Index) Serial() uint32 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.serial
}

// Len returns the number of Services indexed.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.views)
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
