package discoverydoc

import (
	"bytes"
	"encoding/json"
	"sync"

	"skiff.dev/internal/kinds"
)

// The JSON shapes of k8s.io/apimachinery's meta/v1 discovery types and
// k8s.io/api's apidiscovery/v2, their fields in the same order and with
// the same omitempty, so that the bytes are kube-apiserver's.

type gvk struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

type apiVersions struct {
	Kind                       string                      `json:"kind"`
	Versions                   []string                    `json:"versions"`
	ServerAddressByClientCIDRs []serverAddressByClientCIDR `json:"serverAddressByClientCIDRs"`
}

type serverAddressByClientCIDR struct {
	ClientCIDR    string `json:"clientCIDR"`
	ServerAddress string `json:"serverAddress"`
}

type apiGroupList struct {
	Kind       string     `json:"kind"`
	APIVersion string     `json:"apiVersion"`
	Groups     []apiGroup `json:"groups"`
}

type apiGroup struct {
	Kind             string                     `json:"kind,omitempty"`
	APIVersion       string                     `json:"apiVersion,omitempty"`
	Name             string                     `json:"name"`
	Versions         []groupVersionForDiscovery `json:"versions"`
	PreferredVersion *groupVersionForDiscovery  `json:"preferredVersion,omitempty"`
}

type groupVersionForDiscovery struct {
	GroupVersion string `json:"groupVersion"`
	Version      string `json:"version"`
}

type apiResourceList struct {
	Kind         string        `json:"kind"`
	APIVersion   string        `json:"apiVersion,omitempty"`
	GroupVersion string        `json:"groupVersion"`
	Resources    []apiResource `json:"resources"`
}

type apiResource struct {
	Name               string   `json:"name"`
	SingularName       string   `json:"singularName"`
	Namespaced         bool     `json:"namespaced"`
	Group              string   `json:"group,omitempty"`
	Version            string   `json:"version,omitempty"`
	Kind               string   `json:"kind"`
	Verbs              []string `json:"verbs"`
	ShortNames         []string `json:"shortNames,omitempty"`
	Categories         []string `json:"categories,omitempty"`
	StorageVersionHash string   `json:"storageVersionHash,omitempty"`
}

type groupDiscoveryList struct {
	Kind       string           `json:"kind"`
	APIVersion string           `json:"apiVersion"`
	Metadata   struct{}         `json:"metadata"`
	Items      []groupDiscovery `json:"items"`
}

type objectMeta struct {
	Name string `json:"name,omitempty"`
}

type groupDiscovery struct {
	Metadata objectMeta         `json:"metadata"`
	Versions []versionDiscovery `json:"versions,omitempty"`
}

type versionDiscovery struct {
	Version   string              `json:"version"`
	Resources []resourceDiscovery `json:"resources,omitempty"`
	Freshness string              `json:"freshness,omitempty"`
}

type resourceDiscovery struct {
	Resource         string                 `json:"resource"`
	ResponseKind     *gvk                   `json:"responseKind,omitempty"`
	Scope            string                 `json:"scope"`
	SingularResource string                 `json:"singularResource"`
	Verbs            []string               `json:"verbs"`
	ShortNames       []string               `json:"shortNames,omitempty"`
	Categories       []string               `json:"categories,omitempty"`
	Subresources     []subresourceDiscovery `json:"subresources,omitempty"`
}

type subresourceDiscovery struct {
	Subresource  string   `json:"subresource"`
	ResponseKind *gvk     `json:"responseKind,omitempty"`
	Verbs        []string `json:"verbs"`
}

// Root names the two roots of aggregated discovery.
type Root int

const (
	// Core is /api: the core group, alone.
	Core Root = iota
	// Groups is /apis: every other group.
	Groups
)

// AggregatedContentType is the media type of an aggregated discovery
// document, as kube-apiserver answers a client that accepts it.
const AggregatedContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// documents are the encoded documents of the served kinds.
type documents struct {
	groupList  []byte
	groups     map[string][]byte // /apis/<group>
	resources  map[string][]byte // by group version
	aggregated [2][]byte         // by Root
}

var (
	once   sync.Once
	served *documents
)

func load() *documents {
	once.Do(func() {
		c, err := build(kinds.All())
		if err != nil {
			panic(err)
		}
		served = c.documents()
	})
	return served
}

// APIVersions is /api: the core group's versions, and the address clients
// reach the server at (host:port, as kube-apiserver's
// --advertise-address and secure port; "" for none) for clients of any
// address.
func APIVersions(serverAddress string) []byte {
	doc := apiVersions{Kind: "APIVersions", Versions: []string{"v1"}}
	if serverAddress != "" {
		doc.ServerAddressByClientCIDRs = []serverAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: serverAddress}}
	}
	return encode(doc)
}

