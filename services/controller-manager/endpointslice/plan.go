package endpointslice

import (
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Plan is the writes that bring a Service's slices to the desired state.
// Its slices are new objects, free to send.
type Plan struct {
	// Create holds new slices (metadata.generateName set).
	Create []*discoveryv1.EndpointSlice
	// Update holds changed slices, with the name and resourceVersion of
	// the stored slice they replace.
	Update []*discoveryv1.EndpointSlice
	// Delete holds existing slices to delete.
	Delete []*discoveryv1.EndpointSlice
	// Added and Removed count the endpoints new to the slices and gone
	// from them.
	Added, Removed int
}

// Writes is the number of API writes the plan makes.
func (p Plan) Writes() int { return len(p.Create) + len(p.Update) + len(p.Delete) }

// plan compares a Service's existing slices (those labelled as its and
// managed by this controller, not being deleted) with the desired
// endpoints, and returns the writes that make them match, packing at most
// maxPerSlice endpoints into each slice (reconcileByAddressType and
// reconcileByPortMapping of Kubernetes' reconciler). It is a pure function:
// the same inputs give the same plan.
func plan(svc *corev1.Service, want desired, existing []*discoveryv1.EndpointSlice, maxPerSlice int) Plan {
	existing = slices.Clone(existing)
	slices.SortFunc(existing, func(a, b *discoveryv1.EndpointSlice) int {
		return strings.Compare(a.GetMetadata().GetName(), b.GetMetadata().GetName())
	})
	var p Plan
	byPorts := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		if s.GetAddressType() == AddressTypeIPv4 && ownedBy(s, svc) {
			key := portSetKey(s.GetPorts())
			byPorts[key] = append(byPorts[key], s)
		} else {
			// Another address type, or a slice of an older Service of
			// this name that the garbage collector has yet to delete.
			p.Delete = append(p.Delete, s)
		}
	}

	for _, key := range slices.Sorted(maps.Keys(want.groups)) {
		planPortSet(&p, svc, byPorts[key], want.groups[key], maxPerSlice)
	}
	// Slices of port sets no pod has any more.
	for _, key := range slices.Sorted(maps.Keys(byPorts)) {
		if _, ok := want.groups[key]; !ok {
			for _, s := range byPorts[key] {
				p.Removed += len(s.GetEndpoints())
				p.Delete = append(p.Delete, s)
			}
		}
	}

	// A Service without endpoints keeps one empty placeholder slice.
	if len(existing) == len(p.Delete) && len(p.Create) == 0 {
		ph := newSlice(svc, nil)
		if len(p.Delete) == 1 && isPlaceholder(p.Delete[0], ph, svc) {
			p.Delete = nil // it is there already
		} else {
			p.Create = append(p.Create, ph)
		}
	}

	// A slice that would be deleted is rather updated into one that
	// would be created: one write instead of two.
	for i := 0; i < len(p.Delete) && len(p.Create) > 0; {
		del := p.Delete[i]
		if del.GetAddressType() != AddressTypeIPv4 || !ownedBy(del, svc) {
			i++
			continue
		}
		s := p.Create[len(p.Create)-1]
		p.Create = p.Create[:len(p.Create)-1]
		dm := del.GetMetadata()
		s.Metadata.Name = dm.GetName()
		s.Metadata.GenerateName = dm.GetGenerateName()
		s.Metadata.Uid = dm.GetUid()
		s.Metadata.ResourceVersion = dm.GetResourceVersion()
		p.Update = append(p.Update, s)
		p.Delete = slices.Delete(p.Delete, i, i+1)
	}
	return p
}

// planPortSet adds to p the writes for the slices of one port set.
func planPortSet(p *Plan, svc *corev1.Service, existing []*discoveryv1.EndpointSlice, g *portGroup, maxPerSlice int) {
	remaining := maps.Clone(g.endpoints)
	var update, unchanged []*discoveryv1.EndpointSlice

	// 1. Existing slices keep the endpoints still desired, in their
	// order, with their desired conditions.
	for _, s := range existing {
		var kept []*discoveryv1.Endpoint
		changed := false
		for _, ep := range s.GetEndpoints() {
			key := endpointKey(ep)
			want, ok := remaining[key]
			if !ok {
				continue
			}
			kept = append(kept, want)
			if !proto.Equal(want, ep) {
				changed = true
			}
			delete(remaining, key)
		}
		labels, labelsChanged := sliceLabels(s.GetMetadata().GetLabels(), svc)
		switch {
		case changed || len(kept) != len(s.GetEndpoints()):
			p.Removed += len(s.GetEndpoints()) - len(kept)
			if len(kept) == 0 {
				p.Delete = append(p.Delete, s)
				continue
			}
			next := proto.Clone(s).(*discoveryv1.EndpointSlice)
			next.Endpoints = cloneEndpoints(kept)
			next.Metadata.Labels = labels
			update = append(update, next)
		case labelsChanged:
			next := proto.Clone(s).(*discoveryv1.EndpointSlice)
			next.Metadata.Labels = labels
			update = append(update, next)
		default:
			unchanged = append(unchanged, s)
		}
	}

	order := slices.Sorted(maps.Keys(remaining))
	p.Added += len(order)
	pop := func() *discoveryv1.Endpoint {
		ep := remaining[order[0]]
		order = order[1:]
		return proto.Clone(ep).(*discoveryv1.Endpoint)
	}

	// 2. Slices written anyway are filled up first, the fullest first.
	if len(order) > 0 {
		slices.SortStableFunc(update, func(a, b *discoveryv1.EndpointSlice) int {
			return len(b.GetEndpoints()) - len(a.GetEndpoints())
		})
		for _, s := range update {
			for len(order) > 0 && len(s.Endpoints) < maxPerSlice {
				s.Endpoints = append(s.Endpoints, pop())
			}
		}
	}

	// 3. The rest goes into the unchanged slice it fills best, if it
	// fits in one, else into new slices.
	for len(order) > 0 {
		var fill *discoveryv1.EndpointSlice
		if len(order) < maxPerSlice {
			if i := sliceToFill(unchanged, len(order), maxPerSlice); i >= 0 {
				fill = proto.Clone(unchanged[i]).(*discoveryv1.EndpointSlice)
				unchanged = slices.Delete(unchanged, i, i+1)
			}
		}
		isNew := fill == nil
		if isNew {
			fill = newSlice(svc, g.ports)
		}
		for len(order) > 0 && len(fill.Endpoints) < maxPerSlice {
			fill.Endpoints = append(fill.Endpoints, pop())
		}
		if isNew {
			p.Create = append(p.Create, fill)
		} else {
			update = append(update, fill)
		}
	}
	p.Update = append(p.Update, update...)
}

