package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"google.golang.org/protobuf/proto"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/field"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

// The access and identity reviews, as kube-apiserver answers them: kubectl
// auth can-i (SelfSubjectAccessReview; --list: SelfSubjectRulesReview),
// auth whoami (SelfSubjectReview), and a SubjectAccessReview about another
// user (for those allowed to create one). They are no Skiff kind: create
// only, never stored, answered 201 with the object, its spec echoed and
// its status filled, in Kubernetes' JSON (k8s.io/api's types). Each passes
// the chain as create of its resource (server.SelfSubjectAccessReviewMethod
// and the others); the question itself goes to the server's Authorizer as
// a request of those attributes would (server.Methods.Authorize).

// review is one review resource: the chain's method it passes as, and its
// answer to the body, for the authenticated (or impersonated) user u;
// namespace is the URL's, of a namespaced review.
type review struct {
	method     string
	answer     func(h *Handler, ctx context.Context, u *user.Info, body []byte) (any, error)
	namespaced bool
	namespace  string
}

var reviews = map[gvr]review{
	{"authorization.k8s.io", "v1", "selfsubjectaccessreviews"}:  {method: server.SelfSubjectAccessReviewMethod, answer: (*Handler).selfSubjectAccessReview},
	{"authorization.k8s.io", "v1", "subjectaccessreviews"}:      {method: server.SubjectAccessReviewMethod, answer: (*Handler).subjectAccessReview},
	{"authorization.k8s.io", "v1", "selfsubjectrulesreviews"}:   {method: server.SelfSubjectRulesReviewMethod, answer: (*Handler).selfSubjectRulesReview},
	{"authentication.k8s.io", "v1", "selfsubjectreviews"}:       {method: server.SelfSubjectReviewMethod, answer: (*Handler).selfSubjectReview},
	{"authorization.k8s.io", "v1", "localsubjectaccessreviews"}: {method: server.LocalSubjectAccessReviewMethod, answer: (*Handler).localSubjectAccessReview, namespaced: true},
}

// reviewOf says whether path is a review's, /apis/<group>/<version>/<resource>,
// or /apis/<group>/<version>/namespaces/<namespace>/<resource> for a
// namespaced one.
func reviewOf(path string) (review, bool) {
	rest, ok := strings.CutPrefix(path, "/apis/")
	if !ok {
		return review{}, false
	}
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	switch {
	case len(parts) == 3:
		rv, ok := reviews[gvr{parts[0], parts[1], parts[2]}]
		return rv, ok && !rv.namespaced
	case len(parts) == 5 && parts[2] == "namespaces" && parts[3] != "":
		rv, ok := reviews[gvr{parts[0], parts[1], parts[4]}]
		rv.namespace = parts[3]
		return rv, ok && rv.namespaced
	}
	return review{}, false
}

// serveReview answers a POST of a review through the chain.
func (h *Handler) serveReview(w http.ResponseWriter, r *http.Request, rv review) {
	if r.Method != http.MethodPost {
		writeError(w, apierrors.NewMethodNotAllowed(r.URL.Path, r.Method))
		return
	}
	body, err := reviewBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var out []byte
	var req any // the namespace the chain authorizes a namespaced review in
	if rv.namespaced {
		req = &metav1.GetRequest{Namespace: rv.namespace}
	}
	_, err = h.cfg.Methods.Admit(requestContext(r), rv.method, req, func(ctx context.Context) (proto.Message, error) {
		ri, _ := server.RequestInfoFrom(ctx)
		obj, err := rv.answer(h, ctx, ri.User, body)
		if err != nil {
			return nil, err
		}
		out, err = json.Marshal(obj)
		return nil, err
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

// reviewBody is the request's body as JSON (kubectl sends Kubernetes'
// protobuf).
func reviewBody(r *http.Request) ([]byte, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	mt := "application/json"
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, _ = mime.ParseMediaType(ct)
	}
	switch mt {
	case "application/json", "*/*":
		return body, nil
	case kubeProtobuf:
		return kubeProtoToJSON(body)
	default:
		return nil, unsupportedMediaType(mt)
	}
}

func decodeReview(body []byte, into any) error {
	if err := json.Unmarshal(body, into); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded: %v", err))
	}
	return nil
}

func (h *Handler) selfSubjectAccessReview(ctx context.Context, u *user.Info, body []byte) (any, error) {
	var rv authorizationv1.SelfSubjectAccessReview
	if err := decodeReview(body, &rv); err != nil {
		return nil, err
	}
	rv.APIVersion, rv.Kind = "authorization.k8s.io/v1", "SelfSubjectAccessReview"
	st, err := h.access(ctx, u, rv.Spec.ResourceAttributes, rv.Spec.NonResourceAttributes)
	rv.Status = st
	return &rv, err
}

func (h *Handler) subjectAccessReview(ctx context.Context, _ *user.Info, body []byte) (any, error) {
	var rv authorizationv1.SubjectAccessReview
	if err := decodeReview(body, &rv); err != nil {
		return nil, err
	}
	rv.APIVersion, rv.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
	st, err := h.accessOf(ctx, rv.Spec)
	rv.Status = st
	return &rv, err
}

// localSubjectAccessReview is a SubjectAccessReview within the URL's
// namespace, as Kubernetes validates one: metadata.namespace and
// spec.resourceAttributes.namespace that of the URL (empty ones take
// it), no nonResourceAttributes.
func (h *Handler) localSubjectAccessReview(ctx context.Context, _ *user.Info, body []byte) (any, error) {
	var rv authorizationv1.LocalSubjectAccessReview
	if err := decodeReview(body, &rv); err != nil {
		return nil, err
	}
	rv.APIVersion, rv.Kind = "authorization.k8s.io/v1", "LocalSubjectAccessReview"
	ri, _ := server.RequestInfoFrom(ctx)
	ns := ri.Namespace
	if rv.Namespace == "" {
		rv.Namespace = ns
	}
	if rv.Namespace != ns {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("namespace of the request (%s) does not match the namespace of the object (%s)", ns, rv.Namespace))
	}
	var errs field.ErrorList
	if ra := rv.Spec.ResourceAttributes; ra != nil && ra.Namespace != ns {
		errs = append(errs, field.Invalid(field.NewPath("spec", "resourceAttributes", "namespace"), ra.Namespace, "must match metadata.namespace"))
	}
	if rv.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "nonResourceAttributes"), rv.Spec.NonResourceAttributes.Path, "disallowed on this kind of request"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid("LocalSubjectAccessReview", rv.Name, errs)
	}
	st, err := h.accessOf(ctx, rv.Spec)
	rv.Status = st
	return &rv, err
}

