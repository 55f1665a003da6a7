package authz

import (
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

// Rules implements server.RulesLister (a SelfSubjectRulesReview, kubectl
// auth can-i --list): the rules RBAC binds to u in namespace, cluster-wide
// ones first. Members of system:masters hold everything. The list is
// incomplete when a mode other than RBAC could allow more: AlwaysAllow
// allows all, and the node authorizer decides node agents' requests by
// what is bound to them, which is no rule.
func (a *Authorizer) Rules(u *user.Info, namespace string) ([]server.Rule, bool) {
	if u.InGroup(user.Masters) {
		return []server.Rule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}, {Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}, false
	}
	incomplete := false
	for _, m := range a.modes {
		switch m.name {
		case ModeAlwaysAllow:
			return []server.Rule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}, {Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}, false
		case ModeNode:
			incomplete = incomplete || u.NodeName() != ""
		}
	}
	if a.rbac == nil || !a.ready.Load() {
		return nil, true
	}
	g := a.rbac.policy().grants(u.Name, u.Groups)
	var out []server.Rule
	for _, rs := range [][]*rule{g.cluster, g.namespace[namespace]} {
		for _, r := range rs {
			pr := r.src
			out = append(out, server.Rule{Verbs: pr.GetVerbs(), APIGroups: pr.GetApiGroups(), Resources: pr.GetResources(),
				ResourceNames: pr.GetResourceNames(), NonResourceURLs: pr.GetNonResourceUrls()})
		}
	}
	return out, incomplete
}
