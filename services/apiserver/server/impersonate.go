package server

import (
	"context"
	"net/url"
	"slices"
	"strings"

	"google.golang.org/grpc/metadata"

	"skiff.dev/internal/apierrors"
	"skiff.dev/services/apiserver/user"
)

// Impersonation, as Kubernetes' (kubectl --as, --as-group, --as-uid): the
// request's metadata (an HTTP request's Impersonate-* headers, or a gRPC
// call's metadata of the same names) asks to act as another user. Each
// part is authorized for the authenticated user as verb impersonate, then
// the request runs as the impersonated user.
const (
	ImpersonateUserHeader  = "impersonate-user"
	ImpersonateGroupHeader = "impersonate-group"
	ImpersonateUIDHeader   = "impersonate-uid"
	// ImpersonateExtraHeaderPrefix + a key (percent-encoded, as Kubernetes').
	ImpersonateExtraHeaderPrefix = "impersonate-extra-"
)

// impersonation is what a request's metadata asks to act as.
type impersonation struct {
	name, uid string
	groups    []string
	extra     map[string][]string
	asked     bool // any header at all
}

func impersonationOf(ctx context.Context) impersonation {
	var im impersonation
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return im
	}
	for k, vs := range md {
		switch {
		case k == ImpersonateUserHeader:
			im.name, im.asked = vs[0], true
		case k == ImpersonateGroupHeader:
			im.groups, im.asked = vs, true
		case k == ImpersonateUIDHeader:
			im.uid, im.asked = vs[0], true
		case strings.HasPrefix(k, ImpersonateExtraHeaderPrefix):
			key := strings.TrimPrefix(k, ImpersonateExtraHeaderPrefix)
			if u, err := url.PathUnescape(key); err == nil {
				key = u
			}
			if im.extra == nil {
				im.extra = map[string][]string{}
			}
			im.extra[strings.ToLower(key)] = vs
			im.asked = true
		}
	}
	return im
}

// impersonate replaces ri.User by the user the request's metadata asks to
// act as, once the authenticated user is allowed to impersonate each part
// of it (Kubernetes' WithImpersonation): users (or serviceaccounts, in
// their namespace) and groups in the core group, uids and
// userextras/<key> in authentication.k8s.io. ri.Impersonator keeps the
// authenticated user.
func (c *Chain) impersonate(ctx context.Context, ri *RequestInfo) error {
	im := impersonationOf(ctx)
	if !im.asked {
		return nil
	}
	if im.name == "" {
		return apierrors.NewBadRequest("requested impersonation of groups, a uid or extras without impersonating a user")
	}
	as := &user.Info{Name: im.name, UID: im.uid, Extra: im.extra, Authenticator: "impersonation"}
	check := []RequestInfo{{APIGroup: "", Resource: "users", Name: im.name}}
	if sa, ok := strings.CutPrefix(im.name, user.ServiceAccountsUser); ok {
		ns, name, _ := strings.Cut(sa, ":")
		check[0] = RequestInfo{APIGroup: "", Resource: "serviceaccounts", Namespaced: true, Namespace: ns, Name: name}
		if len(im.groups) == 0 {
			as.Groups = []string{user.ServiceAccountsAll, user.ServiceAccountsNS + ns}
		}
	}
	for _, g := range im.groups {
		check = append(check, RequestInfo{APIGroup: "", Resource: "groups", Name: g})
	}
	if im.uid != "" {
		check = append(check, RequestInfo{APIGroup: "authentication.k8s.io", Resource: "uids", Name: im.uid})
	}
	for k, vs := range im.extra {
		for _, v := range vs {
			check = append(check, RequestInfo{APIGroup: "authentication.k8s.io", Resource: "userextras", Subresource: k, Name: v})
		}
	}
	if c.Authorizer != nil {
		for i := range check {
			q := &check[i]
			q.ID, q.Path, q.Verb, q.User, q.Start = ri.ID, ri.Path, "impersonate", ri.User, ri.Start
			if err := c.Authorizer.Authorize(user.With(ctx, ri.User), q); err != nil {
				return err
			}
		}
	}
	as.Groups = append(as.Groups, im.groups...)
	if im.name != user.Anonymous && !slices.Contains(as.Groups, user.AllAuthenticated) {
		as.Groups = append(as.Groups, user.AllAuthenticated)
	}
	ri.Impersonator, ri.User = ri.User, as
	return nil
}