// APIGroupList is /apis: every group but the core one, with its versions
// (preferred first) and preferred version, in kube-aggregator's order.
func APIGroupList() []byte { return load().groupList }

// APIGroup is /apis/<group>, and false for a group Skiff does not serve
// (kube-apiserver answers 404).
func APIGroup(group string) ([]byte, bool) {
	doc, ok := load().groups[group]
	return doc, ok
}

// APIResourceList is /api/v1 (groupVersion "v1") or /apis/<group>/<version>
// (groupVersion "<group>/<version>"): the resources and subresources of a
// served group version, by name; false for one Skiff does not serve.
func APIResourceList(groupVersion string) ([]byte, bool) {
	doc, ok := load().resources[groupVersion]
	return doc, ok
}

// Aggregated is the aggregated discovery document (apidiscovery.k8s.io/v2
// APIGroupDiscoveryList) of /api (Core) or /apis (Groups), served as
// AggregatedContentType.
func Aggregated(root Root) []byte { return load().aggregated[root] }

// documents encodes the catalogue's documents.
func (c *catalogue) documents() *documents {
	d := &documents{groups: map[string][]byte{}, resources: map[string][]byte{}}
	list := apiGroupList{Kind: "APIGroupList", APIVersion: "v1", Groups: []apiGroup{}}
	agg := [2]groupDiscoveryList{}
	for i := range agg {
		agg[i] = groupDiscoveryList{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2", Items: []groupDiscovery{}}
	}
	for _, g := range c.groups {
		root := Groups
		if g.name == "" {
			root = Core
		}
		agg[root].Items = append(agg[root].Items, g.discovery())
		if root == Core {
			continue
		}
		ag := g.apiGroup()
		list.Groups = append(list.Groups, ag)
		ag.Kind, ag.APIVersion = "APIGroup", "v1"
		d.groups[g.name] = encode(ag)
	}
	for name, gv := range c.byGV {
		d.resources[name] = encode(gv.apiResourceList())
	}
	d.groupList = encode(list)
	for i := range agg {
		d.aggregated[i] = encode(agg[i])
	}
	return d
}

func (g *group) apiGroup() apiGroup {
	ag := apiGroup{Name: g.name}
	for _, gv := range g.versions {
		ag.Versions = append(ag.Versions, groupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.version})
	}
	ag.PreferredVersion = &ag.Versions[0]
	return ag
}

func (gv *groupVersion) apiResourceList() apiResourceList {
	l := apiResourceList{Kind: "APIResourceList", GroupVersion: gv.String(), Resources: []apiResource{}}
	if gv.group != "" {
		// kube-apiserver's legacy /api/v1 answer has no apiVersion; the
		// groups' answers have v1.
		l.APIVersion = "v1"
	}
	for _, r := range gv.resources {
		l.Resources = append(l.Resources, apiResource{
			Name: r.name, SingularName: r.singular, Namespaced: r.namespaced,
			Group: r.group, Version: r.version, Kind: r.kind, Verbs: r.verbs,
			ShortNames: r.shortNames, Categories: r.categories, StorageVersionHash: r.storageVersionHash,
		})
	}
	return l
}

// discovery is the group's APIGroupDiscovery: each version's resources,
// with their subresources inside them.
func (g *group) discovery() groupDiscovery {
	gd := groupDiscovery{Metadata: objectMeta{Name: g.name}}
	for _, gv := range g.versions {
		vd := versionDiscovery{Version: gv.version, Freshness: "Current"}
		index := map[string]int{}
		for _, r := range gv.resources {
			if _, _, sub := r.parent(); sub {
				continue
			}
			scope := "Cluster"
			if r.namespaced {
				scope = "Namespaced"
			}
			kind := r.responseKind(gv)
			index[r.name] = len(vd.Resources)
			vd.Resources = append(vd.Resources, resourceDiscovery{
				Resource: r.name, ResponseKind: &kind, Scope: scope, SingularResource: r.singular,
				Verbs: r.verbs, ShortNames: r.shortNames, Categories: r.categories,
			})
		}
		for _, r := range gv.resources {
			parent, sub, ok := r.parent()
			if !ok {
				continue
			}
			kind := r.responseKind(gv)
			p := &vd.Resources[index[parent]]
			p.Subresources = append(p.Subresources, subresourceDiscovery{Subresource: sub, ResponseKind: &kind, Verbs: r.verbs})
		}
		gd.Versions = append(gd.Versions, vd)
	}
	return gd
}

// encode is v as kube-apiserver writes JSON: compact, then a newline.
func encode(v any) []byte {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		panic("discoverydoc: " + err.Error()) // only plain structs of strings
	}
	return b.Bytes()
}
