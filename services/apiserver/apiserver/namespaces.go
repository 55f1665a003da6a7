package apiserver

import (
	"context"
	"fmt"
	"slices"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// SystemNamespaces are created when the apiserver starts (if missing).
var SystemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// NamespaceFinalizer is the namespace controller's entry in a Namespace's
// spec.finalizers: a deleted namespace stays (Terminating) until the
// controller has deleted everything in it and removed the entry.
const NamespaceFinalizer = "kubernetes"

// namespaceTerminating marks a namespace when its deletion starts:
// status.phase Terminating, and the namespace controller's finalizer.
func namespaceTerminating(ns *corev1.Namespace) {
	if ns.Status == nil {
		ns.Status = &corev1.NamespaceStatus{}
	}
	ns.Status.Phase = "Terminating"
	if ns.Spec == nil {
		ns.Spec = &corev1.NamespaceSpec{}
	}
	if !slices.Contains(ns.Spec.Finalizers, NamespaceFinalizer) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, NamespaceFinalizer)
	}
}

// namespaceSpecFinalizers hold a deleted namespace like metadata.finalizers.
func namespaceSpecFinalizers(ns *corev1.Namespace) []string { return ns.GetSpec().GetFinalizers() }

// systemNamespacesHook creates the system namespaces. It runs before the
// other hooks but after admission's (wire_admission.go): others (the RBAC
// bootstrap) write into kube-system, which NamespaceLifecycle wants to
// exist, and admission must be ready to admit these creates.
func (s *Server) systemNamespacesHook() postStartHook {
	return postStartHook{name: "system-namespaces", run: func(ctx context.Context) error {
		nss := client.Namespaces(s.loopback)
		for _, name := range SystemNamespaces {
			_, err := nss.Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: name}})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating namespace %s: %w", name, err)
			}
		}
		return nil
	}}
}
