package manifest

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"skiff.dev/internal/kfields"
	metav1 "skiff.dev/proto/meta/v1"
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
	// FieldValidation is Strict, Warn or Ignore; "" is Warn, any other
	// value Strict (the caller checks the query parameter).
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
// used. msg must be a generated message (every Skiff object is).
func UnmarshalJSON(data []byte, msg proto.Message, o JSONOptions) (warnings []string, err error) {
	m := msg.ProtoReflect()
	p := planOf(m.Descriptor())
	v := reflect.ValueOf(m.Interface())
	if !p.fast || v.Type() != reflect.PointerTo(p.goType) || v.IsNil() {
		return nil, fmt.Errorf("manifest: cannot decode JSON into %s: not a generated message", m.Descriptor().FullName())
	}
	proto.Reset(msg)
	d := decoders.Get().(*jsonDecoder)
	defer d.release()
	*d = jsonDecoder{s: scanner{data: data, scratch: d.s.scratch[:0]}, mode: o.FieldValidation, path: d.path[:0]}
	if d.mode == "" {
		d.mode = FieldValidationWarn
	}
	func() {
		defer catchSyntax(&err)
		if d.s.next() != '{' {
			v := d.s.value()
			d.s.end()
			d.fail("expected an object, got " + v.describe())
			return
		}
		d.message(p, v.Elem(), p.ktype)
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

// decoders keep jsonDecoders (their path and scratch buffers) between
// calls.
var decoders = sync.Pool{New: func() any { return new(jsonDecoder) }}

// release returns d to the pool, without what the caller or the decoded
// message holds: the errors, the warnings, the arena of its strings (nor
// a path step naming a string of it, nor a big document's scratch).
func (d *jsonDecoder) release() {
	scratch := d.s.scratch[:0]
	if cap(scratch) > 64<<10 {
		scratch = nil
	}
	path := d.path[:cap(d.path)]
	clear(path)
	*d = jsonDecoder{s: scanner{scratch: scratch}, path: path[:0]}
	decoders.Put(d)
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

// message decodes the object at the scanner into sv, the generated
// struct of plan p, which stands for the Kubernetes type ktype ("" for
// none known).
func (d *jsonDecoder) message(p *plan, sv reflect.Value, ktype string) {
	if !d.s.openObject() {
		return
	}
	kinds := p.kinds(ktype)
	var seen uint64   // fields seen, by index
	var seenAt []bool // the same beyond 64 fields
	next := 0         // the field expected next: Kubernetes' clients write them in order
	for {
		k := d.s.key()
		var f *fieldPlan
		if next < len(p.fields) && p.fields[next].name == string(k) {
			f = p.fields[next]
		} else {
			f = p.byName[string(k)]
		}
		if f == nil {
			d.push(pathStep{name: string(k)})
			d.missing(ktype)
			d.pop()
		} else {
			next = f.index + 1
			d.push(pathStep{name: f.name})
			fv := sv.Field(f.goField)
			if again := seenBefore(f.index, &seen, &seenAt, len(p.fields)); again {
				d.strictError(ErrorDuplicate)
				fv.SetZero() // the last one counts
			}
			var kchild string
			if kinds != nil {
				kchild = kinds[f.index]
			}
			d.field(f, fv, kchild)
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

// field decodes the value of f into fv, its field of the struct.
func (d *jsonDecoder) field(f *fieldPlan, fv reflect.Value, kchild string) {
	c := d.s.next()
	if c == 'n' {
		d.s.literal() // null is absent, as in Kubernetes
		return
	}
	switch {
	case f.list:
		d.list(f, fv, kchild)
	case f.isMap:
		d.mapField(f, fv, kchild)
	case f.plainString && c == '"': // most fields: no conversion
		fv.SetString(d.s.str())
	case f.kind == scalarKind:
		if v, ok := d.check(convertScalar(f.fd, f.quantity, d.s.value())); ok {
			setScalar(fv, f.fd.Kind(), f.optional, v)
		}
	default:
		if v, ok := d.special(f); ok {
			if v.IsValid() {
				fv.Set(v)
			}
			return
		}
		if c != '{' {
			d.fail("expected an object, got " + d.s.value().describe())
			return
		}
		if fv.IsNil() {
			fv.Set(reflect.New(f.msg.goType))
		}
		d.message(f.msg, fv.Elem(), kchild)
	}
}

// setScalar sets dst, a field, list element, map key or map value of
// scalar kind k, to v; optional: dst is a pointer to set to a new value.
func setScalar(dst reflect.Value, k protoreflect.Kind, optional bool, v protoreflect.Value) {
	if optional {
		p := reflect.New(dst.Type().Elem())
		dst.Set(p)
		dst = p.Elem()
	}
	switch k {
	case protoreflect.StringKind:
		dst.SetString(v.String())
	case protoreflect.BoolKind:
		dst.SetBool(v.Bool())
	case protoreflect.BytesKind:
		dst.SetBytes(v.Bytes())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		dst.SetInt(v.Int())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		dst.SetUint(v.Uint())
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		dst.SetFloat(v.Float())
	case protoreflect.EnumKind:
		dst.SetInt(int64(v.Enum()))
	}
}

// special reads a value of the messages written as scalars, as the Go
// pointer the struct holds; ok is false for other kinds, the value
// invalid when the input was wrong (reported).
func (d *jsonDecoder) special(f *fieldPlan) (reflect.Value, bool) {
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
		return reflect.ValueOf(&metav1.FieldsV1{Raw: raw}), true
	default:
		return reflect.Value{}, false
	}
	if msg != "" {
		d.fail(msg)
		return reflect.Value{}, true
	}
	return reflect.ValueOf(v.Message().Interface()), true
}

func (d *jsonDecoder) list(f *fieldPlan, fv reflect.Value, kchild string) {
	if d.s.next() != '[' {
		d.fail("expected a list, got " + d.s.value().describe())
		return
	}
	if d.s.openList() {
		for i := 0; ; i++ {
			d.push(pathStep{index: i, kind: indexStep})
			d.element(f, fv, kchild)
			d.pop()
			if !d.s.more(']') {
				break
			}
		}
	}
	if fv.Len() == 0 {
		fv.SetZero()
	}
}

// element decodes a list's next element and appends it to the slice fv.
func (d *jsonDecoder) element(f *fieldPlan, fv reflect.Value, kchild string) {
	var v reflect.Value
	switch {
	case f.kind == scalarKind:
		if d.s.next() == 'n' {
			d.s.literal()
			d.fail("expected " + kindName(f.fd) + ", got null")
			return
		}
		pv, ok := d.check(convertScalar(f.fd, f.quantity, d.s.value()))
		if !ok {
			return
		}
		setScalar(grow(fv), f.fd.Kind(), false, pv)
		return
	case f.kind != messageKind:
		if v, _ = d.special(f); !v.IsValid() {
			return
		}
	default:
		if d.s.next() != '{' {
			d.fail("expected an object, got " + d.s.value().describe())
			return
		}
		v = reflect.New(f.msg.goType)
		d.message(f.msg, v.Elem(), kchild)
	}
	grow(fv).Set(v)
}

// grow appends a zero element to the slice fv and returns it.
func grow(fv reflect.Value) reflect.Value {
	n := fv.Len()
	fv.Grow(1)
	fv.SetLen(n + 1)
	return fv.Index(n)
}

func (d *jsonDecoder) mapField(f *fieldPlan, fv reflect.Value, kchild string) {
	if d.s.next() != '{' {
		d.fail("expected an object, got " + d.s.value().describe())
		return
	}
	if fv.IsNil() {
		fv.Set(reflect.MakeMap(f.goType))
	}
	var unset []string // keys seen but not in the map (null, refused)
	if d.s.openObject() {
		for {
			k := d.s.intern(d.s.key())
			d.push(pathStep{name: k, kind: keyStep})
			if !d.entry(f, fv, k, unset, kchild) {
				unset = append(unset, k)
			}
			d.pop()
			if !d.s.more('}') {
				break
			}
		}
	}
	if fv.Len() == 0 {
		fv.SetZero()
	}
}

// entry decodes the value of key k into the map fv and reports whether it
// is set (not when null or refused).
func (d *jsonDecoder) entry(f *fieldPlan, fv reflect.Value, k string, unset []string, kchild string) bool {
	if f.stringMap { // labels, annotations, data, quantities: no reflect
		mm := fv.Interface().(map[string]string)
		if _, dup := mm[k]; dup || slices.Contains(unset, k) {
			d.strictError(ErrorDuplicate)
			delete(mm, k) // the last one counts
		}
		if d.s.next() == 'n' {
			d.s.literal()
			return false
		}
		if d.s.next() == '"' { // a string is a string, a quantity too
			mm[k] = d.s.str()
			return true
		}
		pv, ok := d.check(convertScalar(f.vd, f.quantity, d.s.value()))
		if ok {
			mm[k] = pv.String()
		}
		return ok
	}
	kv, ok := d.check(convertScalar(f.fd.MapKey(), false, value{kind: stringValue, s: k}))
	if !ok {
		d.s.skip()
		return false
	}
	key := reflect.New(f.goType.Key()).Elem()
	setScalar(key, f.fd.MapKey().Kind(), false, kv)
	if fv.MapIndex(key).IsValid() || slices.Contains(unset, k) {
		d.strictError(ErrorDuplicate)
		fv.SetMapIndex(key, reflect.Value{}) // the last one counts
	}
	if d.s.next() == 'n' {
		d.s.literal()
		return false
	}
	var v reflect.Value
	switch f.kind {
	case scalarKind:
		pv, ok := d.check(convertScalar(f.vd, f.quantity, d.s.value()))
		if !ok {
			return false
		}
		v = reflect.New(f.goType.Elem()).Elem()
		setScalar(v, f.vd.Kind(), false, pv)
	case messageKind:
		if d.s.next() != '{' {
			d.fail("expected an object, got " + d.s.value().describe())
			return false
		}
		v = reflect.New(f.msg.goType)
		d.message(f.msg, v.Elem(), kchild)
	default:
		if v, _ = d.special(f); !v.IsValid() {
			return false
		}
	}
	fv.SetMapIndex(key, v)
	return true
}
