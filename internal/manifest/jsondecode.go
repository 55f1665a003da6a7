package manifest

import (
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"skiff.dev/internal/kfields"
)

// FieldValidation is Kubernetes' fieldValidation: what becomes of a field
// that neither Skiff's type nor Kubernetes' has, or of a field given
// twice in one object (the last one counts).
type FieldValidation string

const (
	// FieldValidationStrict refuses them: errors of type ErrorUnknown and
	// ErrorDuplicate.
	FieldValidationStrict FieldValidation = "Strict"
	// FieldValidationWarn drops them with a warning each, in Kubernetes'
	// words (`unknown field "spec.foo"`); Kubernetes' default.
	FieldValidationWarn FieldValidation = "Warn"
	// FieldValidationIgnore drops them silently.
	FieldValidationIgnore FieldValidation = "Ignore"
)

// JSONOptions adjust UnmarshalJSON.
type JSONOptions struct {
	// FieldValidation is Strict, Warn or Ignore; "" is Warn.
	FieldValidation FieldValidation
}

// maxStrictErrors bounds the unknown and duplicate fields reported, as
// Kubernetes' strict decoder does.
const maxStrictErrors = 100

// UnmarshalJSON sets msg (reset first) from one JSON object in
// Kubernetes' shape, reading the bytes straight into the message. It
// accepts what Decode accepts from the same object read by Read, and
// refuses the rest with the same messages at the same paths, as Errors;
// and it applies Kubernetes' field validation to unknown and duplicate
// fields (o.FieldValidation), returning the warnings of Warn. A field
// Kubernetes has but Skiff does not is refused in every mode unless its
// value is empty (null, {}, [], ""), when it is dropped. Malformed JSON
// is a *SyntaxError. After an error msg is partly set and should not be
// used.
func UnmarshalJSON(data []byte, msg proto.Message, o JSONOptions) (warnings []string, err error) {
	proto.Reset(msg)
	d := &jsonDecoder{s: scanner{data: data}, mode: o.FieldValidation}
	if d.mode == "" {
		d.mode = FieldValidationWarn
	}
	func() {
		defer catchSyntax(&err)
		m := msg.ProtoReflect()
		if d.s.next() != '{' {
			v := d.s.value()
			d.s.end()
			d.fail("expected an object, got " + v.describe())
			return
		}
		ktype, _ := kfields.ForMessage(string(m.Descriptor().FullName()))
		d.message(planOf(m.Descriptor()), m, ktype)
		d.s.end()
	}()
	if err != nil {
		return nil, err
	}
	if len(d.errs) > 0 {
		return d.warnings, d.errs
	}
	return d.warnings, nil
}

type jsonDecoder struct {
	s        scanner
	mode     FieldValidation
	errs     Errors
	warnings []string
	strict   int             // unknown and duplicate fields reported
	reported map[string]bool // their texts, reported once each
	// path is where the decoder is, rendered only for an error.
	path []pathStep
}

// pathStep is a field's name, a list's index or a map's key.
type pathStep struct {
	name  string
	index int
	kind  stepKind
}

type stepKind uint8

const (
	fieldStep stepKind = iota
	indexStep
	keyStep
)

func (d *jsonDecoder) push(s pathStep) { d.path = append(d.path, s) }
func (d *jsonDecoder) pop()            { d.path = d.path[:len(d.path)-1] }

// pathString renders the path as Decode does ("a.b[0].c[key]"), or, with
// strict, as Kubernetes' strict decoder does ("a.b[0].c.key").
func (d *jsonDecoder) pathString(strict bool) string {
	var b []byte
	for i, s := range d.path {
		switch {
		case s.kind == indexStep:
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(s.index), 10)
			b = append(b, ']')
		case s.kind == keyStep && !strict:
			b = append(b, '[')
			b = append(b, s.name...)
			b = append(b, ']')
		default:
			if i > 0 {
				b = append(b, '.')
			}
			b = append(b, s.name...)
		}
	}
	return string(b)
}

func (d *jsonDecoder) fail(msg string) {
	d.failAs(ErrorInvalid, msg)
}

func (d *jsonDecoder) failAs(t ErrorType, msg string) {
	d.errs = append(d.errs, &FieldError{Path: d.pathString(false), Msg: msg, Type: t})
}