// sliceToFill returns the index of the slice that n more endpoints fill
// closest to maxPerSlice without passing it, or -1 (getSliceToFill).
func sliceToFill(ss []*discoveryv1.EndpointSlice, n, maxPerSlice int) int {
	best, bestGap := -1, maxPerSlice
	for i, s := range ss {
		gap := maxPerSlice - (n + len(s.GetEndpoints()))
		if gap >= 0 && gap < bestGap {
			best, bestGap = i, gap
			if gap == 0 {
				break
			}
		}
	}
	return best
}

// newSlice returns a new slice of svc with ports and no endpoints.
func newSlice(svc *corev1.Service, ports []*discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
	m := svc.GetMetadata()
	labels, _ := sliceLabels(nil, svc)
	s := &discoveryv1.EndpointSlice{
		ApiVersion: "discovery.k8s.io/v1",
		Kind:       "EndpointSlice",
		Metadata: &metav1.ObjectMeta{
			Namespace:       m.GetNamespace(),
			GenerateName:    m.GetName() + "-",
			Labels:          labels,
			OwnerReferences: []*metav1.OwnerReference{ownerRef(svc)},
		},
		AddressType: AddressTypeIPv4,
	}
	for _, port := range ports {
		s.Ports = append(s.Ports, proto.Clone(port).(*discoveryv1.EndpointPort))
	}
	return s
}

// ownerRef is the controller reference of svc's slices.
func ownerRef(svc *corev1.Service) *metav1.OwnerReference {
	m := svc.GetMetadata()
	return &metav1.OwnerReference{
		ApiVersion:         "v1",
		Kind:               "Service",
		Name:               m.GetName(),
		Uid:                m.GetUid(),
		Controller:         proto.Bool(true),
		BlockOwnerDeletion: proto.Bool(true),
	}
}

// ownedBy reports whether s has an owner reference to svc (by uid).
func ownedBy(s *discoveryv1.EndpointSlice, svc *corev1.Service) bool {
	for _, r := range s.GetMetadata().GetOwnerReferences() {
		if r.GetUid() == svc.GetMetadata().GetUid() && r.GetKind() == "Service" && r.GetApiVersion() == "v1" {
			return true
		}
	}
	return false
}

// isPlaceholder reports whether s is the placeholder ph would be: owned
// alike, labelled alike, empty.
func isPlaceholder(s, ph *discoveryv1.EndpointSlice, svc *corev1.Service) bool {
	sm, pm := s.GetMetadata(), ph.GetMetadata()
	return sm.GetNamespace() == pm.GetNamespace() &&
		maps.Equal(sm.GetLabels(), pm.GetLabels()) &&
		slices.EqualFunc(sm.GetOwnerReferences(), pm.GetOwnerReferences(), func(a, b *metav1.OwnerReference) bool { return proto.Equal(a, b) }) &&
		ownedBy(s, svc) &&
		s.GetAddressType() == ph.GetAddressType() &&
		len(s.GetEndpoints()) == 0 && len(s.GetPorts()) == 0
}

// sliceLabels returns the labels a slice of svc has, keeping nothing of
// current but the labels no one reserves: the Service's labels but the
// reserved ones, the Service's name, the manager, and headless for a
// Service with clusterIP None. changed reports whether current differs.
//
// Kubernetes also labels a Service without clusterIP headless and ignores
// the headless label when it compares; here the clusterIP may not be
// allocated yet (headless it is not), so only "None" counts and the label
// follows the Service.
func sliceLabels(current map[string]string, svc *corev1.Service) (labels map[string]string, changed bool) {
	labels = make(map[string]string, len(svc.GetMetadata().GetLabels())+3)
	for k, v := range svc.GetMetadata().GetLabels() {
		if k != LabelServiceName && k != LabelManagedBy && k != LabelHeadless {
			labels[k] = v
		}
	}
	if svc.GetSpec().GetClusterIp() == ClusterIPNone {
		labels[LabelHeadless] = ""
	}
	labels[LabelServiceName] = svc.GetMetadata().GetName()
	labels[LabelManagedBy] = ControllerName
	return labels, !maps.Equal(current, labels)
}

func cloneEndpoints(eps []*discoveryv1.Endpoint) []*discoveryv1.Endpoint {
	out := make([]*discoveryv1.Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = proto.Clone(ep).(*discoveryv1.Endpoint)
	}
	return out
}
