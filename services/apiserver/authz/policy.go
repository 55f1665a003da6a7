package authz

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"skiff.dev/internal/labels"
	rbacv1 "skiff.dev/proto/rbac/v1"
)

// policy is the RBAC objects at one moment, indexed for decisions: the
// compiled rules of every role (ClusterRoles with their aggregated rules),
// and the bindings by subject, so that finding a user's rules is a map
// lookup per name and group. A policy never changes; a change of any RBAC
// object makes a new one (rbac.go), which drops the per-user cache with
// it.
type policy struct {
	gen          uint64
	clusterRoles map[string][]*rule
	roles        map[roleKey][]*rule
	bySubject    map[subject][]binding
	users        userCache
}

type roleKey struct{ namespace, name string }

// subject is a binding's User or Group; a ServiceAccount subject is the
// user system:serviceaccount:<namespace>:<name>.
type subject struct {
	group bool
	name  string
}

// binding is one grant to a subject: a role, in a namespace (RoleBinding)
// or everywhere (ClusterRoleBinding, namespace "").
type binding struct {
	namespace   string
	clusterRole bool
	role        string
}

// RBAC's API group, the apiGroup of roleRefs and User/Group subjects.
const rbacGroup = "rbac.authorization.k8s.io"

// newPolicy indexes the RBAC objects. It is pure.
func newPolicy(roles []*rbacv1.Role, clusterRoles []*rbacv1.ClusterRole, rbs []*rbacv1.RoleBinding, crbs []*rbacv1.ClusterRoleBinding) *policy {
	p := &policy{
		clusterRoles: aggregate(clusterRoles),
		roles:        make(map[roleKey][]*rule, len(roles)),
		bySubject:    map[subject][]binding{},
	}
	for _, r := range roles {
		m := r.GetMetadata()
		p.roles[roleKey{m.GetNamespace(), m.GetName()}] = compileRules(r.GetRules())
	}
	for _, b := range rbs {
		p.bind(b.GetSubjects(), binding{namespace: b.GetMetadata().GetNamespace(), clusterRole: b.GetRoleRef().GetKind() == "ClusterRole", role: b.GetRoleRef().GetName()})
	}
	for _, b := range crbs {
		if b.GetRoleRef().GetKind() != "ClusterRole" {
			continue // refused by validation
		}
		p.bind(b.GetSubjects(), binding{clusterRole: true, role: b.GetRoleRef().GetName()})
	}
	return p
}

func (p *policy) bind(subjects []*rbacv1.Subject, b binding) {
	for _, s := range subjects {
		var k subject
		switch s.GetKind() {
		case "User":
			k = subject{name: s.GetName()}
		case "Group":
			k = subject{group: true, name: s.GetName()}
		case "ServiceAccount":
			k = subject{name: serviceAccountUser(s.GetNamespace(), s.GetName())}
		default:
			continue
		}
		p.bySubject[k] = append(p.bySubject[k], b)
	}
}

func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

func compileRules(prs []*rbacv1.PolicyRule) []*rule {
	out := make([]*rule, len(prs))
	for i, pr := range prs {
		out[i] = compileRule(pr)
	}
	return out
}

// aggregate compiles every ClusterRole's rules; a ClusterRole with an
// aggregationRule also gets the rules of every ClusterRole its selectors
// match, transitively (admin aggregates edit, which aggregates view), as
// Kubernetes' aggregation controller would write them. Its own rules are
// kept too.
func aggregate(crs []*rbacv1.ClusterRole) map[string][]*rule {
	own := make(map[string][]*rule, len(crs))
	for _, cr := range crs {
		own[cr.GetMetadata().GetName()] = compileRules(cr.GetRules())
	}
	type aggregator struct {
		name      string
		selectors []labels.Selector
	}
	var aggs []aggregator
	for _, cr := range crs {
		ar := cr.GetAggregationRule()
		if ar == nil {
			continue
		}
		a := aggregator{name: cr.GetMetadata().GetName()}
		for _, ls := range ar.GetClusterRoleSelectors() {
			if sel, err := labels.FromProto(ls); err == nil && !sel.Empty() {
				a.selectors = append(a.selectors, sel)
			}
		}
		aggs = append(aggs, a)
	}
	if len(aggs) == 0 {
		return own
	}
	// The roles each aggregator selects.
	selects := map[string][]string{}
	for _, a := range aggs {
		for _, cr := range crs {
			name := cr.GetMetadata().GetName()
			if name == a.name {
				continue
			}
			for _, sel := range a.selectors {
				if sel.Matches(cr.GetMetadata().GetLabels()) {
					selects[a.name] = append(selects[a.name], name)
					break
				}
			}
		}
	}
	out := make(map[string][]*rule, len(own))
	var collect func(name string, seen map[string]bool, into []*rule) []*rule
	collect = func(name string, seen map[string]bool, into []*rule) []*rule {
		if seen[name] {
			return into // a cycle, or a role reached twice
		}
		seen[name] = true
		into = append(into, own[name]...)
		for _, sub := range selects[name] {
			into = collect(sub, seen, into)
		}
		return into
	}
	for name, rules := range own {
		if _, ok := selects[name]; !ok {
			out[name] = rules
			continue
		}
		out[name] = collect(name, map[string]bool{}, nil)
	}
	return out
}

