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
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/defaults"
	"skiff.dev/internal/field"
	"skiff.dev/internal/object"
	"skiff.dev/internal/validation"
	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
	appsv1 "skiff.dev/proto/apps/v1"
	appsv1beta1 "skiff.dev/proto/apps/v1beta1"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
)

// Kind is one kind at one version.
type Kind struct {
	Group, Version, Kind string
	Resource, Singular   string
	ShortNames           []string
	Namespaced           bool
	Service              string // "skiff.apps.v1.Deployments"

	newObj         func() object.Object
	defaultFn      func(object.Object)
	validate       func(object.Object) field.ErrorList
	validateUpdate func(newObj, oldObj object.Object) field.ErrorList
	client         func(grpc.ClientConnInterface) Client
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
	obj := k.newObj()
	object.SetTypeMeta(obj, k.GroupVersion(), k.Kind)
	return obj
}

// Default fills in defaults as the apiserver would.
func (k *Kind) Default(obj object.Object) {
	if k.defaultFn != nil {
		k.defaultFn(obj)
	}
}

// Validate runs the apiserver's validation on a defaulted object; with
// old (the stored object) also the update rules.
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

// CanValidate reports whether the client has the apiserver's validation
// for this kind (apps/v1beta1 is validated after conversion, on the server).
func (k *Kind) CanValidate() bool { return k.validate != nil }

// Client returns a client of the kind over conn.
func (k *Kind) Client(conn grpc.ClientConnInterface) Client { return k.client(conn) }

// Client is the generic verbs of one kind, on object.Object.
type Client interface {
	Create(ctx context.Context, obj object.Object) (object.Object, error)
	Get(ctx context.Context, namespace, name string) (object.Object, error)
	// List returns the items and the list's resourceVersion. With a limit
	// it reads every page (consistent at the first page's revision).
	List(ctx context.Context, o *metav1.ListOptions) ([]object.Object, string, error)
	Update(ctx context.Context, obj object.Object) (object.Object, error)
	Delete(ctx context.Context, req *metav1.DeleteRequest) (object.Object, error)
	Watch(ctx context.Context, o *metav1.ListOptions) (Watch, error)
}

// Watch is a running watch.
type Watch interface {
	// Next returns the next event: ADDED, MODIFIED, DELETED or BOOKMARK.
	Next() (string, object.Object, error)
	Stop()
}

// typed adapts client.Resource to Client.
type typed[T object.Object, L proto.Message] struct {
	r *client.Resource[T, L]
}

func (c typed[T, L]) Create(ctx context.Context, obj object.Object) (object.Object, error) {
	return c.r.Create(ctx, obj.(T))
}

func (c typed[T, L]) Get(ctx context.Context, ns, name string) (object.Object, error) {
	return c.r.Get(ctx, ns, name)
}

func (c typed[T, L]) Update(ctx context.Context, obj object.Object) (object.Object, error) {
	return c.r.Update(ctx, obj.(T))
}

func (c typed[T, L]) Delete(ctx context.Context, req *metav1.DeleteRequest) (object.Object, error) {
	return c.r.Delete(ctx, req)
}

func (c typed[T, L]) List(ctx context.Context, o *metav1.ListOptions) ([]object.Object, string, error) {
	var out []object.Object
	rv := ""
	opts := proto.Clone(o).(*metav1.ListOptions)
	restarted := false
	for {
		l, err := c.r.List(ctx, opts)
		if apierrors.IsExpired(err) && opts.GetContinue() != "" && !restarted {
			// The pages' revision was compacted: list again from the start.
			opts.Continue, out, restarted = "", nil, true
			continue
		}
		if err != nil {
			return nil, "", err
		}
		m := l.ProtoReflect()
		fds := m.Descriptor().Fields()
		items := m.Get(fds.ByName("items")).List()
		for i := 0; i < items.Len(); i++ {
			out = append(out, items.Get(i).Message().Interface().(object.Object))
		}
		meta := m.Get(fds.ByName("metadata")).Message().Interface().(*metav1.ListMeta)
		if opts.GetContinue() == "" {
			rv = meta.GetResourceVersion() // the pages are consistent at the first one's revision
		}
		if meta.GetContinue() == "" || opts.GetLimit() == 0 {
			return out, rv, nil
		}
		opts.Continue = meta.GetContinue()
	}
}

