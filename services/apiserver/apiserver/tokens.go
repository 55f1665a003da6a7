package apiserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/kinds"
	"skiff.dev/internal/validation"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/apiserver/authn"
	"skiff.dev/services/apiserver/user"
)

// ServiceAccounts.CreateToken (the serviceaccounts/token subresource,
// Kubernetes' TokenRequest): a bound token of the ServiceAccount
// metadata names, for spec.audiences (default: the apiserver's), for
// spec.expirationSeconds (default 3600, at least 600, at most
// --service-account-max-token-expiration when set), bound to the Pod or
// Secret spec.boundObjectRef names (the token stops authenticating once
// that object is gone). A node (system:node:<name>) only gets tokens
// bound to a pod on its node that runs as this ServiceAccount, as
// Kubernetes' NodeRestriction allows.

// DefaultTokenExpirationSeconds is a TokenRequest's default lifetime.
const DefaultTokenExpirationSeconds = 3600

// CreateToken implements corev1.ServiceAccountsServer.
func (sa *serviceAccountsServer) CreateToken(ctx context.Context, req *corev1.TokenRequest) (*corev1.TokenRequest, error) {
	return sa.tokens.create(ctx, req)
}

// tokenIssuer signs the tokens of CreateToken with the apiserver's key.
type tokenIssuer struct {
	s *Server
}

// newTokenIssuer is CreateToken's issuer (the registries it reads are
// looked up on use: the ServiceAccounts are installed before the Pods).
func (s *Server) newTokenIssuer() *tokenIssuer { return &tokenIssuer{s: s} }

func (t *tokenIssuer) create(ctx context.Context, req *corev1.TokenRequest) (*corev1.TokenRequest, error) {
	s := t.s
	if s.tls == nil || s.tls.ServiceAccountKey == nil {
		return nil, apierrors.NewMethodNotAllowed("serviceaccounts/token", "create: the apiserver issues no tokens without authentication (--insecure)")
	}
	out := proto.Clone(req).(*corev1.TokenRequest)
	out.ApiVersion, out.Kind = "authentication.k8s.io/v1", "TokenRequest"
	ns, name := out.GetMetadata().GetNamespace(), out.GetMetadata().GetName()
	if ns == "" {
		ns = "default"
	}
	if name == "" {
		return nil, apierrors.NewBadRequest("the service account's name (metadata.name) is required")
	}
	if out.Spec == nil {
		out.Spec = &corev1.TokenRequestSpec{}
	}
	if out.Spec.ExpirationSeconds == nil {
		out.Spec.ExpirationSeconds = proto.Int64(DefaultTokenExpirationSeconds)
	}
	if errs := validation.TokenRequest(out); len(errs) > 0 {
		return nil, apierrors.NewInvalid("TokenRequest", name, errs)
	}
	sa, err := registryOf[*corev1.ServiceAccount](s, kinds.MustGet("", "v1", "ServiceAccount")).Get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	node := user.From(ctx).NodeName()
	forbidden := func(why string) error {
		return apierrors.NewForbidden("serviceaccounts", name, fmt.Sprintf("serviceaccounts %q is forbidden: %s", name, why))
	}
	bt := authn.BoundToken{Issuer: s.cfg.Authn.ServiceAccountIssuer, Namespace: ns, Name: name, UID: sa.GetMetadata().GetUid()}
	ref := out.Spec.GetBoundObjectRef()
	if node != "" {
		switch {
		case ref == nil:
			return nil, forbidden("node requested token not bound to a pod")
		case ref.GetUid() == "":
			return nil, forbidden("node requested token with a pod binding without a uid")
		case ref.GetKind() != "Pod":
			return nil, forbidden(fmt.Sprintf("node requested token bound to a %s", ref.GetKind()))
		}
	}
	if ref != nil {
		var uid string
		switch {
		case ref.GetKind() == "Pod" && (ref.GetApiVersion() == "v1" || ref.GetApiVersion() == ""):
			pod, err := registryOf[*corev1.Pod](s, kinds.MustGet("", "v1", "Pod")).Get(ctx, ns, ref.GetName())
			if err != nil {
				if node != "" && apierrors.IsNotFound(err) {
					return nil, forbidden(err.Error())
				}
				return nil, err
			}
			if node != "" && pod.GetSpec().GetNodeName() != node {
				return nil, forbidden("node requested token bound to a pod scheduled on a different node")
			}
			if pod.GetSpec().GetServiceAccountName() != name {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", name))
			}
			uid = pod.GetMetadata().GetUid()
			bt.Pod = &authn.BoundObject{Name: ref.GetName(), UID: uid}
		case ref.GetKind() == "Secret" && (ref.GetApiVersion() == "v1" || ref.GetApiVersion() == ""):
			sec, err := registryOf[*corev1.Secret](s, kinds.MustGet("", "v1", "Secret")).Get(ctx, ns, ref.GetName())
			if err != nil {
				return nil, err
			}
			uid = sec.GetMetadata().GetUid()
			bt.Secret = &authn.BoundObject{Name: ref.GetName(), UID: uid}
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvkString(ref.GetApiVersion(), ref.GetKind())))
		}
		if ref.GetUid() != "" && ref.GetUid() != uid {
			return nil, apierrors.NewConflict(ref.GetKind(), ref.GetName(), fmt.Sprintf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.GetUid()))
		}
		out.Spec.BoundObjectRef.Uid = uid
	}
	if len(out.Spec.Audiences) == 0 {
		out.Spec.Audiences = s.apiAudiences()
	}
	if max := s.cfg.Authn.ServiceAccountMaxTokenExpiration; max > 0 && time.Duration(*out.Spec.ExpirationSeconds)*time.Second > max {
		out.Spec.ExpirationSeconds = proto.Int64(int64(max / time.Second))
	}
	bt.Audiences = out.Spec.Audiences
	bt.IssuedAt = s.now()
	bt.TTL = time.Duration(*out.Spec.ExpirationSeconds) * time.Second
	tok, err := authn.SignToken(s.tls.ServiceAccountKey, bt)
	if err != nil {
		return nil, apierrors.NewInternal(err)
	}
	if out.Metadata != nil {
		out.Metadata.Namespace = ns
	}
	out.Status = &corev1.TokenRequestStatus{Token: tok, ExpirationTimestamp: timestamppb.New(bt.IssuedAt.Add(bt.TTL).Truncate(time.Second))}
	return out, nil
}

// apiAudiences are the apiserver's audiences: --api-audiences, else the
// issuer (as Kubernetes defaults them).
func (s *Server) apiAudiences() []string {
	if a := s.cfg.Authn.APIAudiences; len(a) > 0 {
		return append([]string(nil), a...)
	}
	if iss := s.cfg.Authn.ServiceAccountIssuer; iss != "" {
		return []string{iss}
	}
	return []string{authn.DefaultIssuer}
}

// gvkString is a group/version, Kind as Kubernetes prints a GVK.
func gvkString(apiVersion, kind string) string {
	if apiVersion == "" {
		apiVersion = "/"
	} else if !strings.Contains(apiVersion, "/") {
		apiVersion = "/" + apiVersion
	}
	return apiVersion + ", Kind=" + kind
}