// grants is the rules one user holds: cluster-wide (ClusterRoleBindings)
// and per namespace (RoleBindings).
type grants struct {
	name      string
	groups    []string
	cluster   []*rule
	namespace map[string][]*rule
}

// grantsFor gathers the rules bound to a user by name or group.
func (p *policy) grantsFor(name string, groups []string) *grants {
	g := &grants{name: name, groups: groups}
	seen := map[binding]bool{}
	add := func(k subject) {
		for _, b := range p.bySubject[k] {
			if seen[b] {
				continue
			}
			seen[b] = true
			var rules []*rule
			if b.clusterRole {
				rules = p.clusterRoles[b.role]
			} else {
				rules = p.roles[roleKey{b.namespace, b.role}]
			}
			if len(rules) == 0 {
				continue
			}
			if b.namespace == "" {
				g.cluster = append(g.cluster, rules...)
				continue
			}
			if g.namespace == nil {
				g.namespace = map[string][]*rule{}
			}
			g.namespace[b.namespace] = append(g.namespace[b.namespace], rules...)
		}
	}
	add(subject{name: name})
	for _, grp := range groups {
		add(subject{group: true, name: grp})
	}
	return g
}

// allows says whether the user's rules grant q.
func (g *grants) allows(q *request) bool {
	for _, r := range g.cluster {
		if r.allows(q) {
			return true
		}
	}
	if q.clusterOnly {
		return false
	}
	for _, r := range g.namespace[q.namespace] {
		if r.allows(q) {
			return true
		}
	}
	return false
}

// userCache keeps each user's grants for the policy's lifetime. A lookup
// is a hash of the user and a read of an immutable map, without a lock;
// new users go to a small map under a mutex, merged into a new immutable
// map once it holds a quarter as many (so copies cost O(1) per user,
// amortized). Past maxCachedUsers, users are resolved on every request.
type userCache struct {
	read  atomic.Pointer[map[uint64]*grants]
	mu    sync.Mutex
	dirty map[uint64]*grants
	n     int // users in read and dirty
}

const maxCachedUsers = 4096

func (c *userCache) get(h uint64) *grants {
	if m := c.read.Load(); m != nil {
		if g, ok := (*m)[h]; ok {
			return g
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dirty[h]
}

// put adds g unless the cache is full or h is taken (a collision: the
// first user keeps the slot).
func (c *userCache) put(h uint64, g *grants) {
	c.mu.Lock()
	defer c.mu.Unlock()
	read := c.read.Load()
	if c.n >= maxCachedUsers || c.dirty[h] != nil || (read != nil && (*read)[h] != nil) {
		return
	}
	if c.dirty == nil {
		c.dirty = map[uint64]*grants{}
	}
	c.dirty[h] = g
	c.n++
	if read != nil && len(c.dirty) < len(*read)/4 {
		return
	}
	next := make(map[uint64]*grants, c.n)
	if read != nil {
		maps.Copy(next, *read)
	}
	maps.Copy(next, c.dirty)
	c.read.Store(&next)
	c.dirty = nil
}

func (p *policy) grants(name string, groups []string) *grants {
	h := hashUser(name, groups)
	if g := p.users.get(h); g != nil && g.name == name && slices.Equal(g.groups, groups) {
		return g
	}
	g := p.grantsFor(name, slices.Clone(groups))
	p.users.put(h, g)
	return g
}

// hashUser is FNV-1a over the name and groups, NUL-separated.
func hashUser(name string, groups []string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	mix := func(s string) {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= prime
		}
		h *= prime // the separator
	}
	mix(name)
	for _, g := range groups {
		mix(g)
	}
	return h
}
