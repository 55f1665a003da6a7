package ephemeral

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	corev1 "skiff.dev/proto/core/v1"
)

// TestContainerCopiesEveryCommonField: every field of EphemeralContainer
// but the two a container lacks reaches the container, by name; a field
// added to the proto and forgotten here fails.
func TestContainerCopiesEveryCommonField(t *testing.T) {
	ecDesc := (&corev1.EphemeralContainer{}).ProtoReflect().Descriptor()
	cDesc := (&corev1.Container{}).ProtoReflect().Descriptor()
	ec := &corev1.EphemeralContainer{}
	m := ec.ProtoReflect()
	fields := ecDesc.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		switch {
		case fd.IsList():
			l := m.NewField(fd).List()
			if fd.Kind() == protoreflect.MessageKind {
				l.Append(protoreflect.ValueOfMessage(l.NewElement().Message()))
			} else {
				l.Append(protoreflect.ValueOfString("x"))
			}
			m.Set(fd, protoreflect.ValueOfList(l))
		case fd.Kind() == protoreflect.MessageKind:
			m.Set(fd, protoreflect.ValueOfMessage(m.NewField(fd).Message()))
		case fd.Kind() == protoreflect.BoolKind:
			m.Set(fd, protoreflect.ValueOfBool(true))
		default:
			m.Set(fd, protoreflect.ValueOfString("x"))
		}
	}
	c := Container(ec).ProtoReflect()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		name := fd.Name()
		if name == "stdin_once" || name == "target_container_name" {
			if cDesc.Fields().ByName(name) != nil {
				t.Errorf("Container now has %s: copy it", name)
			}
			continue
		}
		cfd := cDesc.Fields().ByName(name)
		if cfd == nil {
			t.Errorf("EphemeralContainer.%s has no Container field", name)
			continue
		}
		if !c.Has(cfd) {
			t.Errorf("Container(ec).%s is not set", name)
		}
	}
	if Container(nil) != nil {
		t.Error("Container(nil) != nil")
	}
}

func TestFind(t *testing.T) {
	spec := &corev1.PodSpec{EphemeralContainers: []*corev1.EphemeralContainer{{Name: "a"}, {Name: "b"}}}
	if got := Find(spec, "b"); got != spec.EphemeralContainers[1] {
		t.Errorf("Find b: %v", got)
	}
	if got := Find(spec, "c"); got != nil {
		t.Errorf("Find c: %v", got)
	}
}
