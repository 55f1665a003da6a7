package admission

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/services/apiserver/scheme"
	"skiff.dev/services/apiserver/user"
)

// Operation is what a request does to an object.
type Operation string

// The operations admission sees (CONNECT is not used: Skiff's streams do
// not pass admission).
const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
	Delete Operation = "DELETE"
)

// operations indexes the metric series.
var operations = [...]Operation{Create, Update, Delete}

func opIndex(op Operation) int {
	switch op {
	case Create:
		return 0
	case Update:
		return 1
	default:
		return 2
	}
}

// Attributes describe one write as admission sees it. Objects are the
// storage version's messages.
type Attributes struct {
	Operation Operation
	// Kind is the storage version's kind: group, version, kind, plural
	// resource and scope.
	Kind        *scheme.Kind
	Subresource string // "", "status", "binding", "scale"
	Namespace   string // "" for cluster-scoped kinds
	Name        string // "" on a create by generateName before the name is chosen
	User        *user.Info
	// Object is the new object (Create, Update; nil for Delete). A
	// mutating plugin may change it in place or replace it with another
	// message of the same type.
	Object proto.Message
	// OldObject is the current object (Update, Delete; nil for Create).
	// Plugins must not change it.
	OldObject proto.Message
	// DryRun: nothing will be stored; a plugin must not have side effects
	// (the ResourceQuota plugin checks without charging).
	DryRun bool
}

// Group is the kind's API group ("" for core).
func (a *Attributes) Group() string { return a.Kind.GVK.Group }

// Resource is the kind's plural resource name ("pods").
func (a *Attributes) Resource() string { return a.Kind.Resource }

// resourceIs says whether a is about the object itself (not a
// subresource) of the given group and resource.
func (a *Attributes) resourceIs(group, resource string) bool {
	return a.Subresource == "" && a.Kind.Resource == resource && a.Kind.GVK.Group == group
}

// Forbidden is a plugin's refusal in Kubernetes' words:
// `pods "web" is forbidden: <why>`.
func (a *Attributes) Forbidden(format string, args ...any) error {
	return apierrors.NewForbidden(a.Kind.Resource, a.Name, fmt.Sprintf("%s %q is forbidden: %s", a.Kind.Resource, a.Name, fmt.Sprintf(format, args...)))
}

// MutationInterface is a mutating plugin: Admit may change a.Object (and
// refuse the request with an error).
type MutationInterface interface {
	Admit(ctx context.Context, a *Attributes) error
}

// ValidationInterface is a validating plugin: Validate accepts or refuses
// the request, never changing it. It runs after the kind's validation.
type ValidationInterface interface {
	Validate(ctx context.Context, a *Attributes) error
}

// Starter is a plugin with background work (informers): Start returns once
// the plugin is ready to serve (its informers synced) and keeps the work
// running until ctx ends.
type Starter interface {
	Start(ctx context.Context) error
}
