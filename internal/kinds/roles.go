package kinds

import (
	"slices"

	"skiff.dev/internal/kinds/decl"
)

// actingSubresources act on the object rather than read it (a command
// in a container, a connection to a pod, a token of an account, an
// eviction): edit grants them, view does not, as in Kubernetes.
var actingSubresources = map[string]bool{"exec": true, "attach": true, "portforward": true, "token": true, "eviction": true}

// ungrantedSubresources are granted by neither view nor edit (nor admin,
// which aggregates edit): adding an ephemeral container to a pod is left to
// roles that say so, as Kubernetes' bootstrap roles leave it.
var ungrantedSubresources = map[string]bool{"ephemeralcontainers": true}

// RoleResources are the resources (with their subresources, "pods/log")
// of each API group a user-facing role grants, for its verbs: view reads
// a resource and its subresources but binding; edit writes a resource and
// its scale; admin reads and writes a resource. Only storage versions
// count (RBAC names resources, not versions). Groups come in declaration
// order, resources too.
func RoleResources(role decl.Roles) (groups []string, byGroup map[string][]string) {
	byGroup = map[string][]string{}
	for _, k := range All() {
		if !k.IsStorageVersion() || k.Roles&role == 0 {
			continue
		}
		if _, ok := byGroup[k.Group]; !ok {
			groups = append(groups, k.Group)
		}
		rs := append(byGroup[k.Group], k.Resource)
		for _, sub := range k.Subresources {
			acts := actingSubresources[sub]
			switch {
			case ungrantedSubresources[sub]:
			case role == decl.View && sub != "binding" && !acts,
				role == decl.Edit && (sub == "scale" || acts):
				rs = append(rs, k.Resource+"/"+sub)
			}
		}
		byGroup[k.Group] = slices.Compact(rs)
	}
	return groups, byGroup
}