// check reports a conversion's problem.
func (d *jsonDecoder) check(v protoreflect.Value, msg string) (protoreflect.Value, bool) {
	if msg != "" {
		d.fail(msg)
		return protoreflect.Value{}, false
	}
	return v, true
}

// strictError is an unknown or duplicate field, at the path, in the way
// the field validation says.
func (d *jsonDecoder) strictError(t ErrorType) {
	if d.mode == FieldValidationIgnore || d.strict >= maxStrictErrors {
		return
	}
	e := &FieldError{Path: d.pathString(false), Type: t}
	e.Msg = "unknown field"
	if t == ErrorDuplicate {
		e.Msg = "duplicate field"
	}
	if p := d.pathString(true); p != e.Path {
		e.strictPath = p
	}
	text := e.Kubernetes()
	if d.reported[text] {
		return
	}
	if d.reported == nil {
		d.reported = map[string]bool{}
	}
	d.reported[text] = true
	d.strict++
	if d.mode == FieldValidationWarn {
		d.warnings = append(d.warnings, text)
		return
	}
	d.errs = append(d.errs, e)
}

// message decodes the object at the scanner into m, which stands for the
// Kubernetes type ktype ("" for none known).
func (d *jsonDecoder) message(p *plan, m protoreflect.Message, ktype string) {
	if !d.s.openObject() {
		return
	}
	kinds := p.kinds(ktype)
	var seen uint64   // fields seen, by index
	var seenAt []bool // the same beyond 64 fields
	for {
		k := d.s.key()
		f := p.byName[string(k)]
		if f == nil {
			d.push(pathStep{name: string(k)})
			d.missing(ktype)
			d.pop()
		} else {
			d.push(pathStep{name: f.name})
			if again := seenBefore(f.index, &seen, &seenAt, len(p.fields)); again {
				d.strictError(ErrorDuplicate)
				m.Clear(f.fd) // the last one counts
			}
			var kchild string
			if kinds != nil {
				kchild = kinds[f.index]
			}
			d.field(f, m, kchild)
			d.pop()
		}
		if !d.s.more('}') {
			return
		}
	}
}

// seenBefore marks field i seen and reports whether it was already.
func seenBefore(i int, seen *uint64, seenAt *[]bool, n int) bool {
	if i < 64 {
		was := *seen&(1<<i) != 0
		*seen |= 1 << i
		return was
	}
	if *seenAt == nil {
		*seenAt = make([]bool, n)
	}
	was := (*seenAt)[i]
	(*seenAt)[i] = true
	return was
}

// missing handles the value of a field the message does not have (the
// last step of the path): a field of Kubernetes' type is not supported,
// unless its value is empty; any other is unknown.
func (d *jsonDecoder) missing(ktype string) {
	if _, ok := kfields.Field(ktype, d.path[len(d.path)-1].name); ok {
		if !d.emptyValue() {
			d.failAs(ErrorNotSupported, notSupported)
		}
		return
	}
	d.s.skip()
	d.strictError(ErrorUnknown)
}

// emptyValue consumes the next value and reports whether it is empty:
// null, {}, [] or "" (see isEmpty).
func (d *jsonDecoder) emptyValue() bool {
	s := &d.s
	start := s.pos
	switch s.next() {
	case 'n':
		return s.literal().kind == nullValue
	case '"':
		begin, end, _ := s.stringSpan()
		return end-begin == 2
	case '{':
		if !s.openObject() {
			return true
		}
	case '[':
		if !s.openList() {
			return true
		}
	}
	s.pos = start
	s.skip()
	return false
}

// field decodes the value of f into m.
func (d *jsonDecoder) field(f *fieldPlan, m protoreflect.Message, kchild string) {
	c := d.s.next()
	if c == 'n' {
		d.s.literal() // null is absent, as in Kubernetes
		return
	}
	switch {
	case f.list:
		d.list(f, m, kchild)
	case f.isMap:
		d.mapField(f, m, kchild)
	case f.kind == scalarKind:
		if v, ok := d.check(convertScalar(f.fd, f.quantity, d.s.value())); ok {
			m.Set(f.fd, v)
		}
	default:
		if v, ok := d.special(f); ok {
			if v.IsValid() {
				m.Set(f.fd, v)
			}
			return
		}
		if c != '{' {
			d.fail("expected an object, got " + d.s.value().describe())
			return
		}
		d.message(f.msg, m.Mutable(f.fd).Message(), kchild)
	}
}

