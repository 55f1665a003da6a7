package apiserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/allocator"
	"skiff.dev/services/apiserver/authn"
	"skiff.dev/services/apiserver/server"
)

// wireTLS returns the TLS configuration the server's port serves with
// (nil with cfg.Authn off: plain text) and the loopback client's
// credentials (which must trust the server's certificate).
func (s *Server) wireTLS() (serverTLS *tls.Config, loopbackCreds credentials.TransportCredentials, err error) {
	if !s.cfg.Authn.Enabled {
		return nil, insecure.NewCredentials(), nil
	}
	m, err := s.inClusterNames(s.cfg.Authn).Material(s.cfg.DataDir, s.now())
	if err != nil {
		return nil, nil, err
	}
	s.tls = m // wireAuthn and wireAdmission use it too
	if m.CA != nil {
		s.log.Info("TLS material", zap.String("pki", s.cfg.Authn.PKIDirIn(s.cfg.DataDir)), zap.Strings("servingNames", m.ServingNames()))
	}
	loop := m.LoopbackTLS()
	loop.NextProtos = []string{client.GRPCProtocol}
	return m.ServerTLS(), credentials.NewTLS(loop), nil
}

// inClusterNames adds to the serving certificate the apiserver issues
// itself the names pods reach it by, as Kubernetes': the kubernetes
// Service's cluster IP (KUBERNETES_SERVICE_HOST) and
// kubernetes.default.svc and its shorter and longer forms.
func (s *Server) inClusterNames(o authn.Options) *authn.Options {
	names := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	if r, err := allocator.ParseIPRange(s.cfg.ServiceClusterIPRange); err == nil {
		names = append(names, r.Item(0))
	}
	o.TLSSANs = append(slices.Clone(o.TLSSANs), names...)
	return &o
}

// wireAuthn builds the authenticator from cfg.Authn; nil is off (every
// request is user.UnsecuredInfo). Service-account tokens are checked
// against an informer of ServiceAccounts on the loopback connection
// (started by a post-start hook), with a direct read when the informer
// does not have the account (yet).
func (s *Server) wireAuthn() (server.Authenticator, error) {
	o := &s.cfg.Authn
	if !o.Enabled {
		return nil, nil
	}
	m := s.tls // loaded by wireTLS
	s.logs.tls = m.NodeAgentTLS()
	if m.NodeAgentClient == nil {
		s.log.Warn("no client certificate for node agents (--node-agent-client-cert-file, or a CA in --pki-dir): Pods.Logs will be refused by agents that require one")
	}
	var tokens authn.StaticTokens
	if o.TokenAuthFile != "" {
		var err error
		if tokens, err = authn.ReadTokenFile(o.TokenAuthFile); err != nil {
			return nil, err
		}
	}
	factory := informer.NewFactory(informer.FactoryOptions{Logger: s.log})
	sas := client.ServiceAccounts(s.loopback)
	saInformer := informer.For(factory, sas)
	lookup := func(ctx context.Context, namespace, name string) (string, bool, error) {
		if sa, ok := saInformer.Store().GetByName(namespace, name); ok {
			return sa.GetMetadata().GetUid(), true, nil
		}
		sa, err := sas.Get(ctx, namespace, name)
		if apierrors.IsNotFound(err) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		return sa.GetMetadata().GetUid(), true, nil
	}
	// Pod-bound tokens: the pod is read from an informer (a live read
	// when it does not have it: a pod just made, or one gone, which
	// revokes the token for good); secret-bound ones, rare, by a live read.
	pods := client.Pods(s.loopback)
	podInformer := informer.For(factory, pods)
	secrets := client.Secrets(s.loopback)
	boundObjects := func(ctx context.Context, kind, namespace, name string) (string, time.Time, bool, error) {
		var meta *metav1.ObjectMeta
		var err error
		switch kind {
		case "Pod":
			pod, ok := podInformer.Store().GetByName(namespace, name)
			if !ok {
				pod, err = pods.Get(ctx, namespace, name)
			}
			meta = pod.GetMetadata()
		case "Secret":
			var sec *corev1.Secret
			sec, err = secrets.Get(ctx, namespace, name)
			meta = sec.GetMetadata()
		default:
			return "", time.Time{}, false, fmt.Errorf("tokens are not bound to %ss", kind)
		}
		if apierrors.IsNotFound(err) {
			return "", time.Time{}, false, nil
		}
		if err != nil {
			return "", time.Time{}, false, err
		}
		var deletion time.Time
		if ts := meta.GetDeletionTimestamp(); ts != nil {
			deletion = ts.AsTime()
		}
		return meta.GetUid(), deletion, true, nil
	}
	// Bootstrap tokens, presented by machines while they join, by a live
	// read of their Secret: a handful of requests per join.
	bootstrapTokens := func(ctx context.Context, namespace, name string) (*corev1.Secret, bool, error) {
		sec, err := secrets.Get(ctx, namespace, name)
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return sec, err == nil, err
	}
	s.bootstrapTokens = bootstrapTokens // control-plane joins too (members.go)
	s.postStart = append(s.postStart, postStartHook{name: "authn-serviceaccounts", run: func(ctx context.Context) error {
		factory.Start(ctx)
		if !factory.WaitForSync(ctx) {
			return fmt.Errorf("the ServiceAccount informer did not sync: %w", ctx.Err())
		}
		return nil
	}})
	return authn.New(authn.Config{
		ClientCAs:         m.ClientCAs,
		Logger:            s.log,
		Registerer:        s.cfg.Registry,
		Tokens:            tokens,
		ServiceAccountKey: &m.ServiceAccountKey.PublicKey,
		Issuer:            o.ServiceAccountIssuer,
		ServiceAccounts:   lookup,
		Audiences:         o.APIAudiences,
		BoundObjects:      boundObjects,
		BootstrapTokens:   bootstrapTokens,
		Anonymous:         o.AnonymousAuth,
		Now:               s.now,
	}), nil
}
