package authz

import (
	"fmt"
	"strings"

	"skiff.dev/internal/apierrors"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/server"
)

// Escalation prevention, as Kubernetes' RBAC does it: being allowed to
// write Roles and bindings must not mean being allowed everything. A user
// may create or update
//   - a Role (ClusterRole) only with rules it already holds in that
//     namespace (cluster-wide), unless it may "escalate" roles
//     (clusterroles); a ClusterRole's aggregationRule, which pulls in other
//     roles' rules, always needs "escalate";
//   - a RoleBinding (ClusterRoleBinding) only to a role whose rules it
//     already holds in that namespace (cluster-wide), unless it may "bind"
//     that role (a rule with verb bind on roles or clusterroles, optionally
//     restricted by resourceNames).
//
// The check runs after a mode allowed the write, with RBAC on; members of
// system:masters never reach it (they hold everything).
func (a *Authorizer) checkEscalation(ri *server.RequestInfo) error {
	if a.rbac == nil || ri.APIGroup != rbacGroup || ri.Subresource != "" || (ri.Verb != "create" && ri.Verb != "update") {
		return nil
	}
	p := a.rbac.policy()
	g := p.grants(ri.User.Name, ri.User.Groups)
	may := func(verb, resource, namespace, name string) bool {
		q := request{resource: true, verb: verb, group: rbacGroup, res: resource, name: name, namespace: namespace, clusterOnly: namespace == ""}
		return g.allows(&q)
	}
	held := func(namespace string) []*rule {
		if namespace == "" {
			return g.cluster
		}
		return append(append([]*rule(nil), g.cluster...), g.namespace[namespace]...)
	}
	switch obj := ri.Object.(type) {
	case *rbacv1.Role:
		ns, name := obj.GetMetadata().GetNamespace(), obj.GetMetadata().GetName()
		if ns == "" {
			ns = ri.Namespace
		}
		if may("escalate", "roles", ns, name) {
			return nil
		}
		return notHeld(ri, held(ns), obj.GetRules(), "in namespace "+ns)
	case *rbacv1.ClusterRole:
		name := obj.GetMetadata().GetName()
		if may("escalate", "clusterroles", "", name) {
			return nil
		}
		if obj.GetAggregationRule() != nil {
			return escalationError(ri, "an aggregationRule gathers other ClusterRoles' rules: it needs the escalate verb on clusterroles")
		}
		return notHeld(ri, held(""), obj.GetRules(), "cluster-wide")
	case *rbacv1.RoleBinding:
		ns := obj.GetMetadata().GetNamespace()
		if ns == "" {
			ns = ri.Namespace
		}
		return a.checkBind(ri, p, may, held(ns), ns, obj.GetRoleRef())
	case *rbacv1.ClusterRoleBinding:
		return a.checkBind(ri, p, may, held(""), "", obj.GetRoleRef())
	}
	return nil
}

func (a *Authorizer) checkBind(ri *server.RequestInfo, p *policy, may func(verb, resource, namespace, name string) bool, have []*rule, ns string, ref *rbacv1.RoleRef) error {
	resource := "clusterroles"
	if ref.GetKind() == "Role" {
		resource = "roles"
	}
	// bind on a ClusterRole is granted cluster-wide or, for a RoleBinding,
	// in its namespace; bind on a Role in the Role's (the binding's) namespace.
	if may("bind", resource, ns, ref.GetName()) {
		return nil
	}
	var rules []*rule
	var ok bool
	if ref.GetKind() == "Role" {
		rules, ok = p.roles[roleKey{ns, ref.GetName()}]
	} else {
		rules, ok = p.clusterRoles[ref.GetName()]
	}
	if !ok {
		return escalationError(ri, fmt.Sprintf("%s %q does not exist (yet): binding it needs the bind verb on %s", ref.GetKind(), ref.GetName(), resource))
	}
	scope := "cluster-wide"
	if ns != "" {
		scope = "in namespace " + ns
	}
	scope = fmt.Sprintf("%s (the rules of %s %q)", scope, ref.GetKind(), ref.GetName())
	prs := make([]*rbacv1.PolicyRule, 0, len(rules))
	for _, r := range rules {
		prs = append(prs, r.src)
	}
	return notHeld(ri, have, prs, scope)
}

// notHeld refuses the write when some rule grants what have does not.
func notHeld(ri *server.RequestInfo, have []*rule, rules []*rbacv1.PolicyRule, scope string) error {
	var missing []string
	for _, pr := range rules {
		if !covers(have, pr) {
			missing = append(missing, ruleString(pr))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return escalationError(ri, fmt.Sprintf("it would grant permissions the user does not hold %s: %s", scope, strings.Join(missing, "; ")))
}

func ruleString(pr *rbacv1.PolicyRule) string {
	if len(pr.GetNonResourceUrls()) > 0 {
		return fmt.Sprintf("{verbs %v, nonResourceURLs %v}", pr.GetVerbs(), pr.GetNonResourceUrls())
	}
	s := fmt.Sprintf("{verbs %v, apiGroups %q, resources %v", pr.GetVerbs(), pr.GetApiGroups(), pr.GetResources())
	if len(pr.GetResourceNames()) > 0 {
		s += fmt.Sprintf(", resourceNames %v", pr.GetResourceNames())
	}
	return s + "}"
}

func escalationError(ri *server.RequestInfo, why string) error {
	resource := ri.Resource + "." + rbacGroup
	return apierrors.NewForbidden(resource, ri.Name, fmt.Sprintf("%s %q is forbidden: User %q cannot %s it: %s", resource, ri.Name, ri.User.String(), ri.Verb, why))
}
