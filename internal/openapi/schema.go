package openapi

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

	"skiff.dev/internal/kfields"
	"skiff.dev/internal/object"
)

// schemas are the schemas of one document: Swagger 2.0 definitions or
// OpenAPI 3.0 components, by name. The two differ in where a reference
// points, how a reference carries a description, and how the types with
// two JSON forms (quantities, IntOrString) are written.
type schemas struct {
	v3    bool
	defs  map[string]map[string]any
	owner map[string]protoreflect.FullName // schema name -> the message it was made from
}

func newSchemas(v3 bool) *schemas {
	return &schemas{v3: v3, defs: map[string]map[string]any{}, owner: map[string]protoreflect.FullName{}}
}

func (s *schemas) ref(name string) map[string]any {
	if s.v3 {
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{"$ref": "#/definitions/" + name}
}

// with adds extra keys (a description, extensions) to a field's schema.
// Beside a reference, Swagger 2.0 documents keep them next to the $ref
// (as kube-apiserver writes them) and OpenAPI 3.0 ones wrap the reference
// in allOf.
func (s *schemas) with(sch map[string]any, extra map[string]any) map[string]any {
	if len(extra) == 0 {
		return sch
	}
	if _, isRef := sch["$ref"]; isRef && s.v3 {
		sch = map[string]any{"allOf": []any{sch}}
	}
	for k, v := range extra {
		sch[k] = v
	}
	return sch
}

// gvk is one x-kubernetes-group-version-kind entry.
type gvk struct{ group, version, kind string }

func (g gvk) value() map[string]any {
	return map[string]any{"group": g.group, "version": g.version, "kind": g.kind}
}

// kind adds md's schema (and those it refers to) as the schema of a kind,
// with its x-kubernetes-group-version-kind.
func (s *schemas) kind(md protoreflect.MessageDescriptor, g gvk) (string, error) {
	name, err := s.message(md)
	if err != nil {
		return "", err
	}
	def := s.defs[name]
	list, _ := def["x-kubernetes-group-version-kind"].([]any)
	for _, e := range list {
		if e.(map[string]any)["kind"] == g.kind && e.(map[string]any)["group"] == g.group && e.(map[string]any)["version"] == g.version {
			return name, nil
		}
	}
	def["x-kubernetes-group-version-kind"] = append(list, g.value())
	return name, nil
}

// message adds md's schema, and those of the messages its fields hold,
// and returns its name.
func (s *schemas) message(md protoreflect.MessageDescriptor) (string, error) {
	name, err := schemaName(md)
	if err != nil {
		return "", err
	}
	if owner, done := s.owner[name]; done {
		if owner != md.FullName() {
			return "", fmt.Errorf("messages %s and %s are both named %s", owner, md.FullName(), name)
		}
		return name, nil
	}
	s.owner[name] = md.FullName()
	def := map[string]any{"type": "object"}
	s.defs[name] = def // before the fields: messages refer to themselves
	ktype, _ := kfields.ForMessage(string(md.FullName()))
	if d := kfields.Doc(ktype, ""); d != "" {
		def["description"] = d
	}
	if st := structTypes[ktype]; st != "" {
		def["x-kubernetes-map-type"] = st
	}
	props := map[string]any{}
	fds := md.Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		sch, err := s.field(fd)
		if err != nil {
			return "", fmt.Errorf("%s: %w", fd.FullName(), err)
		}
		json := fd.JSONName()
		extra := map[string]any{}
		if d := kfields.Doc(ktype, json); d != "" {
			extra["description"] = d
		}
		if strategy, key := kfields.PatchStrategy(ktype, json); strategy != "" || key != "" {
			if strategy != "" {
				extra["x-kubernetes-patch-strategy"] = strategy
			}
			if key != "" {
				extra["x-kubernetes-patch-merge-key"] = key
			}
		}
		if err := markerExtensions(fd, fieldMarkers[ktype+"."+json], extra); err != nil {
			return "", fmt.Errorf("%s: %w", fd.FullName(), err)
		}
		props[json] = s.with(sch, extra)
	}
	if len(props) > 0 {
		def["properties"] = props
	}
	return name, nil
}

// field is the schema of fd's value: an array for a list, an object of
// additionalProperties for a map.
func (s *schemas) field(fd protoreflect.FieldDescriptor) (map[string]any, error) {
	quantity, micro := object.Quantity(fd), object.MicroTime(fd)
	switch {
	case fd.IsMap():
		v, err := s.value(fd.MapValue(), quantity, micro)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": v}, nil
	case fd.IsList():
		v, err := s.value(fd, quantity, micro)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": v}, nil
	}
	return s.value(fd, quantity, micro)
}

