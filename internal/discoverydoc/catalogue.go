package discoverydoc

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"sort"
	"strings"

	"skiff.dev/internal/kinds"
)

// catalogue is what discovery says of the served kinds: the groups in
// Kubernetes' order, each with its versions (the preferred first) and the
// resources of each version (subresources included, by name).
type catalogue struct {
	groups []*group
	byGV   map[string]*groupVersion // "v1", "apps/v1"
}

type group struct {
	name     string // "" for the core group
	versions []*groupVersion
}

type groupVersion struct {
	group, version string
	resources      []resource // sorted by name, as kube-apiserver installs them
}

// String is "apps/v1", or "v1" for the core group.
func (gv *groupVersion) String() string {
	if gv.group == "" {
		return gv.version
	}
	return gv.group + "/" + gv.version
}

// resource is one resource or subresource ("pods/status") of a group
// version, as APIResource has it.
type resource struct {
	name       string
	singular   string // "" for a subresource, as Kubernetes leaves it
	namespaced bool
	// group and version are set when the kind the resource answers with is
	// of another group version (pods/eviction: policy/v1 Eviction).
	group, version string
	kind           string
	verbs          []string
	shortNames     []string
	categories     []string
	// storageVersionHash is set for resources, not subresources.
	storageVersionHash string
}

// subresource is what Kubernetes says of a subresource: the kind it
// answers with (empty: the parent's) and its verbs.
type subresource struct {
	group, version, kind string
	verbs                []string
}

// subresources are Kubernetes' subresources by name; a declared
// subresource must be here. Kinds that depend on the parent are keyed
// "resource/subresource".
var subresources = map[string]subresource{
	"status":                              {verbs: []string{"get", "patch", "update"}},
	"scale":                               {group: "autoscaling", version: "v1", kind: "Scale", verbs: []string{"get", "patch", "update"}},
	"ephemeralcontainers":                 {verbs: []string{"get", "patch", "update"}},
	"certificatesigningrequests/approval": {verbs: []string{"get", "patch", "update"}},
	"pods/binding":                        {kind: "Binding", verbs: []string{"create"}},
	"pods/log":                            {verbs: []string{"get"}},
	"pods/exec":                           {kind: "PodExecOptions", verbs: []string{"create", "get"}},
	"pods/attach":                         {kind: "PodAttachOptions", verbs: []string{"create", "get"}},
	"pods/portforward":                    {kind: "PodPortForwardOptions", verbs: []string{"create", "get"}},
	"pods/eviction":                       {group: "policy", version: "v1", kind: "Eviction", verbs: []string{"create"}},
	"serviceaccounts/token": {group: "authentication.k8s.io", version: "v1", kind: "TokenRequest",
		verbs: []string{"create"}},
}

// resourceVerbs are the verbs of a resource: its storage's create, delete,
// deletecollection, get, list, patch, update and watch, sorted.
var resourceVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// noDeleteCollection are the resources (group/resource) whose Kubernetes
// storage has no DeleteCollection.
var noDeleteCollection = map[string]bool{"/namespaces": true}

// categories are Kubernetes' categories of its resources, by
// group/resource: "all" is what kubectl get all lists.
var categories = map[string][]string{
	"/pods":                                {"all"},
	"/services":                            {"all"},
	"/replicationcontrollers":              {"all"},
	"apps/deployments":                     {"all"},
	"apps/replicasets":                     {"all"},
	"apps/statefulsets":                    {"all"},
	"apps/daemonsets":                      {"all"},
	"batch/jobs":                           {"all"},
	"batch/cronjobs":                       {"all"},
	"autoscaling/horizontalpodautoscalers": {"all"},
	"admissionregistration.k8s.io/mutatingwebhookconfigurations":     {"api-extensions"},
	"admissionregistration.k8s.io/validatingwebhookconfigurations":   {"api-extensions"},
	"admissionregistration.k8s.io/validatingadmissionpolicies":       {"api-extensions"},
	"admissionregistration.k8s.io/validatingadmissionpolicybindings": {"api-extensions"},
	"admissionregistration.k8s.io/mutatingadmissionpolicies":         {"api-extensions"},
	"admissionregistration.k8s.io/mutatingadmissionpolicybindings":   {"api-extensions"},
	"apiextensions.k8s.io/customresourcedefinitions":                 {"api-extensions"},
	"apiregistration.k8s.io/apiservices":                             {"api-extensions"},
}

