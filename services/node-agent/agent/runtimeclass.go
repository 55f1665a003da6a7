package agent

import (
	"context"
	"fmt"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	nodev1 "skiff.dev/proto/node/v1"
)

// runtimeClassGetter reads a RuntimeClass from the API.
type runtimeClassGetter func(ctx context.Context, name string) (*nodev1.RuntimeClass, error)

// runtimeHandler is the CRI runtime handler a pod's sandbox runs with, as
// the kubelet's RuntimeClass manager resolves it: "" (the runtime's
// default) for a pod without runtimeClassName, else the handler of the
// RuntimeClass of that name. A class that does not exist is an error in
// the kubelet's words (`runtimeclass.node.k8s.io "x" not found`): the pod
// does not start until it does.
//
// The class is read from the API when a sandbox is made, not from a
// cache: it is needed once per sandbox of the few pods that name one.
func runtimeHandler(ctx context.Context, get runtimeClassGetter, p *corev1.Pod) (string, error) {
	name := p.GetSpec().GetRuntimeClassName()
	if name == "" {
		return "", nil
	}
	rc, err := get(ctx, name)
	switch {
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("runtimeclass.node.k8s.io %q not found", name)
	case err != nil:
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", name, err)
	}
	return rc.GetHandler(), nil
}
