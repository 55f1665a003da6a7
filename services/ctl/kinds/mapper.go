package kinds

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	discoveryv1 "skiff.dev/proto/discovery/v1"
)

// Mapper resolves names to the kinds a server serves.
type Mapper struct {
	kinds     []*Kind           // served, preferred version first within a group
	preferred map[string]string // group -> preferred version
	// Resources is the server's Discovery answer (nil for a static mapper).
	Resources *discoveryv1.APIResourceList
	Groups    *discoveryv1.APIGroupList
}

// Static is a mapper of every known kind, for when no server is asked
// (--dry-run=client, tests of printing).
func Static() *Mapper {
	m := &Mapper{kinds: All(), preferred: map[string]string{}}
	for _, k := range m.kinds {
		if _, ok := m.preferred[k.Group]; !ok {
			m.preferred[k.Group] = k.Version
		}
	}
	return m
}

// Discover asks the server's Discovery service what it serves and keeps
// the known kinds it serves, with the server's short names and its
// preferred version of each group.
func Discover(ctx context.Context, conn grpc.ClientConnInterface) (*Mapper, error) {
	dc := discoveryv1.NewDiscoveryClient(conn)
	groups, err := dc.Groups(ctx, &discoveryv1.GroupsRequest{})
	if err != nil {
		return nil, apierrors.FromError(err)
	}
	res, err := dc.Resources(ctx, &discoveryv1.ResourcesRequest{})
	if err != nil {
		return nil, apierrors.FromError(err)
	}
	return FromDiscovery(groups, res), nil
}

// FromDiscovery builds a mapper from a Discovery answer.
func FromDiscovery(groups *discoveryv1.APIGroupList, res *discoveryv1.APIResourceList) *Mapper {
	m := &Mapper{preferred: map[string]string{}, Resources: res, Groups: groups}
	for _, g := range groups.GetGroups() {
		m.preferred[g.GetName()] = g.GetPreferredVersion().GetVersion()
	}
	served := map[string]*discoveryv1.APIResource{}
	for _, g := range res.GetGroups() {
		for _, r := range g.GetResources() {
			served[r.GetService()] = r
		}
	}
	for _, k := range All() {
		r, ok := served[k.Service]
		if !ok {
			continue
		}
		k.ShortNames = r.GetShortNames()
		k.Namespaced = r.GetNamespaced()
		m.kinds = append(m.kinds, k)
	}
	// Preferred versions first, so that a name without a version finds them.
	slices.SortStableFunc(m.kinds, func(a, b *Kind) int {
		pa, pb := m.preferred[a.Group] == a.Version, m.preferred[b.Group] == b.Version
		switch {
		case pa && !pb:
			return -1
		case pb && !pa:
			return 1
		}
		return 0
	})
	return m
}

// Kinds lists the served kinds, preferred versions first.
func (m *Mapper) Kinds() []*Kind { return m.kinds }

// NoMatchError says a manifest's apiVersion and kind are not served.
type NoMatchError struct{ APIVersion, Kind string }

func (e *NoMatchError) Error() string {
	return fmt.Sprintf("no matches for kind %q in version %q", e.Kind, e.APIVersion)
}

// ForManifest finds the kind of a manifest's apiVersion and kind.
func (m *Mapper) ForManifest(apiVersion, kind string) (*Kind, error) {
	for _, k := range m.kinds {
		if k.GroupVersion() == apiVersion && k.Kind == kind {
			return k, nil
		}
	}
	return nil, &NoMatchError{APIVersion: apiVersion, Kind: kind}
}

// UnknownResourceError says a resource type typed by a user is not served.
type UnknownResourceError struct{ Name string }

func (e *UnknownResourceError) Error() string {
	return fmt.Sprintf("the server doesn't have a resource type %q", e.Name)
}

// ForResource resolves a resource type as kubectl accepts it: plural,
// singular, short name or kind, case-insensitive, optionally qualified
// with a group ("deployments.apps") or version and group
// ("deployments.v1.apps").
func (m *Mapper) ForResource(name string) (*Kind, error) {
	lower := strings.ToLower(name)
	res, rest, _ := strings.Cut(lower, ".")
	var version, group string
	if rest != "" {
		group = rest
		if v, g, ok := strings.Cut(rest, "."); ok && isVersion(v) {
			version, group = v, g
		}
	}
	for _, k := range m.kinds {
		if !k.matchesName(res) {
			continue
		}
		if rest != "" {
			if group != k.Group && !strings.HasPrefix(k.Group, group+".") && !(group == "" && k.Group == "") {
				continue
			}
			if version != "" && version != k.Version {
				continue
			}
		}
		return k, nil
	}
	return nil, &UnknownResourceError{Name: name}
}

func (k *Kind) matchesName(s string) bool {
	return s == k.Resource || s == k.Singular || s == strings.ToLower(k.Kind) || slices.Contains(k.ShortNames, s)
}

func isVersion(s string) bool {
	return len(s) >= 2 && s[0] == 'v' && s[1] >= '0' && s[1] <= '9'
}
