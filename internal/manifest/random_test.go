package manifest

import (
	"math/rand/v2"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// randomStrings are the strings random objects hold: JSON escapes, HTML
// characters encoding/json escapes, line and paragraph separators,
// multi-byte and invalid UTF-8, and quantities.
var randomStrings = []string{
	"", "web", "nginx:1.25", "500m", "128Mi", "25%",
	`quote" and back\slash`, "<script>&amp;</script>", "line\nbreak\ttab\r",
	"ünïcødé 日本語 🚀", "sep\u2028arators\u2029", "ctrl\x01\x1f\x7f", "bad \xff utf-8 \xc3",
}

// randomObject fills msg's every field, recursively, with random values
// (each field set with probability fill): every special type (quantities,
// int-or-string, timestamps of both precisions, fieldsV1, bytes, maps)
// in every place the kinds use it.
func randomObject(r *rand.Rand, msg proto.Message, fill float64) proto.Message {
	randomMessage(r, msg.ProtoReflect(), fill, 0)
	return msg
}

func randomMessage(r *rand.Rand, m protoreflect.Message, fill float64, depth int) {
	fds := m.Descriptor().Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		if r.Float64() > fill || depth > 12 {
			continue
		}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && m.WhichOneof(od) != nil {
			continue
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for n := r.IntN(4); n > 0; n-- {
				if fd.Message() != nil && special(fd.Message()) == "" {
					e := l.NewElement()
					randomMessage(r, e.Message(), fill, depth+1)
					l.Append(e)
					continue
				}
				l.Append(randomValue(r, fd, m, fill, depth))
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for n := r.IntN(4); n > 0; n-- {
				k := protoreflect.ValueOfString(randomStrings[r.IntN(len(randomStrings))] + strconv.Itoa(r.IntN(3))).MapKey()
				vd := fd.MapValue()
				if vd.Message() != nil && special(vd.Message()) == "" {
					v := mp.NewValue()
					randomMessage(r, v.Message(), fill, depth+1)
					mp.Set(k, v)
					continue
				}
				mp.Set(k, randomValue(r, vd, m, fill, depth))
			}
		case fd.Message() != nil && special(fd.Message()) == "":
			randomMessage(r, m.Mutable(fd).Message(), fill, depth+1)
		default:
			m.Set(fd, randomValue(r, fd, m, fill, depth))
		}
	}
}

func special(md protoreflect.MessageDescriptor) protoreflect.FullName {
	switch n := md.FullName(); n {
	case intOrStringName, timestampName, fieldsV1Name:
		return n
	}
	return ""
}

// randomValue is a value of fd (a field, or a map's value descriptor).
func randomValue(r *rand.Rand, fd protoreflect.FieldDescriptor, parent protoreflect.Message, fill float64, depth int) protoreflect.Value {
	if md := fd.Message(); md != nil {
		switch md.FullName() {
		case intOrStringName:
			m := newMessage(md)
			switch r.IntN(3) {
			case 0:
				m.Set(md.Fields().ByNumber(intValFieldNumber), protoreflect.ValueOfInt32(r.Int32()-r.Int32()))
			case 1:
				m.Set(md.Fields().ByNumber(strValFieldNumber), protoreflect.ValueOfString(randomStrings[r.IntN(len(randomStrings))]))
			} // else: holds nothing, which is left out (null in a list)
			return protoreflect.ValueOfMessage(m)
		case timestampName:
			return protoreflect.ValueOfMessage(timestamppb.New(randomTime(r)).ProtoReflect())
		case fieldsV1Name:
			m := newMessage(md)
			raws := []string{"", `{}`, `{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`, ` { "k:{\"name\":\"web\"}" : { ".": {} , "f:image" : {} } } `, `{"f:a":`, `[1, 2.50, "x<y"]`}
			m.Set(md.Fields().ByNumber(fieldsV1RawNumber), protoreflect.ValueOfBytes([]byte(raws[r.IntN(len(raws))])))
			return protoreflect.ValueOfMessage(m)
		}
		v := parent.NewField(fd)
		randomMessage(r, v.Message(), fill, depth+1)
		return v
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(randomStrings[r.IntN(len(randomStrings))])
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(r.IntN(2) == 0)
	case protoreflect.BytesKind:
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return protoreflect.ValueOfBytes(b)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(r.Int32() - r.Int32())
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64([]int64{0, 1, -1, r.Int64() - r.Int64(), 1<<53 + 1}[r.IntN(5)])
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(r.Uint32())
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(r.Int64()))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(r.Float32() * 1000)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64([]float64{0, 0.5, 1e-7, 1e21, r.NormFloat64() * 1e6}[r.IntN(5)])
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(r.IntN(vals.Len())).Number())
	}
	panic("no random value for " + fd.FullName())
}

// randomTime is a time between 1970 and 2100 with nanoseconds (whole
// seconds and microseconds are written; the rest is dropped).
func randomTime(r *rand.Rand) time.Time {
	return time.Unix(r.Int64N(4102444800), r.Int64N(1e9)).UTC()
}
