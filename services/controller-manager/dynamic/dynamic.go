// Package dynamic reaches every resource the apiserver serves without typed
// code, for the controllers that must treat all kinds alike (the namespace
// controller empties a namespace of everything; the resourcequota
// controller counts any kind). Discovery names the resources and their gRPC
// services; the request and response messages come from the protobuf
// registry, that is from the generated packages linked into the program
// (skiff.dev/proto/...). A resource whose messages are not linked in is an
// error naming it, never silently skipped. It owns no cache.
package dynamic

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/object"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Resource is one served resource at its storage version.
type Resource struct {
	Group      string // "" for core
	Version    string
	Resource   string // "pods"
	Kind       string
	Namespaced bool
	Service    string // "skiff.core.v1.Pods"
	Verbs      []string
}

// GroupResource is "pods" or "deployments.apps".
func (r Resource) GroupResource() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// Supports says whether the resource has a verb.
func (r Resource) Supports(verb string) bool { return slices.Contains(r.Verbs, verb) }

// Client lists and deletes objects of any served resource.
type Client struct {
	conn grpc.ClientConnInterface
	disc discoveryv1.DiscoveryClient
}

// New returns a client over conn.
func New(conn grpc.ClientConnInterface) *Client {
	return &Client{conn: conn, disc: discoveryv1.NewDiscoveryClient(conn)}
}

// Resources asks discovery for the served resources, each once (at the
// version it is stored as, so a kind served at two versions is listed once).
func (c *Client) Resources(ctx context.Context) ([]Resource, error) {
	resp, err := c.disc.Resources(ctx, &discoveryv1.ResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", apierrors.FromError(err))
	}
	var out []Resource
	for _, g := range resp.GetGroups() {
		for _, r := range g.GetResources() {
			if r.GetStorageVersion() != g.GetGroupVersion() {
				continue // another served version of a kind listed at its storage version
			}
			group, version := splitGroupVersion(g.GetGroupVersion())
			out = append(out, Resource{Group: group, Version: version, Resource: r.GetName(), Kind: r.GetKind(),
				Namespaced: r.GetNamespaced(), Service: r.GetService(), Verbs: r.GetVerbs()})
		}
	}
	return out, nil
}

func splitGroupVersion(gv string) (group, version string) {
	for i := len(gv) - 1; i >= 0; i-- {
		if gv[i] == '/' {
			return gv[:i], gv[i+1:]
		}
	}
	return "", gv
}

// output returns a new message of the response type of one of the
// resource's methods.
func output(r Resource, method string) (proto.Message, error) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(r.Service))
	if err != nil {
		return nil, fmt.Errorf("%s: service %s is not linked into this program: %w", r.GroupResource(), r.Service, err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s: %s is not a service", r.GroupResource(), r.Service)
	}
	md := sd.Methods().ByName(protoreflect.Name(method))
	if md == nil {
		return nil, fmt.Errorf("%s: service %s has no method %s", r.GroupResource(), r.Service, method)
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
	if err != nil {
		return nil, fmt.Errorf("%s: message %s is not linked into this program: %w", r.GroupResource(), md.Output().FullName(), err)
	}
	return mt.New().Interface(), nil
}

// pageSize bounds each List page.
const pageSize = 500

// List returns every object of r in namespace ("" for all), page by page.
func (c *Client) List(ctx context.Context, r Resource, namespace string) ([]object.Object, error) {
	var out []object.Object
	opts := &metav1.ListOptions{Namespace: namespace, Limit: pageSize}
	for {
		list, err := output(r, "List")
		if err != nil {
			return nil, err
		}
		if err := c.conn.Invoke(ctx, "/"+r.Service+"/List", opts, list); err != nil {
			return nil, fmt.Errorf("listing %s in %q: %w", r.GroupResource(), namespace, apierrors.FromError(err))
		}
		lr := list.ProtoReflect()
		items := lr.Descriptor().Fields().ByName("items")
		if items == nil || !items.IsList() || items.Message() == nil {
			return nil, fmt.Errorf("%s: %s has no repeated message field items", r.GroupResource(), lr.Descriptor().FullName())
		}
		l := lr.Get(items).List()
		for i := range l.Len() {
			obj, ok := l.Get(i).Message().Interface().(object.Object)
			if !ok {
				return nil, fmt.Errorf("%s: %s has no metadata", r.GroupResource(), items.Message().FullName())
			}
			out = append(out, obj)
		}
		meta, _ := list.(interface{ GetMetadata() *metav1.ListMeta })
		next := ""
		if meta != nil {
			next = meta.GetMetadata().GetContinue()
		}
		if next == "" {
			return out, nil
		}
		opts = &metav1.ListOptions{Namespace: namespace, Limit: pageSize, Continue: next}
	}
}

// Delete deletes one object of r (with its finalizers and grace period,
// as any delete); a NotFound is not an error.
func (c *Client) Delete(ctx context.Context, r Resource, req *metav1.DeleteRequest) error {
	out, err := output(r, "Delete")
	if err != nil {
		return err
	}
	if err := c.conn.Invoke(ctx, "/"+r.Service+"/Delete", req, out); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s/%s: %w", r.GroupResource(), req.GetNamespace(), req.GetName(), apierrors.FromError(err))
	}
	return nil
}
