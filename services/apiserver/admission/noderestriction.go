package admission

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	corev1 "skiff.dev/proto/core/v1"
)

// NodeRestrictionName is the plugin's flag name.
const NodeRestrictionName = "NodeRestriction"

// nodeRestriction limits what a node (user system:node:<name> in group
// system:nodes) may change in the objects the node authorizer lets it
// write, as Kubernetes' NodeRestriction plugin does.
//
// The authorizer decides which objects: a node writes only its own Node
// and Lease, only the status of pods bound to it (an update of the status
// subresource keeps the pod's spec and metadata) and only the persistent
// volumes whose nodeAffinity names it. This plugin decides what may change
// in them, for what the authorizer cannot see (it sees the request, not
// the object):
//
//	persistentvolumes  an update may only remove finalizers (the agent
//	                   removes skiff.dev/local-path-volume once it has
//	                   deleted the volume's directory): every other field,
//	                   status included, stays as it is, and no finalizer
//	                   is added
//
// Like Kubernetes', it runs among the mutating plugins, before the kind's
// validation, so that a node's forbidden change is refused as forbidden
// rather than judged as a change anyone might make.
type nodeRestriction struct{}

func newNodeRestriction(*Deps) (any, error) { return nodeRestriction{}, nil }

func (nodeRestriction) Admit(_ context.Context, a *Attributes) error {
	node := a.User.NodeName()
	if node == "" || a.Operation != Update || a.Kind.GVK.Group != "" || a.Kind.Resource != "persistentvolumes" {
		return nil
	}
	cur, ok1 := a.Object.(*corev1.PersistentVolume)
	old, ok2 := a.OldObject.(*corev1.PersistentVolume)
	if !ok1 || !ok2 {
		return nil
	}
	if added := addedFinalizers(old.GetMetadata().GetFinalizers(), cur.GetMetadata().GetFinalizers()); len(added) > 0 {
		return a.Forbidden("node %q is not allowed to add finalizers: %s", node, strings.Join(added, ", "))
	}
	if changed := changedFields(withoutFinalizers(old), withoutFinalizers(cur)); len(changed) > 0 {
		return a.Forbidden("node %q is not allowed to modify persistentvolume fields other than metadata.finalizers: %s", node, strings.Join(changed, ", "))
	}
	return nil
}

// addedFinalizers are the finalizers of cur that old does not have.
func addedFinalizers(old, cur []string) []string {
	var out []string
	for _, f := range cur {
		if !slices.Contains(old, f) && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// withoutFinalizers is a copy of pv without what a node may change
// (finalizers) and what the server sets (resourceVersion, generation:
// a change of the spec is named as such).
func withoutFinalizers(pv *corev1.PersistentVolume) *corev1.PersistentVolume {
	c := proto.Clone(pv).(*corev1.PersistentVolume)
	if c.Metadata != nil {
		c.Metadata.Finalizers = nil
		c.Metadata.ResourceVersion = ""
		c.Metadata.Generation = 0
	}
	return c
}

// changedFields names the fields that differ between old and cur, two
// levels deep ("spec.claimRef", "metadata.labels"), by their JSON names.
func changedFields(old, cur proto.Message) []string {
	var out []string
	var walk func(prefix string, o, c protoreflect.Message, depth int)
	walk = func(prefix string, o, c protoreflect.Message, depth int) {
		fields := o.Descriptor().Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			ov, cv := o.Get(fd), c.Get(fd)
			if o.Has(fd) == c.Has(fd) && (!o.Has(fd) || ov.Equal(cv)) {
				continue
			}
			name := prefix + fd.JSONName()
			if depth > 1 && fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap() {
				before := len(out)
				walk(name+".", ov.Message(), cv.Message(), depth-1)
				if len(out) > before {
					continue
				}
			}
			out = append(out, name)
		}
	}
	walk("", old.ProtoReflect(), cur.ProtoReflect(), 2)
	return out
}
