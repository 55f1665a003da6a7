package kinds

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"skiff.dev/internal/object"
)

// selectable is one declared field selector: its name and the fields of
// its path, from the object down.
type selectable struct {
	name string
	path []protoreflect.FieldDescriptor
}

// selectables resolves k's declared field selectors against its message:
// each path element is a field's JSON name (or proto name); the last a
// scalar. A typo fails here, when the kinds load.
func selectables(k *Kind) ([]selectable, error) {
	var out []selectable
	root := k.newObj().ProtoReflect().Descriptor()
	for _, fs := range k.Kind.FieldSelectors {
		name, path, ok := strings.Cut(fs, "=")
		if !ok {
			path = name
		}
		md := root
		var fds []protoreflect.FieldDescriptor
		parts := strings.Split(path, ".")
		for i, part := range parts {
			if md == nil {
				return nil, fmt.Errorf("field selector %q: %s is not a message", fs, strings.Join(parts[:i], "."))
			}
			fd := fieldNamed(md, part)
			if fd == nil || fd.IsList() || fd.IsMap() {
				return nil, fmt.Errorf("field selector %q: %s has no single field %q", fs, md.FullName(), part)
			}
			fds = append(fds, fd)
			md = fd.Message()
		}
		if md != nil {
			return nil, fmt.Errorf("field selector %q: ends at a message, not a value", fs)
		}
		out = append(out, selectable{name: name, path: fds})
	}
	return out, nil
}

// FieldSelectors are the fields List and Watch may select on:
// metadata.name, metadata.namespace for a namespaced kind, and the
// declared ones.
func (k *Kind) FieldSelectors() []string {
	fs := []string{"metadata.name"}
	if k.Namespaced {
		fs = append(fs, "metadata.namespace")
	}
	for _, s := range k.fields {
		fs = append(fs, s.name)
	}
	return fs
}

// Fields returns obj's declared selectable fields (not metadata's) as a
// field selector sees them: strings, numbers in decimal, booleans as
// true/false, "" for a field not set. Nil when the kind declares none.
func (k *Kind) Fields(obj object.Object) map[string]string {
	if len(k.fields) == 0 {
		return nil
	}
	m := obj.ProtoReflect()
	out := make(map[string]string, len(k.fields))
	for _, s := range k.fields {
		out[s.name] = valueAt(m, s.path)
	}
	return out
}

func valueAt(m protoreflect.Message, path []protoreflect.FieldDescriptor) string {
	for _, fd := range path[:len(path)-1] {
		if !m.Has(fd) {
			return ""
		}
		m = m.Get(fd).Message()
	}
	fd := path[len(path)-1]
	v := m.Get(fd)
	switch fd.Kind() {
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.BoolKind:
		return strconv.FormatBool(v.Bool())
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sint32Kind, protoreflect.Sint64Kind, protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind:
		return strconv.FormatInt(v.Int(), 10)
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return strconv.FormatUint(v.Uint(), 10)
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return strconv.Itoa(int(v.Enum()))
	}
	return v.String()
}

// fieldNamed is md's field of JSON name, proto name, or JSON name but for
// case (Kubernetes' "podIP" is proto's "podIp").
func fieldNamed(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	fs := md.Fields()
	if fd := fs.ByJSONName(name); fd != nil {
		return fd
	}
	if fd := fs.ByName(protoreflect.Name(name)); fd != nil {
		return fd
	}
	for i := range fs.Len() {
		if strings.EqualFold(fs.Get(i).JSONName(), name) {
			return fs.Get(i)
		}
	}
	return nil
}
