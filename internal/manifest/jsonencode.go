package manifest

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	metav1 "skiff.dev/proto/meta/v1"
)

// MarshalJSON returns msg in Kubernetes' JSON shape; see AppendJSON.
func MarshalJSON(msg proto.Message) []byte {
	return AppendJSON(nil, msg)
}

// AppendJSON appends msg to b in Kubernetes' JSON shape, compact: the
// JSON that Encode's tree gives through encoding/json (the same fields,
// names and values; strings escaped as encoding/json escapes them), but
// written straight from the message, fields in declaration order and map
// keys sorted, so the same object always gives the same bytes. (A
// message without a generated Go struct goes through Encode, its fields
// sorted by name.)
func AppendJSON(b []byte, msg proto.Message) []byte {
	p, sv, fast := planned(msg)
	switch {
	case !fast:
		out, err := json.Marshal(Encode(msg))
		if err != nil { // a generic tree holds only JSON values
			panic(err)
		}
		return append(b, out...)
	case p == nil:
		return append(b, "{}"...)
	}
	return appendStruct(b, p, sv, nil)
}

// planned is msg's plan and generated struct, for appendStruct; fast is
// false for a message without a generated Go struct (Encode's), and p nil
// for a nil message (written {}).
func planned(msg proto.Message) (p *plan, sv reflect.Value, fast bool) {
	if msg == nil {
		return nil, sv, true
	}
	m := msg.ProtoReflect()
	p = planOf(m.Descriptor())
	v := reflect.ValueOf(m.Interface())
	if !p.fast || v.Type() != reflect.PointerTo(p.goType) {
		return nil, sv, false
	}
	if v.IsNil() {
		return nil, sv, true
	}
	return p, v.Elem(), true
}

// AppendJSONShape appends the shape of msg's JSON (AppendJSON's bytes)
// to b, as AppendShapeOfJSON makes it of those bytes, without writing
// the JSON: a scalar outside a list is one byte of its type, and
// strings are not escaped. ok is false, and b as it was, for a message
// it does not follow (one without a generated Go struct, or holding a
// managed field entry's fieldsV1): take AppendShapeOfJSON of AppendJSON's
// bytes then.
func AppendJSONShape(b []byte, msg proto.Message) (_ []byte, ok bool) {
	p, sv, fast := planned(msg)
	switch {
	case !fast:
		return b, false
	case p == nil:
		return append(b, "{}"...), true
	}
	sh := &shaper{}
	out := appendStruct(b, p, sv, sh)
	if sh.refused {
		return b, false
	}
	return out, true
}

// A shaper writes a scalar outside a list as AppendShapeOfJSON does
// (appendStruct with one writes the shape; with nil, the JSON); refused
// is set when the message holds what it does not follow.
type shaper struct{ refused bool }

// scalar is the shape of appendScalar's JSON of v.
func (*shaper) scalar(b []byte, fd protoreflect.FieldDescriptor, v reflect.Value) []byte {
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind:
		return append(b, 's')
	case protoreflect.BoolKind:
		if v.Bool() {
			return append(b, 't')
		}
		return append(b, 'f')
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return append(b, '0')
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return append(b, 'n')
		}
		return append(b, '0')
	case protoreflect.EnumKind:
		if fd.Enum().Values().ByNumber(protoreflect.EnumNumber(v.Int())) != nil {
			return append(b, 's')
		}
		return append(b, '0')
	}
	return append(b, 'n')
}

// zero is the shape of appendZero's JSON.
func (*shaper) zero(b []byte, fd protoreflect.FieldDescriptor) []byte {
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind:
		return append(b, 's')
	case protoreflect.BoolKind:
		return append(b, 'f')
	case protoreflect.EnumKind:
		if fd.Enum().Values().ByNumber(0) != nil {
			return append(b, 's')
		}
	}
	return append(b, '0')
}

