package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/ctl/kinds"
)

// resourceRef is a kind and the names given for it (none: all).
type resourceRef struct {
	kind  *kinds.Kind
	names []string
}

// parseResources reads kubectl's resource arguments: "TYPE [NAME...]",
// "TYPE1,TYPE2" or "TYPE/NAME [TYPE/NAME...]".
func (r *root) parseResources(ctx context.Context, args []string) ([]resourceRef, error) {
	if len(args) == 0 {
		return nil, errors.New("you must specify the type of resource to get. Use \"skiffctl api-resources\" for a complete list of supported resources")
	}
	m, err := r.kinds(ctx)
	if err != nil {
		return nil, err
	}
	if strings.Contains(args[0], "/") {
		var out []resourceRef
		for _, a := range args {
			typ, name, ok := strings.Cut(a, "/")
			if !ok || typ == "" || name == "" {
				return nil, fmt.Errorf("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'skiffctl get resource/<resource_name>' instead of 'skiffctl get resource resource/<resource_name>'")
			}
			k, err := m.ForResource(typ)
			if err != nil {
				return nil, err
			}
			if n := len(out); n > 0 && out[n-1].kind == k {
				out[n-1].names = append(out[n-1].names, name)
				continue
			}
			out = append(out, resourceRef{kind: k, names: []string{name}})
		}
		return out, nil
	}
	var out []resourceRef
	for _, typ := range strings.Split(args[0], ",") {
		if typ == "" {
			continue
		}
		k, err := m.ForResource(typ)
		if err != nil {
			return nil, err
		}
		out = append(out, resourceRef{kind: k, names: args[1:]})
	}
	if len(out) > 1 && len(args) > 1 {
		return nil, errors.New("arguments in resource/name form must have a single resource and name")
	}
	return out, nil
}

// scope returns the namespace to use for kind k ("" for cluster-scoped
// kinds and for all namespaces).
func (r *root) scope(k *kinds.Kind, all bool) (string, error) {
	if !k.Namespaced || all {
		return "", nil
	}
	return r.namespace()
}

// selectObjects lists the objects of a kind matching selectors.
func (r *root) selectObjects(ctx context.Context, k *kinds.Kind, ns, labelSel, fieldSel string) ([]object.Object, string, error) {
	conn, err := r.connect()
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := r.requestContext(ctx)
	defer cancel()
	return k.Client(conn).List(ctx, listOptions(ns, labelSel, fieldSel))
}

// getObject reads one object.
func (r *root) getObject(ctx context.Context, k *kinds.Kind, ns, name string) (object.Object, error) {
	conn, err := r.connect()
	if err != nil {
		return nil, err
	}
	ctx, cancel := r.requestContext(ctx)
	defer cancel()
	return k.Client(conn).Get(ctx, ns, name)
}

// objectRef is one object named by the user (by argument, file or selector).
type objectRef struct {
	kind      *kinds.Kind
	namespace string
	name      string
}

// collect turns resource arguments, files or a selector into objects: the
// common front of delete, label, annotate, describe and scale.
func (r *root) collect(ctx context.Context, args []string, ff *fileFlags, selector string, all, allNamespaces bool) ([]objectRef, error) {
	if ff != nil && len(ff.files) > 0 {
		if len(args) > 0 {
			return nil, errors.New("resources and -f cannot be given together")
		}
		ff.validate = "false"
		ps, err := r.readManifests(ff, false)
		if err != nil {
			return nil, err
		}
		if err := r.served(ctx, ps); err != nil {
			return nil, err
		}
		out := make([]objectRef, len(ps))
		for i, p := range ps {
			out[i] = objectRef{kind: p.kind, namespace: p.namespace(), name: p.name()}
		}
		return out, nil
	}
	refs, err := r.parseResources(ctx, args)
	if err != nil {
		return nil, err
	}
	var out []objectRef
	for _, ref := range refs {
		ns, err := r.scope(ref.kind, allNamespaces)
		if err != nil {
			return nil, err
		}
		if len(ref.names) > 0 {
			if selector != "" || all {
				return nil, errors.New("name cannot be provided when a selector or --all is specified")
			}
			for _, n := range ref.names {
				out = append(out, objectRef{kind: ref.kind, namespace: ns, name: n})
			}
			continue
		}
		if selector == "" && !all {
			return nil, fmt.Errorf("resource(s) were provided, but no name was specified")
		}
		objs, _, err := r.selectObjects(ctx, ref.kind, ns, selector, "")
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out = append(out, objectRef{kind: ref.kind, namespace: o.GetMetadata().GetNamespace(), name: o.GetMetadata().GetName()})
		}
	}
	return out, nil
}

// ChunkSize is how many objects one List page carries, as kubectl's
// --chunk-size: paged lists are read from etcd at one revision.
const ChunkSize = 500

func listOptions(ns, labelSel, fieldSel string) *metav1.ListOptions {
	return &metav1.ListOptions{Namespace: ns, LabelSelector: labelSel, FieldSelector: fieldSel, Limit: ChunkSize}
}

// list is a typed list message.
type list[T object.Object] interface {
	proto.Message
	GetItems() []T
	GetMetadata() *metav1.ListMeta
}

// listAll reads every page of a typed List (kubectl's chunked list).
func listAll[T object.Object, L list[T]](ctx context.Context, r *client.Resource[T, L], o *metav1.ListOptions) ([]T, error) {
	var out []T
	for {
		l, err := r.List(ctx, o)
		if err != nil {
			return nil, err
		}
		out = append(out, l.GetItems()...)
		if l.GetMetadata().GetContinue() == "" || o.GetLimit() == 0 {
			return out, nil
		}
		o = &metav1.ListOptions{Namespace: o.Namespace, LabelSelector: o.LabelSelector, FieldSelector: o.FieldSelector, Limit: o.Limit, Continue: l.GetMetadata().GetContinue()}
	}
}
