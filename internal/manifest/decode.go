package manifest

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"skiff.dev/internal/kfields"
	"skiff.dev/internal/object"
)

// DecodeOptions adjust Decode.
type DecodeOptions struct {
	// AllowUnknown ignores fields that neither Skiff's kind nor
	// Kubernetes' has (--validate=false) instead of refusing them. A field
	// Kubernetes has but Skiff does not is refused all the same, but in
	// the kind's status (which the server ignores).
	AllowUnknown bool
}

// notSupported is the error of a field Kubernetes has but Skiff does not.
const notSupported = "field is not supported by Skiff (see docs/fields.md)"

// Full names of the messages the codec treats as scalars.
const (
	intOrStringName = "skiff.meta.v1.IntOrString"
	timestampName   = "google.protobuf.Timestamp"
	// A FieldsV1 (managedFields[].fieldsV1) is the JSON object its raw
	// bytes hold, as Kubernetes' FieldsV1 is; raw is that object compact.
	fieldsV1Name = "skiff.meta.v1.FieldsV1"
)

// A field of quantities (a string or map of strings, declared with the
// proto option (skiff.meta.v1.quantity): object.Quantity) takes numbers in
// manifests (cpu: 1, pods: 10).

var protoTypes = protoregistry.GlobalTypes

// fieldIndex maps JSON names to fields, per message type.
type fieldIndex struct {
	byJSON map[string]protoreflect.FieldDescriptor
	names  []string // sorted JSON names, for suggestions
}

var indexes sync.Map // protoreflect.FullName -> *fieldIndex

func indexOf(md protoreflect.MessageDescriptor) *fieldIndex {
	if fi, ok := indexes.Load(md.FullName()); ok {
		return fi.(*fieldIndex)
	}
	fi := &fieldIndex{byJSON: map[string]protoreflect.FieldDescriptor{}}
	fds := md.Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		fi.byJSON[fd.JSONName()] = fd
		fi.names = append(fi.names, fd.JSONName())
	}
	sort.Strings(fi.names)
	indexes.Store(md.FullName(), fi)
	return fi
}

// Decode sets msg from a generic tree. It reports every problem it finds
// (unknown fields, fields Skiff does not support, values of the wrong
// type) as Errors, each with its field path; msg is then partly set and
// should not be used.
//
// Beside msg's descriptor the decoder walks the Kubernetes type of the same
// package and name (package kfields), when Kubernetes has one, to tell a
// field Skiff does not support from a field nobody has.
func Decode(obj map[string]any, msg proto.Message, o DecodeOptions) error {
	d := &decoder{opts: o}
	m := msg.ProtoReflect()
	ktype, _ := kfields.ForMessage(string(m.Descriptor().FullName()))
	d.message("", obj, m, ktype)
	if len(d.errs) > 0 {
		return d.errs
	}
	return nil
}

type decoder struct {
	opts DecodeOptions
	errs Errors
}

func (d *decoder) fail(path, format string, args ...any) {
	d.failAs(ErrorInvalid, path, format, args...)
}

func (d *decoder) failAs(t ErrorType, path, format string, args ...any) {
	d.errs = append(d.errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...), Type: t})
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// message decodes obj into m. ktype is the Kubernetes type at the same
// place ("core/v1.PodSpec"), or "" where Kubernetes has none or its type
// is not followed.
func (d *decoder) message(path string, obj map[string]any, m protoreflect.Message, ktype string) {
	fi := indexOf(m.Descriptor())
	for _, k := range sortedKeys(obj) {
		v := obj[k]
		fd, ok := fi.byJSON[k]
		p := join(path, k)
		if !ok {
			d.missing(p, k, v, fi, ktype)
			continue
		}
		kchild, _ := kfields.Field(ktype, k)
		if v == nil {
			continue // null is absent, as in Kubernetes
		}
		switch {
		case fd.IsList():
			d.list(p, fd, v, m, kchild)
		case fd.IsMap():
			d.mapField(p, fd, v, m, kchild)
		case fd.Message() != nil:
			if val, ok := d.special(p, fd.Message(), v); ok {
				if val.IsValid() {
					m.Set(fd, val)
				}
				continue
			}
			sub, ok := v.(map[string]any)
			if !ok {
				d.fail(p, "expected an object, got %s", describe(v))
				continue
			}
			d.message(p, sub, m.Mutable(fd).Message(), kchild)
		default:
			if val, ok := d.scalar(p, fd, v); ok {
				m.Set(fd, val)
			}
		}
	}
}

// missing reports the key k, which m's message (fi) does not have: a field
// of Kubernetes' type is not supported (refused whatever the options, but
// in a kind's status, which the server ignores, or when its value is
// empty); any other is unknown.
func (d *decoder) missing(path, k string, v any, fi *fieldIndex, ktype string) {
	if _, ok := kfields.Field(ktype, k); ok {
		if !isEmpty(v) && (!d.opts.AllowUnknown || !inStatus(path)) {
			d.failAs(ErrorNotSupported, path, notSupported)
		}
		return
	}
	if d.opts.AllowUnknown {
		return
	}
	// Suggest among Skiff's fields and Kubernetes' (saying which), so that
	// a typo of a field Skiff lacks is not sent to another field.
	kubernetesOnly := map[string]bool{}
	candidates := fi.names
	for _, name := range kfields.Fields(ktype) {
		if _, ok := fi.byJSON[name]; !ok {
			kubernetesOnly[name] = true
			candidates = append(candidates[:len(candidates):len(candidates)], name)
		}
	}
	switch s := Suggest(k, candidates); {
	case s == "":
		d.failAs(ErrorUnknown, path, "unknown field")
	case kubernetesOnly[s]:
		d.failAs(ErrorUnknown, path, "unknown field, did you mean %q? (not supported by Skiff)", s)
	default:
		d.failAs(ErrorUnknown, path, "unknown field, did you mean %q?", s)
	}
}