// special reads a value of the messages written as scalars; ok is false
// for other kinds, the value invalid when the input was wrong (reported).
func (d *jsonDecoder) special(f *fieldPlan) (protoreflect.Value, bool) {
	var v protoreflect.Value
	var msg string
	switch f.kind {
	case intOrStringKind:
		v, msg = convertIntOrString(f.vd.Message(), d.s.value())
	case timestampKind:
		v, msg = convertTimestamp(d.s.value())
	case fieldsV1Kind:
		if d.s.next() != '{' {
			msg = "expected an object, got " + d.s.value().describe()
			break
		}
		var raw []byte
		d.s.copyValue(&raw, 0)
		md := f.vd.Message()
		fv := newMessage(md)
		fv.Set(md.Fields().ByNumber(fieldsV1RawNumber), protoreflect.ValueOfBytes(raw))
		v = protoreflect.ValueOfMessage(fv)
	default:
		return protoreflect.Value{}, false
	}
	if msg != "" {
		d.fail(msg)
		return protoreflect.Value{}, true
	}
	return v, true
}

func (d *jsonDecoder) list(f *fieldPlan, m protoreflect.Message, kchild string) {
	if d.s.next() != '[' {
		d.fail("expected a list, got " + d.s.value().describe())
		return
	}
	l := m.Mutable(f.fd).List()
	if d.s.openList() {
		for i := 0; ; i++ {
			d.push(pathStep{index: i, kind: indexStep})
			d.element(f, l, kchild)
			d.pop()
			if !d.s.more(']') {
				break
			}
		}
	}
	if l.Len() == 0 {
		m.Clear(f.fd)
	}
}

func (d *jsonDecoder) element(f *fieldPlan, l protoreflect.List, kchild string) {
	if f.kind == scalarKind {
		if d.s.next() == 'n' {
			d.s.literal()
			d.fail("expected " + kindName(f.fd) + ", got null")
			return
		}
		if v, ok := d.check(convertScalar(f.fd, f.quantity, d.s.value())); ok {
			l.Append(v)
		}
		return
	}
	if v, ok := d.special(f); ok {
		if v.IsValid() {
			l.Append(v)
		}
		return
	}
	if d.s.next() != '{' {
		d.fail("expected an object, got " + d.s.value().describe())
		return
	}
	e := l.NewElement()
	d.message(f.msg, e.Message(), kchild)
	l.Append(e)
}

func (d *jsonDecoder) mapField(f *fieldPlan, m protoreflect.Message, kchild string) {
	if d.s.next() != '{' {
		d.fail("expected an object, got " + d.s.value().describe())
		return
	}
	mp := m.Mutable(f.fd).Map()
	kd := f.fd.MapKey()
	var unset []string // keys seen but not in the map (null, refused)
	if d.s.openObject() {
		for {
			k := string(d.s.key())
			d.push(pathStep{name: k, kind: keyStep})
			if !d.entry(f, mp, kd, k, unset, kchild) {
				unset = append(unset, k)
			}
			d.pop()
			if !d.s.more('}') {
				break
			}
		}
	}
	if mp.Len() == 0 {
		m.Clear(f.fd)
	}
}

// entry decodes the value of key k into mp and reports whether it is set
// (not when null or refused).
func (d *jsonDecoder) entry(f *fieldPlan, mp protoreflect.Map, kd protoreflect.FieldDescriptor, k string, unset []string, kchild string) bool {
	key, ok := d.check(convertScalar(kd, false, value{kind: stringValue, s: k}))
	if !ok {
		d.s.skip()
		return false
	}
	mk := key.MapKey()
	if mp.Has(mk) || slices.Contains(unset, k) {
		d.strictError(ErrorDuplicate)
		mp.Clear(mk) // the last one counts
	}
	if d.s.next() == 'n' {
		d.s.literal()
		return false
	}
	if f.kind == scalarKind {
		v, ok := d.check(convertScalar(f.vd, f.quantity, d.s.value()))
		if ok {
			mp.Set(mk, v)
		}
		return ok
	}
	if v, ok := d.special(f); ok {
		if v.IsValid() {
			mp.Set(mk, v)
		}
		return v.IsValid()
	}
	if d.s.next() != '{' {
		d.fail("expected an object, got " + d.s.value().describe())
		return false
	}
	v := mp.NewValue()
	d.message(f.msg, v.Message(), kchild)
	mp.Set(mk, v)
	return true
}