// accessOf answers a subject access review's spec: may its user (and
// groups) do what its attributes say.
func (h *Handler) accessOf(ctx context.Context, s authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
	if s.User == "" && len(s.Groups) == 0 {
		return authorizationv1.SubjectAccessReviewStatus{}, apierrors.NewBadRequest("spec.user or spec.groups: at least one is required")
	}
	who := &user.Info{Name: s.User, UID: s.UID, Groups: s.Groups}
	if len(s.Extra) > 0 {
		who.Extra = make(map[string][]string, len(s.Extra))
		for k, v := range s.Extra {
			who.Extra[k] = v
		}
	}
	return h.access(ctx, who, s.ResourceAttributes, s.NonResourceAttributes)
}

// access asks the Authorizer whether u may do what the attributes say,
// as the chain would decide the request: allowed, or not with the
// deciding modes' reasons (an error other than a refusal, such as a
// policy not loaded yet, is the evaluationError).
func (h *Handler) access(ctx context.Context, u *user.Info, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) (authorizationv1.SubjectAccessReviewStatus, error) {
	var st authorizationv1.SubjectAccessReviewStatus
	ri := &server.RequestInfo{User: u}
	switch {
	case ra != nil && nra != nil:
		return st, apierrors.NewBadRequest("spec.resourceAttributes and spec.nonResourceAttributes: only one may be given")
	case ra != nil:
		ri.APIGroup, ri.Resource, ri.Subresource, ri.Verb, ri.Name = ra.Group, ra.Resource, ra.Subresource, ra.Verb, ra.Name
		ri.Namespace = ra.Namespace
		ri.Namespaced = ra.Namespace != ""
		if ri.Resource == "" {
			// The authorizer tells a non-resource request by its empty resource.
			return st, apierrors.NewBadRequest("spec.resourceAttributes.resource: required")
		}
		if fs := ra.FieldSelector; fs != nil {
			ri.FieldSelector = fs.RawSelector
		}
		if ls := ra.LabelSelector; ls != nil {
			ri.LabelSelector = ls.RawSelector
		}
	case nra != nil:
		ri.Path, ri.Verb = nra.Path, nra.Verb
	default:
		return st, apierrors.NewBadRequest("spec.resourceAttributes or spec.nonResourceAttributes: one is required")
	}
	err := h.cfg.Methods.Authorize(ctx, ri)
	switch {
	case err == nil:
		st.Allowed = true
	case apierrors.IsForbidden(err):
		// The modes' reasons, as Kubernetes answers (none from RBAC).
		st.Reason, _ = server.DenialReason(err)
	default:
		st.EvaluationError = err.Error()
	}
	return st, nil
}

func (h *Handler) selfSubjectRulesReview(_ context.Context, u *user.Info, body []byte) (any, error) {
	var rv authorizationv1.SelfSubjectRulesReview
	if err := decodeReview(body, &rv); err != nil {
		return nil, err
	}
	rv.APIVersion, rv.Kind = "authorization.k8s.io/v1", "SelfSubjectRulesReview"
	rules, incomplete, ok := h.cfg.Methods.Rules(u, rv.Spec.Namespace)
	st := authorizationv1.SubjectRulesReviewStatus{Incomplete: incomplete,
		ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}
	if !ok {
		st.EvaluationError = "the server's authorizer does not list rules"
	}
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
			continue
		}
		st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	rv.Status = st
	return &rv, nil
}

func (h *Handler) selfSubjectReview(_ context.Context, u *user.Info, body []byte) (any, error) {
	var rv authenticationv1.SelfSubjectReview
	if err := decodeReview(body, &rv); err != nil {
		return nil, err
	}
	rv.APIVersion, rv.Kind = "authentication.k8s.io/v1", "SelfSubjectReview"
	ui := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		ui.Extra = make(map[string]authenticationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			ui.Extra[k] = v
		}
	}
	rv.Status.UserInfo = ui
	return &rv, nil
}