// isEmpty reports whether v is an empty value (null, {}, [], ""): what
// kubectl and client-go write for a field they do not set
// ("creationTimestamp": null, "status": {}, "resources": {}), accepted and
// dropped for a field Skiff does not support. 0 and false are values:
// every scalar field Kubernetes has and Skiff lacks is omitempty, so its
// clients send 0 or false only from a pointer set on purpose (hostUsers:
// false asks for a user namespace; dropping it would run the pod without).
func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	}
	return false
}

// inStatus reports whether the path is in the status of the decoded
// object.
func inStatus(path string) bool {
	return path == "status" || strings.HasPrefix(path, "status.")
}

func (d *decoder) list(path string, fd protoreflect.FieldDescriptor, v any, m protoreflect.Message, ktype string) {
	items, ok := v.([]any)
	if !ok {
		d.fail(path, "expected a list, got %s", describe(v))
		return
	}
	l := m.Mutable(fd).List()
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		if fd.Message() != nil {
			if val, ok := d.special(p, fd.Message(), it); ok {
				if val.IsValid() {
					l.Append(val)
				}
				continue
			}
			sub, ok := it.(map[string]any)
			if !ok {
				d.fail(p, "expected an object, got %s", describe(it))
				continue
			}
			e := l.NewElement()
			d.message(p, sub, e.Message(), ktype)
			l.Append(e)
			continue
		}
		if it == nil {
			d.fail(p, "expected %s, got null", kindName(fd))
			continue
		}
		if val, ok := d.scalar(p, fd, it); ok {
			l.Append(val)
		}
	}
	if l.Len() == 0 {
		m.Clear(fd)
	}
}

func (d *decoder) mapField(path string, fd protoreflect.FieldDescriptor, v any, m protoreflect.Message, ktype string) {
	entries, ok := v.(map[string]any)
	if !ok {
		d.fail(path, "expected an object, got %s", describe(v))
		return
	}
	mp := m.Mutable(fd).Map()
	kd, vd := fd.MapKey(), fd.MapValue()
	quantity := object.Quantity(fd)
	for _, k := range sortedKeys(entries) {
		p := path + "[" + k + "]"
		key, ok := d.scalar(p, kd, k)
		if !ok {
			continue
		}
		e := entries[k]
		if e == nil {
			continue
		}
		if vd.Message() != nil {
			if val, ok := d.special(p, vd.Message(), e); ok {
				if val.IsValid() {
					mp.Set(key.MapKey(), val)
				}
				continue
			}
			sub, ok := e.(map[string]any)
			if !ok {
				d.fail(p, "expected an object, got %s", describe(e))
				continue
			}
			val := mp.NewValue()
			d.message(p, sub, val.Message(), ktype)
			mp.Set(key.MapKey(), val)
			continue
		}
		var val protoreflect.Value
		if quantity {
			val, ok = d.quantity(p, e)
		} else {
			val, ok = d.scalar(p, vd, e)
		}
		if ok {
			mp.Set(key.MapKey(), val)
		}
	}
	if mp.Len() == 0 {
		m.Clear(fd)
	}
}

// special decodes the messages written as scalars. ok is false for other
// messages; the value is invalid when the input was wrong (reported).
func (d *decoder) special(path string, md protoreflect.MessageDescriptor, v any) (protoreflect.Value, bool) {
	var val protoreflect.Value
	var msg string
	switch md.FullName() {
	case intOrStringName:
		val, msg = convertIntOrString(md, treeValue(v))
	case timestampName:
		val, msg = convertTimestamp(treeValue(v))
	case fieldsV1Name:
		obj, ok := v.(map[string]any)
		if !ok {
			msg = "expected an object, got " + describe(v)
			break
		}
		raw := strings.TrimSuffix(CompactJSON(obj), "\n")
		fv := newMessage(md)
		fv.Set(md.Fields().ByNumber(fieldsV1RawNumber), protoreflect.ValueOfBytes([]byte(raw)))
		val = protoreflect.ValueOfMessage(fv)
	default:
		return protoreflect.Value{}, false
	}
	if msg != "" {
		d.fail(path, "%s", msg)
	}
	return val, true
}

// fieldsV1RawNumber is the field number of FieldsV1's raw.
const fieldsV1RawNumber = 1

// quantity accepts a string or a number (cpu: 1, cpu: 0.5).
func (d *decoder) quantity(path string, v any) (protoreflect.Value, bool) {
	val, msg := convertQuantity(treeValue(v))
	return d.check(path, val, msg)
}

func (d *decoder) scalar(path string, fd protoreflect.FieldDescriptor, v any) (protoreflect.Value, bool) {
	quantity := fd.Kind() == protoreflect.StringKind && object.Quantity(fd)
	val, msg := convertScalar(fd, quantity, treeValue(v))
	return d.check(path, val, msg)
}

// check reports a conversion's problem at path.
func (d *decoder) check(path string, v protoreflect.Value, msg string) (protoreflect.Value, bool) {
	if msg != "" {
		d.fail(path, "%s", msg)
		return protoreflect.Value{}, false
	}
	return v, true
}

// describe renders a tree value for "got ..." messages.
func describe(v any) string { return treeValue(v).describe() }
