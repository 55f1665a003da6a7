package manifest

import (
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"

	"skiff.dev/internal/kfields"
	"skiff.dev/internal/object"
)

// A plan is what the JSON codec needs to know about a message type,
// worked out once from its descriptor (field options are proto
// extensions, too slow to read per value): its fields in declaration
// order (Kubernetes' order, and a fixed one, so output is deterministic),
// each with its quoted JSON name and how its values are written.
type plan struct {
	md     protoreflect.MessageDescriptor
	fields []*fieldPlan
	byName map[string]*fieldPlan
	// kchildren caches, per Kubernetes type the message stands for, the
	// Kubernetes type of each field's value (fields' order): the decoder
	// walks Kubernetes' type beside Skiff's, as Decode does.
	kchildren sync.Map // string -> []string
}

type fieldPlan struct {
	fd    protoreflect.FieldDescriptor
	name  string // the JSON name
	key   []byte // `"name":`
	index int    // in plan.fields
	list  bool
	isMap bool
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
	p := &plan{md: md, byName: map[string]*fieldPlan{}}
	built[md.FullName()] = p
	fds := md.Fields()
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		f := &fieldPlan{
			fd:       fd,
			name:     fd.JSONName(),
			index:    i,
			list:     fd.IsList(),
			isMap:    fd.IsMap(),
			vd:       fd,
			micro:    object.MicroTime(fd),
			quantity: object.Quantity(fd),
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
		p.fields = append(p.fields, f)
		p.byName[f.name] = f
	}
	return p
}

// kinds are the Kubernetes types of the fields' values where the message
// stands for Kubernetes type ktype ("" where there is none).
func (p *plan) kinds(ktype string) []string {
	if ktype == "" {
		return nil
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
