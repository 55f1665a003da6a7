// Package scheme is the apiserver's catalogue of kinds: for every
// group/version/kind it knows the Go type, the plural resource name, whether
// it is namespaced, the version it is stored as in etcd, and how to convert
// between a served version and the storage version. Discovery answers from
// it. It owns no storage and no wire code.
package scheme

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
)

// GroupVersion names one API version of a group ("" is the core group).
type GroupVersion struct {
	Group   string
	Version string
}

// String is "apps/v1", or "v1" for the core group: the apiVersion of manifests.
func (gv GroupVersion) String() string {
	if gv.Group == "" {
		return gv.Version
	}
	return gv.Group + "/" + gv.Version
}

// ParseGroupVersion parses an apiVersion ("v1", "apps/v1").
func ParseGroupVersion(s string) (GroupVersion, error) {
	switch parts := strings.Split(s, "/"); len(parts) {
	case 1:
		if parts[0] == "" {
			return GroupVersion{}, fmt.Errorf("apiVersion is empty")
		}
		return GroupVersion{Version: parts[0]}, nil
	case 2:
		if parts[0] == "" || parts[1] == "" {
			return GroupVersion{}, fmt.Errorf("apiVersion %q: expected group/version", s)
		}
		return GroupVersion{Group: parts[0], Version: parts[1]}, nil
	default:
		return GroupVersion{}, fmt.Errorf("apiVersion %q: expected group/version", s)
	}
}

// GroupVersionKind names one kind at one version.
type GroupVersionKind struct {
	GroupVersion
	Kind string
}

func (gvk GroupVersionKind) String() string { return gvk.GroupVersion.String() + ", Kind=" + gvk.Kind }

// Kind describes one kind as served at one version.
type Kind struct {
	GVK GroupVersionKind
	// Resource is the plural, lower-case name used in etcd keys and errors ("deployments").
	Resource     string
	Singular     string
	ShortNames   []string
	Namespaced   bool
	Storage      GroupVersion // the version objects are stored as
	Service      string       // full gRPC service name
	Verbs        []string
	Subresources []string
	// FieldSelectors are the fields List and Watch may select on.
	FieldSelectors []string
	// New returns an empty object of this version's Go type.
	New func() proto.Message
}

// ConvertFunc converts in (one version's Go type) into out (another's).
type ConvertFunc func(in, out proto.Message) error

type conversionKey struct{ from, to GroupVersionKind }

// Scheme is the catalogue. Build it once at start, then only read it.
type Scheme struct {
	kinds       []*Kind
	byGVK       map[GroupVersionKind]*Kind
	conversions map[conversionKey]ConvertFunc
	preferred   map[string]string // group -> preferred version
}

// New returns an empty Scheme.
func New() *Scheme {
	return &Scheme{
		byGVK:       map[GroupVersionKind]*Kind{},
		conversions: map[conversionKey]ConvertFunc{},
		preferred:   map[string]string{},
	}
}

// AddKind registers a kind at one served version. The first version added
// for a group is its preferred version.
func (s *Scheme) AddKind(k *Kind) {
	if _, dup := s.byGVK[k.GVK]; dup {
		panic(fmt.Sprintf("scheme: %s registered twice", k.GVK))
	}
	s.kinds = append(s.kinds, k)
	s.byGVK[k.GVK] = k
	if _, ok := s.preferred[k.GVK.Group]; !ok {
		s.preferred[k.GVK.Group] = k.GVK.Version
	}
}

// AddConversion registers a conversion between two versions of a kind.
func (s *Scheme) AddConversion(from, to GroupVersionKind, fn ConvertFunc) {
	s.conversions[conversionKey{from, to}] = fn
}

// Kind returns the registered kind for gvk.
func (s *Scheme) Kind(gvk GroupVersionKind) (*Kind, bool) {
	k, ok := s.byGVK[gvk]
	return k, ok
}

// Kinds returns every registered kind, in registration order.
func (s *Scheme) Kinds() []*Kind { return s.kinds }

// Convert converts in (of kind from) into a new object of kind to.
func (s *Scheme) Convert(in proto.Message, from, to GroupVersionKind) (proto.Message, error) {
	k, ok := s.byGVK[to]
	if !ok {
		return nil, fmt.Errorf("scheme: no kind %s", to)
	}
	out := k.New()
	if from == to {
		proto.Merge(out, in)
		return out, nil
	}
	fn, ok := s.conversions[conversionKey{from, to}]
	if !ok {
		return nil, fmt.Errorf("scheme: no conversion from %s to %s", from, to)
	}
	if err := fn(in, out); err != nil {
		return nil, fmt.Errorf("converting %s to %s: %w", from, to, err)
	}
	return out, nil
}

// Group is one API group as discovery reports it.
type Group struct {
	Name      string
	Versions  []string // preferred first
	Preferred string
}

// Groups lists the groups with their versions, preferred version first,
// the core group first and the rest by name.
func (s *Scheme) Groups() []Group {
	versions := map[string][]string{}
	var names []string
	for _, k := range s.kinds {
		g := k.GVK.Group
		if _, ok := versions[g]; !ok {
			names = append(names, g)
		}
		if !slices.Contains(versions[g], k.GVK.Version) {
			versions[g] = append(versions[g], k.GVK.Version)
		}
	}
	sort.Strings(names) // "" (core) sorts first
	out := make([]Group, 0, len(names))
	for _, n := range names {
		vs := versions[n]
		pref := s.preferred[n]
		sort.SliceStable(vs, func(i, j int) bool { return vs[i] == pref && vs[j] != pref })
		out = append(out, Group{Name: n, Versions: vs, Preferred: pref})
	}
	return out
}
