package httpapi

import (
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/kinds"
	"skiff.dev/internal/manifest"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/patch"
)

// The managed fields of a create, remembered by the object's shape.
//
// A create through the HTTP API records its managed fields as
// kube-apiserver does: the field manager (patch.Patcher.Update, which
// runs apimachinery's) turns the object into a structured-merge-diff
// value and gives the creating manager every field set. That is the
// larger part of an HTTP create's CPU (half of the handler's), and its
// result depends on the object's shape only: which fields are there
// (object keys, map keys such as labels or a ConfigMap's data) and the
// items of lists (whose keys, or whole values for sets, name their
// fields), never on the values of scalars outside lists. So the first
// create of a shape runs the field manager, and later creates of the
// same kind and shape take its answer: one entry for their manager,
// operation Update, the kind's version, the time of the write, and the
// same fieldsV1, byte for byte (TestCreateFieldsByShape compares them
// with the field manager's). An object that brings managedFields of its
// own, or kubectl's last-applied annotation, always goes to the field
// manager, as do updates, patches and applies.

// tracked is in, the object of a create or update (name, the method),
// with its managed fields recorded for manager at now: from the shape of
// an earlier create, or by the field manager (old is the object an update
// replaces, as JSON). A failure to track is logged and the write goes on,
// as kube-apiserver's.
func (h *Handler) tracked(p *patch.Patcher, k *kinds.Kind, name string, old []byte, in proto.Message, manager string, now time.Time) (proto.Message, error) {
	shape, remember := "", false
	if name == "Create" {
		if shape, remember = shapeKey(k, in); remember && h.creates.get(shape, in, k, manager, now) {
			return in, nil
		}
	}
	next, ok, err := h.track(p, k, old, encodeJSON(in), manager, "", now)
	if err != nil {
		return nil, err
	}
	obj := k.New()
	if _, err := decodeJSON(next, obj, validationIgnore); err != nil {
		return nil, apierrors.NewInternal(err)
	}
	if remember && ok {
		h.creates.put(shape, obj, k, manager)
	}
	return obj, nil
}

// createShapesBudget bounds the shapes remembered (their keys and fields);
// past it the cache starts over.
const createShapesBudget = 16 << 20

// maxShape is the longest shape remembered: an object whose lists hold
// more is tracked by the field manager each time.
const maxShape = 64 << 10

type createShapes struct {
	mu    sync.Mutex
	m     map[string]createShape
	bytes int
	hits  int // creates answered from the cache
}

// createShape is what the creates of one shape record: the fieldsV1 of
// their manager's entry, or none (an object with nothing but the fields
// the field manager leaves out, such as metadata.name).
type createShape struct {
	fieldsV1 []byte
	none     bool
}

// shapeKey is the cache key of a create of k: the kind and the shape of
// in's JSON (manifest.AppendJSONShape, which does not write the JSON);
// ok is false when the object is not one the cache answers for.
func shapeKey(k *kinds.Kind, in proto.Message) (string, bool) {
	o, ok := in.(object.Object)
	if !ok {
		return "", false
	}
	meta := object.Meta(o)
	if meta == nil || len(meta.ManagedFields) > 0 {
		return "", false
	}
	if _, ok := meta.Annotations[lastAppliedAnnotation]; ok {
		return "", false
	}
	key := make([]byte, 0, 256)
	key = append(key, k.GVK()...)
	key = append(key, 0)
	n := len(key)
	if key, ok = manifest.AppendJSONShape(key, in); !ok {
		key, ok = manifest.AppendShapeOfJSON(key[:n], encodeJSON(in))
	}
	if !ok || len(key) > maxShape {
		return "", false
	}
	return string(key), true
}

// lastAppliedAnnotation is kubectl's client-side apply annotation, which
// the field manager reads on updates by kubectl.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// get sets in's managedFields as a create of key records them, for
// manager at now, when a create of that shape was tracked before.
func (c *createShapes) get(key string, in proto.Message, k *kinds.Kind, manager string, now time.Time) bool {
	c.mu.Lock()
	s, ok := c.m[key]
	if ok {
		c.hits++
	}
	c.mu.Unlock()
	if !ok {
		return false
	}
	// As the field manager's object: its apiVersion and kind set.
	object.SetTypeMeta(in, k.GroupVersion(), k.Kind.Kind)
	meta := object.Meta(in.(object.Object))
	if s.none {
		meta.ManagedFields = nil
		return true
	}
	meta.ManagedFields = []*metav1.ManagedFieldsEntry{{
		Manager:    manager,
		Operation:  "Update",
		ApiVersion: k.GroupVersion(),
		Time:       timestamppb.New(now.UTC().Truncate(time.Second)),
		FieldsType: "FieldsV1",
		FieldsV1:   &metav1.FieldsV1{Raw: s.fieldsV1},
	}}
	return true
}

// put remembers what the field manager recorded for a create of key by
// manager (the object as it is to be written): nothing, or one entry of
// that manager, as a create by another of that shape would get; anything
// else is not remembered.
func (c *createShapes) put(key string, tracked proto.Message, k *kinds.Kind, manager string) {
	o, ok := tracked.(object.Object)
	if !ok {
		return
	}
	var s createShape
	switch mf := object.Meta(o).GetManagedFields(); {
	case len(mf) == 0:
		s.none = true
	case len(mf) == 1 && mf[0].GetManager() == manager && mf[0].GetOperation() == "Update" &&
		mf[0].GetApiVersion() == k.GroupVersion() && mf[0].GetSubresource() == "" && mf[0].GetFieldsType() == "FieldsV1" && mf[0].GetFieldsV1() != nil:
		s.fieldsV1 = append([]byte(nil), mf[0].GetFieldsV1().GetRaw()...)
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; ok {
		return
	}
	if c.m == nil || c.bytes+len(key)+len(s.fieldsV1) > createShapesBudget {
		c.m, c.bytes = map[string]createShape{}, 0
	}
	c.m[key] = s
	c.bytes += len(key) + len(s.fieldsV1)
}
