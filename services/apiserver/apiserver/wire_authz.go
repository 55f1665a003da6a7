package apiserver

import (
	"context"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/authz"
	"skiff.dev/services/apiserver/registry"
	"skiff.dev/services/apiserver/server"
)

// wireAuthz builds the authorizer from cfg.Authz; nil allows everything.
// Its informers (RBAC objects; pods for the node authorizer) read through
// the loopback connection, started by a post-start hook that first writes
// the bootstrap policy. The node authorizer's consistent reads of pods go
// to the pods registry directly, not through the request chain.
func (s *Server) wireAuthz() (server.Authorizer, error) {
	a, err := authz.New(authz.Config{
		Options:    s.cfg.Authz,
		Loopback:   s.loopback,
		Pods:       registryPods{s.logs.pods},
		Registerer: s.cfg.Registry,
		Logger:     s.log.Named("authz"),
	})
	if err != nil || a == nil {
		return nil, err
	}
	s.postStart = append(s.postStart, postStartHook{name: "authorization", run: a.Start})
	return a, nil
}

// registryPods is authz.PodReader over the pods registry.
type registryPods struct {
	r *registry.Registry[*corev1.Pod]
}

func (p registryPods) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return p.r.Get(ctx, namespace, name)
}

func (p registryPods) ListPods(ctx context.Context, o *metav1.ListOptions) ([]*corev1.Pod, error) {
	l, err := p.r.List(ctx, o)
	if err != nil {
		return nil, err
	}
	return l.Objects()
}
