package manifest

import (
	"encoding/base64"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// MarshalJSON returns msg in Kubernetes' JSON shape; see AppendJSON.
func MarshalJSON(msg proto.Message) []byte {
	return AppendJSON(nil, msg)
}

// AppendJSON appends msg to b in Kubernetes' JSON shape, compact: the
// JSON that Encode's tree gives through encoding/json (the same fields,
// names and values; strings escaped as encoding/json escapes them), but
// written straight from the message, fields in declaration order and map
// keys sorted, so the same object always gives the same bytes.
func AppendJSON(b []byte, msg proto.Message) []byte {
	if msg == nil {
		return append(b, "{}"...)
	}
	m := msg.ProtoReflect()
	return appendMessage(b, planOf(m.Descriptor()), m)
}

func appendMessage(b []byte, p *plan, m protoreflect.Message) []byte {
	b = append(b, '{')
	first := true
	for _, f := range p.fields {
		if !m.Has(f.fd) {
			if f.emitZero {
				b = appendKey(b, f, &first)
				b = appendScalar(b, f.fd, m.Get(f.fd))
			}
			continue
		}
		v := m.Get(f.fd)
		switch {
		case f.list:
			b = appendKey(b, f, &first)
			b = appendList(b, f, v.List())
		case f.isMap:
			b = appendKey(b, f, &first)
			b = appendMap(b, f, v.Map())
		default:
			// A value that is left out (an IntOrString that holds
			// nothing) takes its key with it.
			mark, wasFirst := len(b), first
			b = appendKey(b, f, &first)
			var ok bool
			if b, ok = appendValue(b, f, v); !ok {
				b, first = b[:mark], wasFirst
			}
		}
	}
	return append(b, '}')
}

func appendKey(b []byte, f *fieldPlan, first *bool) []byte {
	if !*first {
		b = append(b, ',')
	}
	*first = false
	return append(b, f.key...)
}

func appendList(b []byte, f *fieldPlan, l protoreflect.List) []byte {
	b = append(b, '[')
	for i := 0; i < l.Len(); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendValue(b, f, l.Get(i)); !ok {
			b = append(b, "null"...)
		}
	}
	return append(b, ']')
}

func appendMap(b []byte, f *fieldPlan, mp protoreflect.Map) []byte {
	keys := make([]protoreflect.MapKey, 0, mp.Len())
	mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	if len(keys) > 1 {
		slices.SortFunc(keys, func(a, b protoreflect.MapKey) int {
			return compareStrings(a.String(), b.String())
		})
	}
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k.String())
		b = append(b, ':')
		var ok bool
		if b, ok = appendValue(b, f, mp.Get(k)); !ok {
			b = append(b, "null"...)
		}
	}
	return append(b, '}')
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// appendValue appends one value of f (an element of a list, a value of a
// map); ok is false, and nothing appended, for a value that is left out.
func appendValue(b []byte, f *fieldPlan, v protoreflect.Value) ([]byte, bool) {
	switch f.kind {
	case messageKind:
		return appendMessage(b, f.msg, v.Message()), true
	case intOrStringKind:
		m := v.Message()
		switch fd := m.WhichOneof(m.Descriptor().Oneofs().Get(0)); {
		case fd == nil:
			return b, false
		case fd.Number() == strValFieldNumber:
			return appendString(b, m.Get(fd).String()), true
		default:
			return strconv.AppendInt(b, m.Get(fd).Int(), 10), true
		}
	case timestampKind:
		return appendTime(b, timestampOf(v.Message()), f.micro), true
	case fieldsV1Kind:
		raw := v.Message().Get(v.Message().Descriptor().Fields().ByNumber(fieldsV1RawNumber)).Bytes()
		if len(raw) == 0 {
			return append(b, "{}"...), true
		}
		return appendCompact(b, raw)
	}
	return appendScalar(b, f.vd, v), true
}

// timestampOf reads a google.protobuf.Timestamp, generated or dynamic.
func timestampOf(m protoreflect.Message) time.Time {
	if ts, ok := m.Interface().(*timestamppb.Timestamp); ok {
		return time.Unix(ts.GetSeconds(), int64(ts.GetNanos()))
	}
	fds := m.Descriptor().Fields()
	return time.Unix(m.Get(fds.ByNumber(1)).Int(), m.Get(fds.ByNumber(2)).Int())
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

func appendScalar(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) []byte {
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
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return appendString(b, string(ev.Name()))
		}
		return strconv.AppendInt(b, int64(v.Enum()), 10)
	}
	return append(b, "null"...)
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
func appendString(b []byte, s string) []byte {
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
