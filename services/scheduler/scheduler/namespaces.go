package scheduler

import (
	"maps"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/labels"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// namespaceInformer watches namespaces for InterPodAffinity's namespace
// selectors. A namespace added or relabelled retries the pods
// InterPodAffinity rejected (a selector may now pick it).
type namespaceInformer struct {
	inf *informer.Informer[*corev1.Namespace]
}

var _ framework.NamespaceLister = (*namespaceInformer)(nil)

func newNamespaceInformer(s *Scheduler, o informer.Options) *namespaceInformer {
	n := &namespaceInformer{inf: informer.New(informer.FromClient(client.Namespaces(s.conn)), o)}
	n.inf.AddHandler(informer.Handler[*corev1.Namespace]{
		OnAdd: func(*corev1.Namespace) { s.queue.MoveRejectedBy(config.InterPodAffinity, "NamespaceAdd") },
		OnUpdate: func(old, cur *corev1.Namespace) {
			if !maps.Equal(old.GetMetadata().GetLabels(), cur.GetMetadata().GetLabels()) {
				s.queue.MoveRejectedBy(config.InterPodAffinity, "NamespaceUpdate")
			}
		},
	})
	return n
}

// NamespaceLabels implements framework.NamespaceLister.
func (n *namespaceInformer) NamespaceLabels(name string) map[string]string {
	ns, ok := n.inf.Store().Get(name)
	if !ok {
		return nil
	}
	return ns.GetMetadata().GetLabels()
}

// NamespacesMatching implements framework.NamespaceLister.
func (n *namespaceInformer) NamespacesMatching(sel labels.Selector) []string {
	var out []string
	for _, ns := range n.inf.Store().List() {
		if sel.Matches(ns.GetMetadata().GetLabels()) {
			out = append(out, ns.GetMetadata().GetName())
		}
	}
	return out
}

// usesPlugin reports whether a profile enables the named plugin at any
// extension point.
func usesPlugin(p *config.Configuration, name string) bool {
	for i := range p.Profiles {
		for _, point := range config.ExtensionPoints {
			if p.Profiles[i].Enabled(point, name) {
				return true
			}
		}
	}
	return false
}