// markerExtensions adds to extra the extensions Kubernetes' OpenAPI
// writes for a field's markers (markers.go): x-kubernetes-list-type and
// x-kubernetes-list-map-keys on a list, x-kubernetes-map-type on a map or
// a message, and the default. A marker that does not fit the Skiff field
// (a list marker on a field that is not a list) is left out.
func markerExtensions(fd protoreflect.FieldDescriptor, m fieldMarker, extra map[string]any) error {
	if fd.IsList() && m.listType != "" {
		extra["x-kubernetes-list-type"] = m.listType
		if m.listType == "map" {
			keys := make([]any, len(m.listMapKeys))
			for i, k := range m.listMapKeys {
				keys[i] = k
			}
			extra["x-kubernetes-list-map-keys"] = keys
		}
	}
	if m.mapType != "" && (fd.IsMap() || (!fd.IsList() && fd.Message() != nil)) {
		extra["x-kubernetes-map-type"] = m.mapType
	}
	if m.def != "" && !fd.IsList() && !fd.IsMap() {
		var v any
		if err := json.Unmarshal([]byte(m.def), &v); err != nil {
			return fmt.Errorf("default %s: %w", m.def, err)
		}
		extra["default"] = v
	}
	return nil
}

// value is the schema of one value of fd (an element of a list, a value
// of a map), as Skiff's JSON codec writes it.
func (s *schemas) value(fd protoreflect.FieldDescriptor, quantity, micro bool) (map[string]any, error) {
	if md := fd.Message(); md != nil {
		switch md.FullName() {
		case protoIntOrString:
			return s.scalar(intOrStringName), nil
		case protoFieldsV1:
			return s.scalar(fieldsV1Name), nil
		case protoTimestamp:
			if micro {
				return s.scalar(microTimeName), nil
			}
			return s.scalar(timeName), nil
		}
		name, err := s.message(md)
		if err != nil {
			return nil, err
		}
		return s.ref(name), nil
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		if quantity {
			return s.scalar(quantityName), nil
		}
		return map[string]any{"type": "string"}, nil
	case protoreflect.BoolKind:
		return map[string]any{"type": "boolean"}, nil
	case protoreflect.BytesKind:
		return map[string]any{"type": "string", "format": "byte"}, nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return map[string]any{"type": "integer", "format": "int32"}, nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return map[string]any{"type": "integer", "format": "int64"}, nil
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return map[string]any{"type": "number", "format": "double"}, nil
	case protoreflect.EnumKind:
		var names []any
		vals := fd.Enum().Values()
		for i := range vals.Len() {
			names = append(names, string(vals.Get(i).Name()))
		}
		return map[string]any{"type": "string", "enum": names}, nil
	}
	return nil, fmt.Errorf("no schema for a field of kind %s", fd.Kind())
}

// scalar refers to one of the schemas of Kubernetes' types with their own
// JSON form, adding it on first use.
func (s *schemas) scalar(name string) map[string]any {
	if _, done := s.defs[name]; !done {
		s.defs[name] = s.scalarSchema(name)
	}
	return s.ref(name)
}

func (s *schemas) scalarSchema(name string) map[string]any {
	switch name {
	case quantityName:
		d := map[string]any{"description": "Quantity is a fixed-point representation of a number, written as a string: \"128Mi\", \"500m\", \"1.5\", \"2e3\". Manifests may write whole and decimal numbers as JSON numbers."}
		if s.v3 {
			d["oneOf"] = []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}
		} else {
			d["type"] = "string"
		}
		return d
	case intOrStringName:
		d := map[string]any{
			"description": "IntOrString is a type that can hold an int32 or a string. When used in JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type. This allows you to have, for example, a JSON field that can accept a name or number.",
			"format":      "int-or-string",
		}
		if s.v3 {
			d["oneOf"] = []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}
		} else {
			d["type"] = "string"
		}
		return d
	case fieldsV1Name:
		return map[string]any{"type": "object", "description": "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.\n\nEach key is either a '.' representing the field itself, and will always map to an empty set, or a string representing a sub-field or item. The string will follow one of these four formats: 'f:<name>', where <name> is the name of a field in a struct, or key in a map 'v:<value>', where <value> is the exact json formatted value of a list item 'i:<index>', where <index> is position of a item in a list 'k:<keys>', where <keys> is a map of  a list item's key fields to their unique values If a key maps to an empty Fields value, the field that key represents is part of the set.\n\nThe exact format is defined in sigs.k8s.io/structured-merge-diff"}
	case microTimeName:
		return map[string]any{"type": "string", "format": "date-time", "description": "MicroTime is version of Time with microsecond level precision."}
	default: // timeName
		return map[string]any{"type": "string", "format": "date-time", "description": "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON. Wrappers are provided for many of the factory methods that the time package offers."}
	}
}

// patchSchema is Kubernetes' meta/v1 Patch, the body of PATCH requests.
func (s *schemas) patchSchema() map[string]any {
	const name = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
	if _, done := s.defs[name]; !done {
		s.defs[name] = map[string]any{"type": "object", "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."}
	}
	return s.ref(name)
}
