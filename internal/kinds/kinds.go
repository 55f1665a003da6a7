// Package kinds is every kind Skiff serves, as declared once in
// internal/kinds/decl, with what the rest of Skiff needs of it at run
// time: its Go types, its defaults and validation (those of
// internal/defaults and internal/validation, when it has them), a client
// of it on object.Object, its selectable fields, and the resources each
// user-facing role grants. The apiserver's install calls, the typed client
// constructors and the proto boilerplate are generated from the same
// declarations (internal/kinds/gen, run by make proto).
package kinds

import (
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/field"
	"skiff.dev/internal/kinds/decl"
	"skiff.dev/internal/object"
)

// Kind is one kind at one served version.
type Kind struct {
	decl.Kind
	// Stored is the kind at its storage version (the kind itself when it
	// is the storage version).
	Stored *Kind

	binding
	fields []selectable
}

// binding is what the generated bindings.gen.go gives a declared kind.
type binding struct {
	newObj         func() object.Object
	newList        func() proto.Message
	defaultFn      func(object.Object)
	validate       func(object.Object) field.ErrorList
	validateUpdate func(newObj, oldObj object.Object) field.ErrorList
	client         func(grpc.ClientConnInterface) Client
}

// bind is one kind's binding, its types taken from its client
// constructor.
func bind[T object.Object, L proto.Message](ctor func(grpc.ClientConnInterface) *client.Resource[T, L],
	def func(object.Object), validate func(object.Object) field.ErrorList, validateUpdate func(object.Object, object.Object) field.ErrorList) binding {
	return binding{
		newObj:         func() object.Object { return object.New[T]() },
		newList:        func() proto.Message { return object.New[L]() },
		defaultFn:      def,
		validate:       validate,
		validateUpdate: validateUpdate,
		client:         func(c grpc.ClientConnInterface) Client { return typed[T, L]{ctor(c)} },
	}
}

func def[T object.Object](fn func(T)) func(object.Object) {
	return func(o object.Object) { fn(o.(T)) }
}

func val[T object.Object](fn func(T) field.ErrorList) func(object.Object) field.ErrorList {
	return func(o object.Object) field.ErrorList { return fn(o.(T)) }
}

func valUpdate[T object.Object](fn func(T, T) field.ErrorList) func(object.Object, object.Object) field.ErrorList {
	return func(n, o object.Object) field.ErrorList { return fn(n.(T), o.(T)) }
}

var (
	once  sync.Once
	all   []*Kind
	byGVK map[string]*Kind
)

func load() {
	if len(bindings) != len(decl.All) {
		panic(fmt.Sprintf("kinds: %d bindings for %d declared kinds: run make proto", len(bindings), len(decl.All)))
	}
	byGVK = map[string]*Kind{}
	for i, d := range decl.All {
		k := &Kind{Kind: d, binding: bindings[i]}
		if got := string(k.newObj().ProtoReflect().Descriptor().FullName()); got != k.ProtoPackage()+"."+d.Kind {
			panic(fmt.Sprintf("kinds: %s is bound to %s: run make proto", k.GVK(), got))
		}
		k.Stored = k
		if d.StoredAs != "" {
			k.Stored = byGVK[d.StoredAs+"/"+d.Kind]
		}
		fields, err := selectables(k)
		if err != nil {
			panic(fmt.Sprintf("kinds: %s: %v", k.GVK(), err))
		}
		k.fields = fields
		byGVK[k.GVK()] = k
		all = append(all, k)
	}
}

// All is every kind, in declaration order: storage versions before other
// served versions; a group's first version is its preferred one.
func All() []*Kind {
	once.Do(load)
	return all
}

// Get returns the kind of group, version and kind, or nil.
func Get(group, version, kind string) *Kind {
	once.Do(load)
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	return byGVK[gv+"/"+kind]
}

// MustGet is Get of a kind that must be declared.
func MustGet(group, version, kind string) *Kind {
	k := Get(group, version, kind)
	if k == nil {
		panic(fmt.Sprintf("kinds: %s %s/%s is not declared in internal/kinds/decl", kind, group, version))
	}
	return k
}

// GroupVersion is "apps/v1", or "v1" for the core group.
func (k *Kind) GroupVersion() string {
	if k.Group == "" {
		return k.Version
	}
	return k.Group + "/" + k.Version
}

// GVK is "apps/v1/Deployment", "v1/Pod".
func (k *Kind) GVK() string { return k.GroupVersion() + "/" + k.Kind.Kind }

// Singular is the kind in lower case ("deployment").
func (k *Kind) Singular() string { return strings.ToLower(k.Kind.Kind) }

// IsStorageVersion says whether objects are stored at this version.
func (k *Kind) IsStorageVersion() bool { return k.Stored == k }

// New returns an empty object of the kind's Go type.
func (k *Kind) New() object.Object { return k.newObj() }

// NewList returns an empty list of the kind.
func (k *Kind) NewList() proto.Message { return k.newList() }

// Default fills in the kind's defaults (nothing when it has none).
func (k *Kind) Default(obj object.Object) {
	if k.defaultFn != nil {
		k.defaultFn(obj)
	}
}

// HasDefaults says whether the kind has defaults of its own.
func (k *Kind) HasDefaults() bool { return k.defaultFn != nil }

// Validate runs the kind's validation of a defaulted object; with old
// (the stored object) also its update rules. A kind without validation of
// its own returns nothing (the apiserver validates metadata for all).
func (k *Kind) Validate(obj, old object.Object) field.ErrorList {
	var errs field.ErrorList
	if k.validate != nil {
		errs = append(errs, k.validate(obj)...)
	}
	if old != nil && k.validateUpdate != nil {
		errs = append(errs, k.validateUpdate(obj, old)...)
	}
	return errs
}

// HasValidation says whether the kind has a create validation of its own.
func (k *Kind) HasValidation() bool { return k.validate != nil }

// HasUpdateValidation says whether the kind has update rules of its own.
func (k *Kind) HasUpdateValidation() bool { return k.validateUpdate != nil }

// Client returns a client of the kind over conn.
func (k *Kind) Client(conn grpc.ClientConnInterface) Client { return k.client(conn) }

// CreateRules is the kind's validation of a new object, nil if it has
// none of its own.
func (k *Kind) CreateRules() func(object.Object) field.ErrorList { return k.validate }

// UpdateRules is the kind's validation of an update against the stored
// object, nil if it has none of its own.
func (k *Kind) UpdateRules() func(newObj, oldObj object.Object) field.ErrorList {
	return k.validateUpdate
}
