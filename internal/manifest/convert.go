package manifest

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The conversions of one document value into one proto value, shared by
// both decoders (Decode over generic trees, UnmarshalJSON over JSON
// bytes) so that they accept the same values and word their refusals
// alike. Each returns the value, or the problem ("" when there is none).

// value is a document value as the conversions see it: a scalar, or only
// the kind of an object or a list (for "got an object").
type value struct {
	kind valueKind
	s    string
	i    int64
	f    float64
	b    bool
}

type valueKind uint8

const (
	nullValue valueKind = iota
	boolValue
	intValue   // a number written as an integer that fits int64
	floatValue // any other number
	stringValue
	objectValue
	listValue
)

// treeValue is the value of a generic tree node.
func treeValue(v any) value {
	switch x := v.(type) {
	case bool:
		return value{kind: boolValue, b: x}
	case int64:
		return value{kind: intValue, i: x}
	case float64:
		return value{kind: floatValue, f: x}
	case string:
		return value{kind: stringValue, s: x}
	case map[string]any:
		return value{kind: objectValue}
	case []any:
		return value{kind: listValue}
	}
	return value{kind: nullValue}
}

// describe renders a value for "got ..." messages.
func (v value) describe() string {
	switch v.kind {
	case stringValue:
		return fmt.Sprintf("string %q", v.s)
	case intValue:
		return fmt.Sprintf("integer %d", v.i)
	case floatValue:
		return "number " + strconv.FormatFloat(v.f, 'g', -1, 64)
	case boolValue:
		return fmt.Sprintf("boolean %v", v.b)
	case objectValue:
		return "an object"
	case listValue:
		return "a list"
	}
	return "null"
}

// convertIntOrString reads an IntOrString: a number (maxUnavailable: 1)
// or a string (maxSurge: 25%).
func convertIntOrString(md protoreflect.MessageDescriptor, v value) (protoreflect.Value, string) {
	var f protoreflect.FieldDescriptor
	var val protoreflect.Value
	switch v.kind {
	case intValue:
		if v.i < math.MinInt32 || v.i > math.MaxInt32 {
			return protoreflect.Value{}, fmt.Sprintf("integer %d out of range", v.i)
		}
		f, val = md.Fields().ByNumber(intValFieldNumber), protoreflect.ValueOfInt32(int32(v.i))
	case floatValue:
		if v.f != math.Trunc(v.f) || v.f < math.MinInt32 || v.f > math.MaxInt32 {
			return protoreflect.Value{}, "expected an integer or a string, got " + v.describe()
		}
		f, val = md.Fields().ByNumber(intValFieldNumber), protoreflect.ValueOfInt32(int32(v.f))
	case stringValue:
		f, val = md.Fields().ByNumber(strValFieldNumber), protoreflect.ValueOfString(v.s)
	default:
		return protoreflect.Value{}, "expected an integer or a string, got " + v.describe()
	}
	ios := newMessage(md)
	ios.Set(f, val)
	return protoreflect.ValueOfMessage(ios), ""
}

// The field numbers of IntOrString's int_val and str_val.
const (
	intValFieldNumber = 1
	strValFieldNumber = 2
)

// convertTimestamp reads an RFC 3339 time.
func convertTimestamp(v value) (protoreflect.Value, string) {
	if v.kind != stringValue {
		return protoreflect.Value{}, "expected an RFC 3339 time, got " + v.describe()
	}
	t, err := time.Parse(time.RFC3339Nano, v.s)
	if err != nil {
		return protoreflect.Value{}, fmt.Sprintf("expected an RFC 3339 time (2006-01-02T15:04:05Z), got %q", v.s)
	}
	return protoreflect.ValueOfMessage(timestamppb.New(t).ProtoReflect()), ""
}