// appendStruct writes the generated struct sv of plan p: its JSON, or
// with sh its shape (a list's items are written whole either way).
func appendStruct(b []byte, p *plan, sv reflect.Value, sh *shaper) []byte {
	b = append(b, '{')
	first := true
	for _, f := range p.fields {
		fv := sv.Field(f.goField)
		switch {
		case f.list:
			if fv.Len() == 0 {
				continue
			}
			b = appendKey(b, f, &first)
			b = append(b, '[')
			for i := 0; i < fv.Len(); i++ {
				if i > 0 {
					b = append(b, ',')
				}
				var ok bool
				if b, ok = appendValue(b, f, fv.Index(i), nil); !ok {
					b = append(b, "null"...)
				}
			}
			b = append(b, ']')
		case f.isMap:
			if fv.Len() == 0 {
				continue
			}
			b = appendKey(b, f, &first)
			b = appendMap(b, f, fv, sh)
		case f.kind != scalarKind:
			if fv.IsNil() {
				continue
			}
			// A value that is left out (an IntOrString that holds
			// nothing) takes its key with it.
			mark, wasFirst := len(b), first
			b = appendKey(b, f, &first)
			var ok bool
			if b, ok = appendValue(b, f, fv, sh); !ok {
				b, first = b[:mark], wasFirst
			}
		case f.optional:
			if !fv.IsNil() {
				b = appendKey(b, f, &first)
				b = appendScalarOrShape(b, f.fd, fv.Elem(), sh)
			} else if f.emitZero {
				b = appendKey(b, f, &first)
				b = appendZeroOrShape(b, f.fd, sh)
			}
		default:
			if !isZeroScalar(f.fd, fv) {
				b = appendKey(b, f, &first)
				b = appendScalarOrShape(b, f.fd, fv, sh)
			} else if f.emitZero {
				b = appendKey(b, f, &first)
				b = appendZeroOrShape(b, f.fd, sh)
			}
		}
	}
	return append(b, '}')
}

func appendScalarOrShape(b []byte, fd protoreflect.FieldDescriptor, v reflect.Value, sh *shaper) []byte {
	if sh != nil {
		return sh.scalar(b, fd, v)
	}
	return appendScalar(b, fd, v)
}

func appendZeroOrShape(b []byte, fd protoreflect.FieldDescriptor, sh *shaper) []byte {
	if sh != nil {
		return sh.zero(b, fd)
	}
	return appendZero(b, fd)
}

func appendKey(b []byte, f *fieldPlan, first *bool) []byte {
	if !*first {
		b = append(b, ',')
	}
	*first = false
	return append(b, f.key...)
}

// isZeroScalar reports whether a scalar without presence is unset: proto3
// holds such a field unset at its zero value.
func isZeroScalar(fd protoreflect.FieldDescriptor, v reflect.Value) bool {
	if fd.Kind() == protoreflect.BytesKind {
		return v.Len() == 0
	}
	return v.IsZero()
}

func appendMap(b []byte, f *fieldPlan, mv reflect.Value, sh *shaper) []byte {
	b = append(b, '{')
	if f.stringMap { // labels, annotations, data, quantities: no reflect
		mm := mv.Interface().(map[string]string)
		keys := make([]string, 0, len(mm))
		for k := range mm {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			if sh != nil {
				b = append(b, 's')
			} else {
				b = appendString(b, mm[k])
			}
		}
		return append(b, '}')
	}
	keys := mv.MapKeys()
	slices.SortFunc(keys, func(x, y reflect.Value) int {
		return strings.Compare(mapKeyString(x), mapKeyString(y))
	})
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, mapKeyString(k))
		b = append(b, ':')
		var ok bool
		if b, ok = appendValue(b, f, mv.MapIndex(k), sh); !ok {
			if sh != nil {
				b = append(b, 'n')
			} else {
				b = append(b, "null"...)
			}
		}
	}
	return append(b, '}')
}

