package defaults

import (
	"maps"

	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
)

// NamespaceNameLabel is the label Kubernetes puts on every namespace with
// the namespace's own name, so namespace selectors can pick one by name.
const NamespaceNameLabel = "kubernetes.io/metadata.name"

// Namespace defaults a namespace: status.phase Active and the
// kubernetes.io/metadata.name label set to its name (once it has one),
// overwriting any other value so selectors can trust it.
func Namespace(ns *corev1.Namespace) {
	if ns == nil {
		return
	}
	if ns.Status == nil {
		ns.Status = &corev1.NamespaceStatus{}
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = "Active"
	}
	if m := ns.Metadata; m != nil && m.Name != "" {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[NamespaceNameLabel] = m.Name
	}
}

// Node defaults a node: status.allocatable is a copy of status.capacity
// when only the capacity is reported.
func Node(n *corev1.Node) {
	if n == nil || n.Status == nil {
		return
	}
	if n.Status.Allocatable == nil && n.Status.Capacity != nil {
		n.Status.Allocatable = maps.Clone(n.Status.Capacity)
	}
}

// Event defaults an event: type Normal and count 1.
func Event(e *corev1.Event) {
	if e == nil {
		return
	}
	if e.Type == "" {
		e.Type = "Normal"
	}
	if e.Count == 0 {
		e.Count = 1
	}
}

// ConfigMap has no defaults (as in Kubernetes); it exists so every kind
// goes through the same create path.
func ConfigMap(cm *corev1.ConfigMap) {}

// Lease has no defaults (as in Kubernetes); it exists so every kind goes
// through the same create path.
func Lease(l *coordinationv1.Lease) {}