// convertQuantity accepts a string or a number (cpu: 1, cpu: 0.5).
func convertQuantity(v value) (protoreflect.Value, string) {
	switch v.kind {
	case stringValue:
		return protoreflect.ValueOfString(v.s), ""
	case intValue:
		return protoreflect.ValueOfString(strconv.FormatInt(v.i, 10)), ""
	case floatValue:
		return protoreflect.ValueOfString(strconv.FormatFloat(v.f, 'f', -1, 64)), ""
	}
	return protoreflect.Value{}, "expected a quantity (a string such as \"500m\" or a number), got " + v.describe()
}

// convertScalar reads a value of fd's scalar kind (fd is a field, or a
// map's key or value descriptor); quantity says that a string field holds
// quantities (the option is on the field, so the caller knows it).
func convertScalar(fd protoreflect.FieldDescriptor, quantity bool, v value) (protoreflect.Value, string) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if quantity {
			return convertQuantity(v)
		}
		if v.kind == stringValue {
			return protoreflect.ValueOfString(v.s), ""
		}
	case protoreflect.BoolKind:
		if v.kind == boolValue {
			return protoreflect.ValueOfBool(v.b), ""
		}
	case protoreflect.BytesKind:
		if v.kind == stringValue {
			b, err := base64.StdEncoding.DecodeString(v.s)
			if err != nil {
				return protoreflect.Value{}, fmt.Sprintf("expected base64 data: %v", err)
			}
			return protoreflect.ValueOfBytes(b), ""
		}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		if i, ok := integer(v, math.MinInt32, math.MaxInt32); ok {
			return protoreflect.ValueOfInt32(int32(i)), ""
		}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		if i, ok := integer(v, math.MinInt64, math.MaxInt64); ok {
			return protoreflect.ValueOfInt64(i), ""
		}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		if i, ok := integer(v, 0, math.MaxUint32); ok {
			return protoreflect.ValueOfUint32(uint32(i)), ""
		}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if i, ok := integer(v, 0, math.MaxInt64); ok {
			return protoreflect.ValueOfUint64(uint64(i)), ""
		}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		switch v.kind {
		case intValue:
			return protoreflect.ValueOfFloat64(float64(v.i)), ""
		case floatValue:
			if fd.Kind() == protoreflect.FloatKind {
				return protoreflect.ValueOfFloat32(float32(v.f)), ""
			}
			return protoreflect.ValueOfFloat64(v.f), ""
		}
	case protoreflect.EnumKind:
		var ev protoreflect.EnumValueDescriptor
		switch v.kind {
		case stringValue:
			ev = fd.Enum().Values().ByName(protoreflect.Name(v.s))
		case intValue:
			ev = fd.Enum().Values().ByNumber(protoreflect.EnumNumber(v.i))
		}
		if ev != nil {
			return protoreflect.ValueOfEnum(ev.Number()), ""
		}
	}
	return protoreflect.Value{}, "expected " + kindName(fd) + ", got " + v.describe()
}

func integer(v value, lo, hi int64) (int64, bool) {
	switch v.kind {
	case intValue:
		return v.i, v.i >= lo && v.i <= hi
	case floatValue:
		if v.f != math.Trunc(v.f) || v.f < float64(lo) || v.f > float64(hi) {
			return 0, false
		}
		return int64(v.f), true
	}
	return 0, false
}

func kindName(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return "a string"
	case protoreflect.BoolKind:
		return "a boolean"
	case protoreflect.BytesKind:
		return "base64 data"
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return "a number"
	case protoreflect.EnumKind:
		return "one of the values of " + string(fd.Enum().Name())
	case protoreflect.MessageKind:
		return "an object"
	}
	return "an integer"
}

// newMessage makes a message of one of the special types.
func newMessage(md protoreflect.MessageDescriptor) protoreflect.Message {
	mt, err := protoTypes.FindMessageByName(md.FullName())
	if err != nil {
		panic(err) // the type is linked in by every kind that uses it
	}
	return mt.New()
}