// mapKeyString is a map key as JSON holds it (proto map keys are strings,
// integers or booleans).
func mapKeyString(k reflect.Value) string {
	switch k.Kind() {
	case reflect.String:
		return k.String()
	case reflect.Bool:
		return strconv.FormatBool(k.Bool())
	case reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(k.Uint(), 10)
	}
	return strconv.FormatInt(k.Int(), 10)
}

// appendValue appends one value of f (the field's, a list's element, a
// map's value), or with sh its shape; ok is false, and nothing appended,
// for a value that is left out.
func appendValue(b []byte, f *fieldPlan, v reflect.Value, sh *shaper) ([]byte, bool) {
	switch f.kind {
	case messageKind:
		if v.IsNil() { // a nil element of a list
			return append(b, "{}"...), true
		}
		return appendStruct(b, f.msg, v.Elem(), sh), true
	case intOrStringKind:
		switch x := v.Interface().(*metav1.IntOrString).GetValue().(type) {
		case *metav1.IntOrString_StrVal:
			if sh != nil {
				return append(b, 's'), true
			}
			return appendString(b, x.StrVal), true
		case *metav1.IntOrString_IntVal:
			if sh != nil {
				return append(b, '0'), true
			}
			return strconv.AppendInt(b, int64(x.IntVal), 10), true
		}
		return b, false
	case timestampKind:
		if sh != nil {
			return append(b, 's'), true
		}
		ts := v.Interface().(*timestamppb.Timestamp)
		return appendTime(b, time.Unix(ts.GetSeconds(), int64(ts.GetNanos())), f.micro), true
	case fieldsV1Kind:
		if sh != nil {
			sh.refused = true
			return b, true
		}
		raw := v.Interface().(*metav1.FieldsV1).GetRaw()
		if len(raw) == 0 {
			return append(b, "{}"...), true
		}
		return appendCompact(b, raw)
	}
	return appendScalarOrShape(b, f.vd, v, sh), true
}

// appendTime writes t as FormatTime does.
func appendTime(b []byte, t time.Time, micro bool) []byte {
	b = append(b, '"')
	if micro {
		b = t.UTC().AppendFormat(b, microTimeLayout)
	} else {
		b = t.UTC().AppendFormat(b, time.RFC3339)
	}
	return append(b, '"')
}

const microTimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// appendScalar writes v, a Go value of fd's scalar kind.
func appendScalar(b []byte, fd protoreflect.FieldDescriptor, v reflect.Value) []byte {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return appendString(b, v.String())
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool())
	case protoreflect.BytesKind:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v.Bytes())
		return append(b, '"')
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.AppendInt(b, v.Int(), 10)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.AppendUint(b, v.Uint(), 10)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return appendFloat(b, v.Float())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(protoreflect.EnumNumber(v.Int())); ev != nil {
			return appendString(b, string(ev.Name()))
		}
		return strconv.AppendInt(b, v.Int(), 10)
	}
	return append(b, "null"...)
}

// appendZero writes the zero value of fd's scalar kind.
func appendZero(b []byte, fd protoreflect.FieldDescriptor) []byte {
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind:
		return append(b, `""`...)
	case protoreflect.BoolKind:
		return append(b, "false"...)
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(0); ev != nil {
			return appendString(b, string(ev.Name()))
		}
	}
	return append(b, '0')
}

// appendFloat writes f as encoding/json writes a float64 (Encode's trees
// hold float32 fields as float64 too); NaN and infinities, which JSON
// cannot hold, as null.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendString writes s as a JSON string escaped as encoding/json does
// by default (and Kubernetes' apiserver, which uses it): <, > and & as
// \u003c..., U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte { return AppendJSONString(b, s) }

// AppendJSONString appends s as a JSON string, as this codec writes
// strings (the apiserver's audit log writes its own with it).
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// htmlSafe marks the ASCII bytes written as they are.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()