func (c typed[T, L]) Watch(ctx context.Context, o *metav1.ListOptions) (Watch, error) {
	w, err := c.r.Watch(ctx, o)
	if err != nil {
		return nil, err
	}
	return typedWatch[T]{w}, nil
}

type typedWatch[T object.Object] struct{ w *client.WatchStream[T] }

func (w typedWatch[T]) Next() (string, object.Object, error) {
	ev, err := w.w.Next()
	if err != nil {
		return "", nil, err
	}
	return ev.Type, ev.Object, nil
}

func (w typedWatch[T]) Stop() { w.w.Stop() }

func adapt[T object.Object, L proto.Message](ctor func(grpc.ClientConnInterface) *client.Resource[T, L]) func(grpc.ClientConnInterface) Client {
	return func(c grpc.ClientConnInterface) Client { return typed[T, L]{ctor(c)} }
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

func newOf[T object.Object]() func() object.Object {
	return func() object.Object { return object.New[T]() }
}

// All is every kind skiffctl knows, preferred versions first.
func All() []*Kind {
	return []*Kind{
		{Version: "v1", Kind: "Pod", Resource: "pods", Singular: "pod", ShortNames: []string{"po"}, Namespaced: true,
			Service: "skiff.core.v1.Pods", newObj: newOf[*corev1.Pod](), defaultFn: def(defaults.Pod),
			validate: val(validation.Pod), validateUpdate: valUpdate(validation.PodUpdate), client: adapt(client.Pods)},
		{Version: "v1", Kind: "Namespace", Resource: "namespaces", Singular: "namespace", ShortNames: []string{"ns"},
			Service: "skiff.core.v1.Namespaces", newObj: newOf[*corev1.Namespace](), defaultFn: def(defaults.Namespace),
			validate: val(validation.Namespace), validateUpdate: valUpdate(validation.NamespaceUpdate), client: adapt(client.Namespaces)},
		{Version: "v1", Kind: "Node", Resource: "nodes", Singular: "node", ShortNames: []string{"no"},
			Service: "skiff.core.v1.Nodes", newObj: newOf[*corev1.Node](), defaultFn: def(defaults.Node),
			validate: val(validation.Node), validateUpdate: valUpdate(validation.NodeUpdate), client: adapt(client.Nodes)},
		{Version: "v1", Kind: "Event", Resource: "events", Singular: "event", ShortNames: []string{"ev"}, Namespaced: true,
			Service: "skiff.core.v1.Events", newObj: newOf[*corev1.Event](), defaultFn: def(defaults.Event),
			validate: val(validation.Event), validateUpdate: valUpdate(validation.EventUpdate), client: adapt(client.Events)},
		{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Singular: "configmap", ShortNames: []string{"cm"}, Namespaced: true,
			Service: "skiff.core.v1.ConfigMaps", newObj: newOf[*corev1.ConfigMap](), defaultFn: def(defaults.ConfigMap),
			validate: val(validation.ConfigMap), validateUpdate: valUpdate(validation.ConfigMapUpdate), client: adapt(client.ConfigMaps)},
		{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Singular: "deployment", ShortNames: []string{"deploy"}, Namespaced: true,
			Service: "skiff.apps.v1.Deployments", newObj: newOf[*appsv1.Deployment](), defaultFn: def(defaults.Deployment),
			validate: val(validation.Deployment), validateUpdate: valUpdate(validation.DeploymentUpdate), client: adapt(client.Deployments)},
		{Group: "apps", Version: "v1beta1", Kind: "Deployment", Resource: "deployments", Singular: "deployment", ShortNames: []string{"deploy"}, Namespaced: true,
			Service: "skiff.apps.v1beta1.Deployments", newObj: newOf[*appsv1beta1.Deployment](), defaultFn: def(defaults.DeploymentV1beta1),
			client: adapt(client.DeploymentsV1beta1)},
		{Group: "apps", Version: "v1", Kind: "ReplicaSet", Resource: "replicasets", Singular: "replicaset", ShortNames: []string{"rs"}, Namespaced: true,
			Service: "skiff.apps.v1.ReplicaSets", newObj: newOf[*appsv1.ReplicaSet](), defaultFn: def(defaults.ReplicaSet),
			validate: val(validation.ReplicaSet), validateUpdate: valUpdate(validation.ReplicaSetUpdate), client: adapt(client.ReplicaSets)},
		{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease", Resource: "leases", Singular: "lease", Namespaced: true,
			Service: "skiff.coordination.v1.Leases", newObj: newOf[*coordinationv1.Lease](), defaultFn: def(defaults.Lease),
			validate: val(validation.Lease), validateUpdate: valUpdate(validation.LeaseUpdate), client: adapt(client.Leases)},
		{Version: "v1", Kind: "ServiceAccount", Resource: "serviceaccounts", Singular: "serviceaccount", ShortNames: []string{"sa"}, Namespaced: true,
			Service: "skiff.core.v1.ServiceAccounts", newObj: newOf[*corev1.ServiceAccount](), defaultFn: def(defaults.ServiceAccount),
			validate: val(validation.ServiceAccount), validateUpdate: valUpdate(validation.ServiceAccountUpdate), client: adapt(client.ServiceAccounts)},
		{Version: "v1", Kind: "LimitRange", Resource: "limitranges", Singular: "limitrange", ShortNames: []string{"limits"}, Namespaced: true,
			Service: "skiff.core.v1.LimitRanges", newObj: newOf[*corev1.LimitRange](), defaultFn: def(defaults.LimitRange),
			validate: val(validation.LimitRange), validateUpdate: valUpdate(validation.LimitRangeUpdate), client: adapt(client.LimitRanges)},
		{Version: "v1", Kind: "ResourceQuota", Resource: "resourcequotas", Singular: "resourcequota", ShortNames: []string{"quota"}, Namespaced: true,
			Service: "skiff.core.v1.ResourceQuotas", newObj: newOf[*corev1.ResourceQuota](), defaultFn: def(defaults.ResourceQuota),
			validate: val(validation.ResourceQuota), validateUpdate: valUpdate(validation.ResourceQuotaUpdate), client: adapt(client.ResourceQuotas)},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role", Resource: "roles", Singular: "role", Namespaced: true,
			Service: "skiff.rbac.v1.Roles", newObj: newOf[*rbacv1.Role](), defaultFn: def(defaults.Role),
			validate: val(validation.Role), validateUpdate: valUpdate(validation.RoleUpdate), client: adapt(client.Roles)},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Resource: "clusterroles", Singular: "clusterrole",
			Service: "skiff.rbac.v1.ClusterRoles", newObj: newOf[*rbacv1.ClusterRole](), defaultFn: def(defaults.ClusterRole),
			validate: val(validation.ClusterRole), validateUpdate: valUpdate(validation.ClusterRoleUpdate), client: adapt(client.ClusterRoles)},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding", Resource: "rolebindings", Singular: "rolebinding", Namespaced: true,
			Service: "skiff.rbac.v1.RoleBindings", newObj: newOf[*rbacv1.RoleBinding](), defaultFn: def(defaults.RoleBinding),
			validate: val(validation.RoleBinding), validateUpdate: valUpdate(validation.RoleBindingUpdate), client: adapt(client.RoleBindings)},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding", Resource: "clusterrolebindings", Singular: "clusterrolebinding",
			Service: "skiff.rbac.v1.ClusterRoleBindings", newObj: newOf[*rbacv1.ClusterRoleBinding](), defaultFn: def(defaults.ClusterRoleBinding),
			validate: val(validation.ClusterRoleBinding), validateUpdate: valUpdate(validation.ClusterRoleBindingUpdate), client: adapt(client.ClusterRoleBindings)},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration", Resource: "mutatingwebhookconfigurations", Singular: "mutatingwebhookconfiguration",
			Service: "skiff.admissionregistration.v1.MutatingWebhookConfigurations", newObj: newOf[*admissionregistrationv1.MutatingWebhookConfiguration](),
			defaultFn: def(defaults.MutatingWebhookConfiguration), validate: val(validation.MutatingWebhookConfiguration),
			validateUpdate: valUpdate(validation.MutatingWebhookConfigurationUpdate), client: adapt(client.MutatingWebhookConfigurations)},
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration", Resource: "validatingwebhookconfigurations", Singular: "validatingwebhookconfiguration",
			Service: "skiff.admissionregistration.v1.ValidatingWebhookConfigurations", newObj: newOf[*admissionregistrationv1.ValidatingWebhookConfiguration](),
			defaultFn: def(defaults.ValidatingWebhookConfiguration), validate: val(validation.ValidatingWebhookConfiguration),
			validateUpdate: valUpdate(validation.ValidatingWebhookConfigurationUpdate), client: adapt(client.ValidatingWebhookConfigurations)},
	}
}
