package registry

import (
	"sync"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/object"
)

// Kubernetes keeps API times at the precision of their type: a metav1.Time
// (creationTimestamp, deletionTimestamp, a condition's lastTransitionTime,
// an event's firstTimestamp...) in whole seconds, a metav1.MicroTime (a
// lease's acquireTime and renewTime, an event's eventTime) in
// microseconds. The registry stores every google.protobuf.Timestamp of an
// object it writes at that precision, whoever set it, so that what a
// client reads back equals what it wrote in YAML or JSON (skiffctl apply
// of an unchanged manifest is "unchanged").

// precisionOf is the precision Kubernetes keeps of a timestamp field: a
// MicroTime's (declared with the proto option skiff.meta.v1.micro_time:
// coordination/v1 LeaseSpec's acquireTime and renewTime, core/v1 Event's
// eventTime) or a Time's; skiffctl prints them by the same option.
func precisionOf(fd protoreflect.FieldDescriptor) time.Duration {
	if object.MicroTime(fd) {
		return time.Microsecond
	}
	return time.Second
}

// metaTime is t as the server sets a metav1.Time: whole seconds.
func metaTime(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t.Truncate(time.Second)) }

// cloneTime copies a timestamp (nil stays nil).
func cloneTime(t *timestamppb.Timestamp) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return &timestamppb.Timestamp{Seconds: t.Seconds, Nanos: t.Nanos}
}

var timestampName = (&timestamppb.Timestamp{}).ProtoReflect().Descriptor().FullName()

// timeField is a field normalizeTimes visits: a timestamp (or a list or
// map of them) kept at precision, or (precision 0) a message that holds
// timestamps somewhere below.
type timeField struct {
	fd        protoreflect.FieldDescriptor
	precision time.Duration
}

// timePlans caches each message type's timeFields, by full name.
var timePlans sync.Map

// normalizeTimes truncates, in place, every timestamp of m to the
// precision of its field. It visits only the fields that can hold one.
func normalizeTimes(m protoreflect.Message) {
	for _, f := range timePlan(m.Descriptor()) {
		if !m.Has(f.fd) {
			continue
		}
		v := m.Get(f.fd)
		switch {
		case f.fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				f.normalize(l.Get(i).Message())
			}
		case f.fd.IsMap():
			v.Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
				f.normalize(v.Message())
				return true
			})
		default:
			f.normalize(v.Message())
		}
	}
}

func (f timeField) normalize(m protoreflect.Message) {
	if f.precision == 0 {
		normalizeTimes(m)
		return
	}
	nanos := m.Descriptor().Fields().ByNumber(2) // google.protobuf.Timestamp.nanos
	n := m.Get(nanos).Int()
	if r := n % int64(f.precision); r != 0 {
		m.Set(nanos, protoreflect.ValueOfInt32(int32(n-r)))
	}
}

// timePlan returns the fields of md that normalizeTimes visits.
func timePlan(md protoreflect.MessageDescriptor) []timeField {
	if p, ok := timePlans.Load(md.FullName()); ok {
		return p.([]timeField)
	}
	var plan []timeField
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		sub := fd.Message()
		if fd.IsMap() {
			sub = fd.MapValue().Message()
		}
		switch {
		case sub == nil:
		case sub.FullName() == timestampName:
			plan = append(plan, timeField{fd: fd, precision: precisionOf(fd)})
		case holdsTimes(sub, map[protoreflect.FullName]bool{}):
			plan = append(plan, timeField{fd: fd})
		}
	}
	timePlans.Store(md.FullName(), plan)
	return plan
}

// holdsTimes says whether messages of type md can hold a timestamp,
// searching depth first; seen are the types searched already.
func holdsTimes(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if seen[md.FullName()] {
		return false
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		sub := fd.Message()
		if fd.IsMap() {
			sub = fd.MapValue().Message()
		}
		if sub != nil && (sub.FullName() == timestampName || holdsTimes(sub, seen)) {
			return true
		}
	}
	return false
}
