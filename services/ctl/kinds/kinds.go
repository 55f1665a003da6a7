// Package kinds knows the kinds skiffctl can handle: for each, its
// group/version, resource names, scope, Go type, the defaulting and
// validation the apiserver runs (for client-side checks), and a typed
// client over internal/client's generic Resource. A Mapper, built from the
// server's Discovery answer, says which of them the server serves and
// which version of a group it prefers, and resolves what a user types
// ("po", "deployments.apps", "Deployment") or a manifest names
// (apiVersion + kind) to one Kind.
//
// It owns no I/O beyond Discovery and the calls its clients make for the
// caller; it does not print or decode manifests.
package kinds

import (
	"strings"

	"google.golang.org/grpc"

	"skiff.dev/internal/field"
	"skiff.dev/internal/kinds"
	"skiff.dev/internal/object"
)

// Kind is one kind at one version.
type Kind struct {
	Group, Version, Kind string
	Resource, Singular   string
	ShortNames           []string
	Namespaced           bool
	Service              string // "skiff.apps.v1.Deployments"

	declared *kinds.Kind
}

// GroupVersion is "apps/v1", or "v1" for the core group.
func (k *Kind) GroupVersion() string {
	if k.Group == "" {
		return k.Version
	}
	return k.Group + "/" + k.Version
}

// GroupResource is "deployments.apps", or "pods" for the core group.
func (k *Kind) GroupResource() string {
	if k.Group == "" {
		return k.Resource
	}
	return k.Resource + "." + k.Group
}

// Qualified is the kind in lower case with its group: "deployment.apps",
// "pod".
func (k *Kind) Qualified() string {
	s := strings.ToLower(k.Kind)
	if k.Group != "" {
		s += "." + k.Group
	}
	return s
}

// Ref is how kubectl names an object in its messages:
// "deployment.apps/web", "pod/web".
func (k *Kind) Ref(name string) string { return k.Qualified() + "/" + name }

// New returns an empty object of the kind with apiVersion and kind set.
func (k *Kind) New() object.Object {
	obj := k.declared.New()
	object.SetTypeMeta(obj, k.GroupVersion(), k.Kind)
	return obj
}

// Default fills in defaults as the apiserver would.
func (k *Kind) Default(obj object.Object) { k.declared.Default(obj) }

// Validate runs the apiserver's validation on a defaulted object; with
// old (the stored object) also the update rules.
func (k *Kind) Validate(obj, old object.Object) field.ErrorList { return k.declared.Validate(obj, old) }

// CanValidate reports whether the client has the apiserver's validation
// for this kind (apps/v1beta1 is validated after conversion, on the server).
func (k *Kind) CanValidate() bool { return k.declared.HasValidation() }

// Client returns a client of the kind over conn.
func (k *Kind) Client(conn grpc.ClientConnInterface) Client { return k.declared.Client(conn) }

// Client is the generic verbs of one kind, on object.Object.
type Client = kinds.Client

// Watch is a running watch.
type Watch = kinds.Watch

// All is every kind skiffctl knows (internal/kinds: every kind Skiff
// declares), preferred versions first.
func All() []*Kind {
	var out []*Kind
	for _, k := range kinds.All() {
		out = append(out, &Kind{Group: k.Group, Version: k.Version, Kind: k.Kind.Kind, Resource: k.Resource, Singular: k.Singular(),
			ShortNames: k.ShortNames, Namespaced: k.Namespaced, Service: k.Service(), declared: k})
	}
	return out
}
