package manifest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/object"
)

// Kubernetes prints some scalar fields even at their zero value (they are
// not omitempty there: option (skiff.meta.v1.emit_zero), object.EmitZero),
// and MicroTime fields with microseconds (option skiff.meta.v1.micro_time,
// object.MicroTime); other timestamps are whole seconds (metav1.Time).

// Encode returns msg as a generic tree in Kubernetes' shape: JSON field
// names, zero values omitted (but fields with explicit presence and set
// messages, such as emptyDir: {}), quantities and IntOrString as written,
// timestamps in RFC 3339 (UTC).
func Encode(msg proto.Message) map[string]any {
	if msg == nil {
		return map[string]any{}
	}
	return encodeMessage(msg.ProtoReflect())
}

func encodeMessage(m protoreflect.Message) map[string]any {
	out := map[string]any{}
	fds := m.Descriptor().Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		name := fd.JSONName()
		if !m.Has(fd) {
			if object.EmitZero(fd) && !fd.IsList() && !fd.IsMap() && fd.Message() == nil {
				out[name] = encodeScalar(fd, m.Get(fd))
			}
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			items := make([]any, 0, l.Len())
			for j := 0; j < l.Len(); j++ {
				items = append(items, encodeValue(fd, l.Get(j)))
			}
			out[name] = items
		case fd.IsMap():
			mm := map[string]any{}
			vd := fd.MapValue()
			v.Map().Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
				mm[k.String()] = encodeValue(vd, e)
				return true
			})
			out[name] = mm
		default:
			if e := encodeValue(fd, v); e != nil {
				out[name] = e
			}
		}
	}
	return out
}

// encodeValue encodes one value of fd (an element, for lists and maps).
func encodeValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	if md := fd.Message(); md != nil {
		switch md.FullName() {
		case intOrStringName:
			m := v.Message()
			if f := md.Fields().ByName("str_val"); m.Has(f) {
				return m.Get(f).String()
			}
			if f := md.Fields().ByName("int_val"); m.Has(f) {
				return m.Get(f).Int()
			}
			return nil
		case timestampName:
			ts := &timestamppb.Timestamp{}
			proto.Merge(ts, v.Message().Interface())
			return FormatTime(ts.AsTime(), object.MicroTime(fd))
		case fieldsV1Name:
			return fieldsV1Tree(v.Message().Get(md.Fields().ByName("raw")).Bytes())
		}
		return encodeMessage(v.Message())
	}
	return encodeScalar(fd, v)
}

// FormatTime renders t as Kubernetes does: RFC 3339 in UTC, whole seconds
// (or microseconds for MicroTime fields).
func FormatTime(t time.Time, micro bool) string {
	if micro {
		return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
	}
	return t.UTC().Format(time.RFC3339)
}

func encodeScalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return v.Int()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return int64(v.Uint())
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return v.Float()
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return int64(v.Enum())
	}
	return nil
}

// fieldsV1Tree is the JSON value a FieldsV1 holds as a generic tree: {}
// when it holds nothing, nil (the field left out) when its bytes are not
// JSON.
func fieldsV1Tree(raw []byte) any {
	if len(raw) == 0 {
		return map[string]any{}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return nil
	}
	tree, err := fromJSON(v)
	if err != nil {
		return nil
	}
	return tree
}