// groupPriority is kube-aggregator's GroupPriorityMinimum of Kubernetes'
// groups (pkg/controlplane): /apis lists groups by it, highest first, ties
// by name; groups it does not know come after, by name.
var groupPriority = map[string]int{
	"":                             18000,
	"apps":                         17800,
	"events.k8s.io":                17750,
	"authentication.k8s.io":        17700,
	"authorization.k8s.io":         17600,
	"autoscaling":                  17500,
	"batch":                        17400,
	"certificates.k8s.io":          17300,
	"networking.k8s.io":            17200,
	"policy":                       17100,
	"rbac.authorization.k8s.io":    17000,
	"storage.k8s.io":               16800,
	"apiextensions.k8s.io":         16700,
	"admissionregistration.k8s.io": 16700,
	"scheduling.k8s.io":            16600,
	"coordination.k8s.io":          16500,
	"node.k8s.io":                  16300,
	"discovery.k8s.io":             16200,
	"flowcontrol.apiserver.k8s.io": 16100,
	"internal.apiserver.k8s.io":    16000,
	"resource.k8s.io":              15900,
	"storagemigration.k8s.io":      15800,
}

// StorageVersionHash is Kubernetes' hash of the version a resource is
// stored at: base64 of the first 8 bytes of the SHA-256 of
// "<group>/<version>/<kind>" (k8s.io/apiserver's
// discovery.StorageVersionHash). Clients compare it to notice a change of
// storage version.
func StorageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// build is the catalogue of ks, every kind at every served version, in
// declaration order (a group's first version is its preferred).
func build(ks []*kinds.Kind) (*catalogue, error) {
	c := &catalogue{byGV: map[string]*groupVersion{}}
	byName := map[string]*group{}
	add := func(groupName, version string, rs []resource) error {
		g, ok := byName[groupName]
		if !ok {
			g = &group{name: groupName}
			byName[groupName] = g
			c.groups = append(c.groups, g)
		}
		key := version
		if groupName != "" {
			key = groupName + "/" + version
		}
		gv, ok := c.byGV[key]
		if !ok {
			gv = &groupVersion{group: groupName, version: version}
			c.byGV[key] = gv
			g.versions = append(g.versions, gv)
		}
		for _, r := range rs {
			if slices.ContainsFunc(gv.resources, func(o resource) bool { return o.name == r.name }) {
				return fmt.Errorf("discoverydoc: %s: resource %q declared twice", gv, r.name)
			}
		}
		gv.resources = append(gv.resources, rs...)
		return nil
	}
	for _, k := range ks {
		rs, err := resourcesOf(k)
		if err != nil {
			return nil, err
		}
		if err := add(k.Group, k.Version, rs); err != nil {
			return nil, err
		}
	}
	for _, nk := range nonKinds {
		if err := add(nk.group, nk.version, []resource{nk.resource}); err != nil {
			return nil, err
		}
	}
	for _, gv := range c.byGV {
		sort.Slice(gv.resources, func(i, j int) bool { return gv.resources[i].name < gv.resources[j].name })
	}
	sort.SliceStable(c.groups, func(i, j int) bool {
		pi, iKnown := groupPriority[c.groups[i].name]
		pj, jKnown := groupPriority[c.groups[j].name]
		switch {
		case iKnown != jKnown:
			return iKnown
		case pi != pj:
			return pi > pj
		}
		return c.groups[i].name < c.groups[j].name
	})
	return c, nil
}

// resourcesOf is k's resource and its subresources.
func resourcesOf(k *kinds.Kind) ([]resource, error) {
	gr := k.Group + "/" + k.Resource
	verbs := resourceVerbs
	if noDeleteCollection[gr] {
		verbs = slices.DeleteFunc(slices.Clone(verbs), func(v string) bool { return v == "deletecollection" })
	}
	out := []resource{{
		name:               k.Resource,
		singular:           k.Singular(),
		namespaced:         k.Namespaced,
		kind:               k.Kind.Kind,
		verbs:              verbs,
		shortNames:         k.ShortNames,
		categories:         categories[gr],
		storageVersionHash: StorageVersionHash(k.Stored.Group, k.Stored.Version, k.Stored.Kind.Kind),
	}}
	for _, name := range k.Subresources {
		sub, ok := subresources[k.Resource+"/"+name]
		if !ok {
			sub, ok = subresources[name]
		}
		if !ok {
			return nil, fmt.Errorf("discoverydoc: %s: subresource %q has no discovery entry (add it to subresources in internal/discoverydoc)", k.GVK(), name)
		}
		r := resource{name: k.Resource + "/" + name, namespaced: k.Namespaced, kind: k.Kind.Kind, verbs: sub.verbs}
		if sub.kind != "" {
			r.group, r.version, r.kind = sub.group, sub.version, sub.kind
		}
		out = append(out, r)
	}
	return out, nil
}

// responseKind is the group, version and kind r answers with, in gv.
func (r resource) responseKind(gv *groupVersion) gvk {
	if r.version != "" {
		return gvk{Group: r.group, Version: r.version, Kind: r.kind}
	}
	return gvk{Group: gv.group, Version: gv.version, Kind: r.kind}
}

// parent is "pods" of "pods/status", and the resource's own name.
func (r resource) parent() (string, string, bool) {
	return strings.Cut(r.name, "/")
}
