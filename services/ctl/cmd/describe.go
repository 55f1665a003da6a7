package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/object"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/ctl/describe"
	"skiff.dev/services/ctl/kinds"
)

func (r *root) describeCmd() *cobra.Command {
	var (
		ff            fileFlags
		selector      string
		allNamespaces bool
		showEvents    bool
	)
	c := &cobra.Command{
		Use:   "describe (-f FILENAME | TYPE [NAME_PREFIX | -l label] | TYPE/NAME)",
		Short: "Show details of a specific resource or group of resources",
		Long: `Show the details of objects: their fields for people, their events, and
for a pod the timeline of its start (created, scheduled, sandbox ready,
image pulled, started, ready). A name that matches no object exactly is
taken as a prefix.`,
		Example: `  skiffctl describe pod web-7d9f8c6b5-x2x4z
  skiffctl describe deployments
  skiffctl describe nodes -l pool=blue`,
		ValidArgsFunction: completeResourceTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			objs, err := r.describeTargets(ctx, args, &ff, selector, allNamespaces)
			if err != nil {
				return err
			}
			for i, o := range objs {
				if i > 0 {
					fmt.Fprint(r.env.Out, "\n\n")
				}
				rel, err := r.related(ctx, o.obj, showEvents)
				if err != nil {
					return err
				}
				if err := describe.Describe(r.env.Out, withTypeMeta(o.kind, o.obj), rel, r.env.Now()); err != nil {
					return err
				}
			}
			return nil
		},
	}
	c.Flags().StringSliceVarP(&ff.files, "filename", "f", nil, "describe the objects of these manifests")
	c.Flags().StringVarP(&selector, "selector", "l", "", "label selector")
	c.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "across all namespaces")
	c.Flags().BoolVar(&showEvents, "show-events", true, "show the objects' events")
	return c
}

type describedObject struct {
	kind *kinds.Kind
	obj  object.Object
}

func (r *root) describeTargets(ctx context.Context, args []string, ff *fileFlags, selector string, all bool) ([]describedObject, error) {
	if len(ff.files) > 0 {
		refs, err := r.collect(ctx, args, ff, "", false, false)
		if err != nil {
			return nil, err
		}
		var out []describedObject
		for _, ref := range refs {
			o, err := r.getObject(ctx, ref.kind, ref.namespace, ref.name)
			if err != nil {
				return nil, err
			}
			out = append(out, describedObject{ref.kind, o})
		}
		return out, nil
	}
	refs, err := r.parseResources(ctx, args)
	if err != nil {
		return nil, err
	}
	var out []describedObject
	for _, ref := range refs {
		ns, err := r.scope(ref.kind, all)
		if err != nil {
			return nil, err
		}
		if len(ref.names) == 0 {
			objs, _, err := r.selectObjects(ctx, ref.kind, ns, selector, "")
			if err != nil {
				return nil, err
			}
			for _, o := range objs {
				out = append(out, describedObject{ref.kind, o})
			}
			continue
		}
		for _, name := range ref.names {
			o, err := r.getObject(ctx, ref.kind, ns, name)
			if err == nil {
				out = append(out, describedObject{ref.kind, o})
				continue
			}
			if !apierrors.IsNotFound(err) {
				return nil, err
			}
			// kubectl takes a name that matches nothing as a prefix.
			objs, _, lerr := r.selectObjects(ctx, ref.kind, ns, selector, "")
			if lerr != nil {
				return nil, lerr
			}
			found := false
			for _, o := range objs {
				if strings.HasPrefix(o.GetMetadata().GetName(), name) {
					out = append(out, describedObject{ref.kind, o})
					found = true
				}
			}
			if !found {
				return nil, err
			}
		}
	}
	return out, nil
}

// related fetches what a description shows beside the object.
func (r *root) related(ctx context.Context, obj object.Object, events bool) (describe.Related, error) {
	var rel describe.Related
	conn, err := r.connect()
	if err != nil {
		return rel, err
	}
	m := obj.GetMetadata()
	if events {
		sel := "involvedObject.name=" + m.GetName()
		if m.GetNamespace() != "" {
			sel += ",involvedObject.namespace=" + m.GetNamespace()
		}
		if m.GetUid() != "" {
			sel += ",involvedObject.uid=" + m.GetUid()
		}
		items, err := listAll(ctx, client.Events(conn), listOptions(m.GetNamespace(), "", sel))
		if err != nil {
			return rel, err
		}
		rel.Events = items
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		items, err := listAll(ctx, client.ReplicaSets(conn), listOptions(m.GetNamespace(), "", ""))
		if err != nil {
			return rel, err
		}
		for _, rs := range items {
			if controlledByUID(rs.GetMetadata().GetOwnerReferences(), o.GetMetadata().GetUid()) {
				rel.ReplicaSets = append(rel.ReplicaSets, rs)
			}
		}
	case *appsv1.ReplicaSet, *appsv1.DaemonSet, *appsv1.StatefulSet:
		items, err := listAll(ctx, client.Pods(conn), listOptions(m.GetNamespace(), "", ""))
		if err != nil {
			return rel, err
		}
		for _, p := range items {
			if controlledByUID(p.GetMetadata().GetOwnerReferences(), m.GetUid()) {
				rel.Pods = append(rel.Pods, p)
			}
		}
	case *corev1.PersistentVolumeClaim:
		// The describer keeps the pods that use the claim (Used By).
		items, err := listAll(ctx, client.Pods(conn), listOptions(m.GetNamespace(), "", ""))
		if err != nil {
			return rel, err
		}
		rel.Pods = items
	case *corev1.Service:
		items, err := listAll(ctx, client.EndpointSlices(conn), listOptions(m.GetNamespace(), "kubernetes.io/service-name="+m.GetName(), ""))
		if err != nil {
			return rel, err
		}
		rel.EndpointSlices = items
	case *corev1.Node:
		items, err := listAll(ctx, client.Pods(conn), listOptions("", "", "spec.nodeName="+m.GetName()))
		if err != nil {
			return rel, err
		}
		rel.Pods = items
	}
	return rel, nil
}

// controlledByUID reports whether refs name uid as the controller.
func controlledByUID(refs []*metav1.OwnerReference, uid string) bool {
	for _, ref := range refs {
		if ref.GetController() && ref.GetUid() == uid {
			return true
		}
	}
	return false
}
