package server

import (
	"context"
	"errors"

	"skiff.dev/services/apiserver/user"
)

// Review methods: the HTTP API's access and identity reviews
// (authorization.k8s.io and authentication.k8s.io) are no gRPC service;
// the handler runs each through the chain (Methods.Admit) under one of
// these names, so it is authenticated, metered, audited and authorized as
// Kubernetes authorizes it: create of the review resource.
const (
	SelfSubjectAccessReviewMethod = "/skiff.authorization.v1.SelfSubjectAccessReviews/Create"
	SelfSubjectRulesReviewMethod  = "/skiff.authorization.v1.SelfSubjectRulesReviews/Create"
	SubjectAccessReviewMethod     = "/skiff.authorization.v1.SubjectAccessReviews/Create"
	// LocalSubjectAccessReviewMethod is namespaced: its request is a
	// GetRequest naming the namespace of the URL.
	LocalSubjectAccessReviewMethod = "/skiff.authorization.v1.LocalSubjectAccessReviews/Create"
	SelfSubjectReviewMethod        = "/skiff.authentication.v1.SelfSubjectReviews/Create"
)

var reviewRoutes = map[string]route{
	SelfSubjectAccessReviewMethod:  {group: "authorization.k8s.io", version: "v1", resource: "selfsubjectaccessreviews", verb: "create", metricVerb: "POST"},
	SelfSubjectRulesReviewMethod:   {group: "authorization.k8s.io", version: "v1", resource: "selfsubjectrulesreviews", verb: "create", metricVerb: "POST"},
	SubjectAccessReviewMethod:      {group: "authorization.k8s.io", version: "v1", resource: "subjectaccessreviews", verb: "create", metricVerb: "POST"},
	SelfSubjectReviewMethod:        {group: "authentication.k8s.io", version: "v1", resource: "selfsubjectreviews", verb: "create", metricVerb: "POST"},
	LocalSubjectAccessReviewMethod: {group: "authorization.k8s.io", version: "v1", resource: "localsubjectaccessreviews", verb: "create", metricVerb: "POST", namespaced: true},
}

// Authorize asks the chain's Authorizer about ri exactly as it decides a
// request (an access review's question); without an Authorizer every
// request is allowed. ri.User must be set.
func (m *Methods) Authorize(ctx context.Context, ri *RequestInfo) error {
	if m.chain.Authorizer == nil {
		return nil
	}
	return m.chain.Authorizer.Authorize(user.With(ctx, ri.User), ri)
}

// RulesLister is an Authorizer that can say which rules a user holds in a
// namespace (a rules review); Authorizers that cannot are not asked.
type RulesLister interface {
	// Rules returns the user's resource and non-resource rules in namespace
	// (cluster-wide ones included); incomplete when some mode's grants
	// cannot be listed.
	Rules(u *user.Info, namespace string) (rules []Rule, incomplete bool)
}

// Rule is one granted rule, in Kubernetes' PolicyRule terms.
type Rule struct {
	Verbs, APIGroups, Resources, ResourceNames, NonResourceURLs []string
}

// allRules are every resource and every path, with every verb.
var allRules = []Rule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// Rules lists what the chain's Authorizer grants u in namespace
// (everything when authorization is off); ok is false when the
// Authorizer does not list rules.
func (m *Methods) Rules(u *user.Info, namespace string) (rules []Rule, incomplete, ok bool) {
	if m.chain.Authorizer == nil {
		return allRules, false, true
	}
	rl, ok := m.chain.Authorizer.(RulesLister)
	if !ok {
		return nil, true, false
	}
	rules, incomplete = rl.Rules(u, namespace)
	return rules, incomplete, true
}

// DenialReason is the reason an Authorizer's refusal gives beyond "is
// forbidden" (a mode's explanation; "" when none, as RBAC gives none),
// and whether err is such a refusal.
func DenialReason(err error) (string, bool) {
	var d interface{ DenialReason() string }
	if errors.As(err, &d) {
		return d.DenialReason(), true
	}
	return "", false
}
