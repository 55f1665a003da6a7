package events

import (
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/object"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Event types.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// Recorder records events about objects. It never blocks and never fails:
// an event that cannot be written is logged and counted.
type Recorder interface {
	// Event records that reason (UpperCamelCase, e.g. "FailedScheduling")
	// happened to obj; eventType is EventTypeNormal or EventTypeWarning.
	Event(obj object.Object, eventType, reason, message string)
	// Eventf is Event with a fmt.Sprintf message.
	Eventf(obj object.Object, eventType, reason, format string, args ...any)
}

// RefOf returns a reference to obj for an Event's involvedObject. A kind
// left empty (an object built by hand) is taken from the Go type's message
// name, which is the kind for every Skiff API type.
func RefOf(obj object.Object) *corev1.ObjectReference {
	m := obj.GetMetadata()
	kind := obj.GetKind()
	if kind == "" {
		kind = string(obj.ProtoReflect().Descriptor().Name())
	}
	return &corev1.ObjectReference{
		Kind:            kind,
		ApiVersion:      obj.GetApiVersion(),
		Namespace:       m.GetNamespace(),
		Name:            m.GetName(),
		Uid:             m.GetUid(),
		ResourceVersion: m.GetResourceVersion(),
	}
}

// recorder is a Recorder for one component, writing through a Broadcaster.
type recorder struct {
	b         *Broadcaster
	component string
}

func (r *recorder) Event(obj object.Object, eventType, reason, message string) {
	r.b.record(r.component, obj, eventType, reason, message)
}

func (r *recorder) Eventf(obj object.Object, eventType, reason, format string, args ...any) {
	r.b.record(r.component, obj, eventType, reason, fmt.Sprintf(format, args...))
}

// newEvent builds the Event to write, not yet named.
func (b *Broadcaster) newEvent(component string, ref *corev1.ObjectReference, eventType, reason, message string) *corev1.Event {
	ns := ref.GetNamespace()
	if ns == "" {
		ns = "default" // events about cluster-scoped objects
	}
	now := timestamppb.New(b.cfg.Clock.Now())
	return &corev1.Event{
		Metadata:           &metav1.ObjectMeta{Namespace: ns},
		InvolvedObject:     ref,
		Reason:             reason,
		Message:            message,
		Source:             &corev1.EventSource{Component: component, Host: b.cfg.Host},
		FirstTimestamp:     now,
		LastTimestamp:      now,
		Count:              1,
		Type:               eventType,
		ReportingComponent: component,
		ReportingInstance:  b.cfg.Host,
	}
}

// Nop returns a Recorder that records nothing, for code run without a
// broadcaster (unit tests, tools).
func Nop() Recorder { return nopRecorder{} }

type nopRecorder struct{}

func (nopRecorder) Event(object.Object, string, string, string)          {}
func (nopRecorder) Eventf(object.Object, string, string, string, ...any) {}
