package object

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	metav1 "skiff.dev/proto/meta/v1"
)

// Facts about fields declared on them in proto (skiff.meta.v1's field
// options), for the code that treats such fields specially: skiffctl's
// manifest codec, the apiserver's timestamp precision. Callers that visit
// many objects cache the answers per field.

// Quantity says whether fd holds resource quantities (a string or a map
// of strings): option (skiff.meta.v1.quantity).
func Quantity(fd protoreflect.FieldDescriptor) bool { return option(fd, metav1.E_Quantity) }

// MicroTime says whether fd is a timestamp Kubernetes keeps in
// microseconds: option (skiff.meta.v1.micro_time).
func MicroTime(fd protoreflect.FieldDescriptor) bool { return option(fd, metav1.E_MicroTime) }

// EmitZero says whether Kubernetes prints fd at its zero value: option
// (skiff.meta.v1.emit_zero).
func EmitZero(fd protoreflect.FieldDescriptor) bool { return option(fd, metav1.E_EmitZero) }

func option(fd protoreflect.FieldDescriptor, xt protoreflect.ExtensionType) bool {
	opts, ok := fd.Options().(*descriptorpb.FieldOptions)
	if !ok || opts == nil {
		return false
	}
	v, _ := proto.GetExtension(opts, xt).(bool)
	return v
}
