package manifest

import (
	"reflect"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"

	"skiff.dev/internal/kfields"
	"skiff.dev/internal/object"
)

// A plan is what the JSON codec needs to know about a message type,
// worked out once from its descriptor and its Go type: its fields in
// declaration order (Kubernetes' order, and a fixed one, so output is
// deterministic), each with its quoted JSON name, how its values are
// written, and where the generated Go struct keeps it.
//
// The codec reads and writes the generated structs' fields through
// package reflect rather than protoreflect: protoreflect's Get and Set
// cost a map lookup and an interface conversion per field, several times
// the rest of the work. A message type without a plain generated struct
// (dynamicpb, or one with a oneof other than IntOrString's) has no fast
// plan; AppendJSON writes it through Encode, UnmarshalJSON refuses it.
type plan struct {
	md     protoreflect.MessageDescriptor
	goType reflect.Type // the generated struct
	fields []*fieldPlan
	byName map[string]*fieldPlan
	// ktype is the Kubernetes type of the same package and name
	// (kfields.ForMessage), "" for none.
	ktype string
	// fast: this type and every type it reaches have a generated struct
	// the codec can read and write.
	fast bool
	// kchildren caches, per Kubernetes type the message stands for, the
	// Kubernetes type of each field's value (fields' order): the decoder
	// walks Kubernetes' type beside Skiff's, as Decode does. ownKinds are
	// those of ktype, the usual one, looked up without the sync.Map.
	kchildren sync.Map // string -> []string
	ownKinds  []string
}

type fieldPlan struct {
	fd      protoreflect.FieldDescriptor
	name    string // the JSON name
	key     []byte // `"name":`
	index   int    // in plan.fields
	goField int    // in plan.goType
	goType  reflect.Type
	list    bool
	isMap   bool
	// optional: a scalar with presence, held through a pointer.
	optional bool
	// kind is how a value is written (a list's element, a map's value).
	kind codecKind
	// vd describes the values (fd, or the map's value descriptor).
	vd protoreflect.FieldDescriptor
	// msg is the plan of the values' message type (kind messageKind).
	msg *plan
	// emitZero: a scalar Kubernetes prints at its zero value.
	emitZero bool
	micro    bool // a MicroTime timestamp
	quantity bool // a string (or strings) of quantities
	// stringMap: a map[string]string, read and written without reflect.
	stringMap bool
	// plainString: a string field (not of quantities, without presence),
	// which a JSON string sets as it is.
	plainString bool
}

// codecKind is how the codec handles a value.
type codecKind uint8

const (
	scalarKind      codecKind = iota // by its protoreflect kind
	messageKind                      // a JSON object of the message's fields
	intOrStringKind                  // a number or a string
	timestampKind                    // an RFC 3339 string
	fieldsV1Kind                     // the JSON value its raw bytes hold
)

var (
	plans   sync.Map // protoreflect.FullName -> *plan
	plansMu sync.Mutex
)

// planOf is md's plan, built with the plans of every message type it
// reaches (under a lock, then read without one).
func planOf(md protoreflect.MessageDescriptor) *plan {
	if p, ok := plans.Load(md.FullName()); ok {
		return p.(*plan)
	}
	plansMu.Lock()
	defer plansMu.Unlock()
	built := map[protoreflect.FullName]*plan{}
	p := buildPlan(md, built)
	for _, bp := range built {
		bp.fast = reachesOnlyFast(bp, map[*plan]bool{})
		bp.ownKinds = bp.kinds(bp.ktype)
	}
	for name, bp := range built {
		plans.LoadOrStore(name, bp)
	}
	return p
}

func buildPlan(md protoreflect.MessageDescriptor, built map[protoreflect.FullName]*plan) *plan {
	if p, ok := plans.Load(md.FullName()); ok {
		return p.(*plan)
	}
	if p, ok := built[md.FullName()]; ok {
		return p
	}
	p := &plan{md: md, byName: map[string]*fieldPlan{}, goType: generatedStruct(md)}
	p.ktype, _ = kfields.ForMessage(string(md.FullName()))
	built[md.FullName()] = p
	goFields := structFields(p.goType)
	fds := md.Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		f := &fieldPlan{
			fd:       fd,
			name:     fd.JSONName(),
			index:    i,
			goField:  -1,
			list:     fd.IsList(),
			isMap:    fd.IsMap(),
			optional: fd.HasPresence() && fd.Message() == nil,
			vd:       fd,
			micro:    object.MicroTime(fd),
			quantity: object.Quantity(fd),
		}
		if gf, ok := goFields[fd.Number()]; ok {
			f.goField, f.goType = gf.Index[0], gf.Type
			f.stringMap = gf.Type == reflect.TypeFor[map[string]string]()
		}
		f.key = append(appendString(nil, f.name), ':')
		if f.isMap {
			f.vd = fd.MapValue()
		}
		if vmd := f.vd.Message(); vmd != nil {
			switch vmd.FullName() {
			case intOrStringName:
				f.kind = intOrStringKind
			case timestampName:
				f.kind = timestampKind
			case fieldsV1Name:
				f.kind = fieldsV1Kind
			default:
				f.kind = messageKind
				f.msg = buildPlan(vmd, built)
			}
		}
		f.emitZero = object.EmitZero(fd) && !f.list && !f.isMap && f.kind == scalarKind
		f.plainString = fd.Kind() == protoreflect.StringKind && !f.list && !f.isMap && !f.optional && !f.quantity
		p.fields = append(p.fields, f)
		p.byName[f.name] = f
	}
	return p
}

// generatedStruct is the Go struct protoc-gen-go generated for md, or
// nil.
func generatedStruct(md protoreflect.MessageDescriptor) reflect.Type {
	mt, err := protoTypes.FindMessageByName(md.FullName())
	if err != nil {
		return nil
	}
	t := reflect.TypeOf(mt.Zero().Interface())
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	return t.Elem()
}

// structFields maps field numbers to the generated struct's fields, from
// their protobuf tags ("bytes,3,opt,name=metadata,proto3").
func structFields(t reflect.Type) map[protoreflect.FieldNumber]reflect.StructField {
	out := map[protoreflect.FieldNumber]reflect.StructField{}
	if t == nil {
		return out
	}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		parts := strings.Split(sf.Tag.Get("protobuf"), ",")
		if len(parts) < 2 || !sf.IsExported() {
			continue
		}
		if n, err := strconv.Atoi(parts[1]); err == nil {
			out[protoreflect.FieldNumber(n)] = sf
		}
	}
	return out
}

// reachesOnlyFast reports whether p and the plans it reaches all have a
// generated struct holding every field.
func reachesOnlyFast(p *plan, seen map[*plan]bool) bool {
	if seen[p] {
		return true
	}
	seen[p] = true
	if p.goType == nil {
		return false
	}
	for _, f := range p.fields {
		if f.goField < 0 {
			return false
		}
		if f.msg != nil && !reachesOnlyFast(f.msg, seen) {
			return false
		}
	}
	return true
}

// kinds are the Kubernetes types of the fields' values where the message
// stands for Kubernetes type ktype ("" where there is none).
func (p *plan) kinds(ktype string) []string {
	if ktype == "" {
		return nil
	}
	if ktype == p.ktype && p.ownKinds != nil {
		return p.ownKinds
	}
	if k, ok := p.kchildren.Load(ktype); ok {
		return k.([]string)
	}
	k := make([]string, len(p.fields))
	for i, f := range p.fields {
		k[i], _ = kfields.Field(ktype, f.name)
	}
	p.kchildren.Store(ktype, k)
	return k
}
