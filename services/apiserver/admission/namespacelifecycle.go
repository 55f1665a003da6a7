package admission

import (
	"context"
	"fmt"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
)

// NamespaceLifecycleName is the plugin's flag name.
const NamespaceLifecycleName = "NamespaceLifecycle"

// ImmortalNamespaces may not be deleted.
var ImmortalNamespaces = []string{"default", "kube-system", "kube-public"}

// namespaceLifecycle refuses to create objects in a namespace that does not
// exist or is being deleted (their content would be lost, or would keep
// the namespace from going), and refuses to delete the namespaces the
// cluster depends on.
type namespaceLifecycle struct {
	namespaces *namespaces
}

func newNamespaceLifecycle(d *Deps) (any, error) {
	return &namespaceLifecycle{namespaces: newNamespaces(d, NamespaceLifecycleName)}, nil
}

// namespaces reads namespaces from the shared informer, or from the API
// when the informer has not seen one yet (it was created a moment ago).
type namespaces struct {
	plugin   string
	informer *informer.Informer[*corev1.Namespace]
	client   *client.Resource[*corev1.Namespace, *corev1.NamespaceList]
}

func newNamespaces(d *Deps, plugin string) *namespaces {
	return &namespaces{
		plugin:   plugin,
		informer: informer.For(d.Informers, client.Namespaces(d.Loopback)),
		client:   client.Namespaces(d.Loopback),
	}
}

// Terminating says whether a namespace is being deleted.
func Terminating(ns *corev1.Namespace) bool {
	return ns.GetMetadata().GetDeletionTimestamp() != nil || ns.GetStatus().GetPhase() == "Terminating"
}

func (p *namespaceLifecycle) Validate(ctx context.Context, a *Attributes) error {
	if a.Operation == Delete && a.Kind.Resource == "namespaces" && a.Kind.GVK.Group == "" {
		for _, n := range ImmortalNamespaces {
			if a.Name == n {
				return a.Forbidden("this namespace may not be deleted")
			}
		}
		return nil
	}
	if a.Operation != Create || !a.Kind.Namespaced || a.Namespace == "" {
		return nil
	}
	ns, err := p.namespaces.get(ctx, a.Namespace)
	if err != nil {
		return err
	}
	if Terminating(ns) {
		return a.Forbidden("unable to create new content in namespace %s because it is being terminated", a.Namespace)
	}
	return nil
}

// get returns a namespace, or NotFound.
func (n *namespaces) get(ctx context.Context, name string) (*corev1.Namespace, error) {
	if err := waitSynced(ctx, n.plugin, n.informer); err != nil {
		return nil, err
	}
	if ns, ok := n.informer.Store().GetByName("", name); ok {
		return ns, nil
	}
	ns, err := n.client.Get(ctx, "", name)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound("namespaces", name)
	}
	if err != nil {
		return nil, apierrors.NewInternal(fmt.Errorf("%s: reading namespace %q: %w", n.plugin, name, err))
	}
	return ns, nil
}
