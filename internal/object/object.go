// Package object gives generic code access to the parts every Skiff object
// shares, whatever its Go type: metadata, spec, status, apiVersion and kind.
// Every top-level message has the fields api_version (1), kind (2) and
// metadata (3); most have spec (4) and status (5). It uses protobuf
// reflection with per-type descriptors cached, so it costs no per-kind code.
package object

import (
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	metav1 "skiff.dev/proto/meta/v1"
)

// Object is any top-level API object.
type Object interface {
	proto.Message
	GetMetadata() *metav1.ObjectMeta
	GetApiVersion() string
	GetKind() string
}

type fieldSet struct {
	apiVersion, kind, metadata, spec, status protoreflect.FieldDescriptor
	specLike                                 []protoreflect.FieldDescriptor // every field but type meta, metadata and status
}

var descriptors sync.Map // protoreflect.FullName -> *fieldSet

func fieldsOf(m protoreflect.Message) *fieldSet {
	d := m.Descriptor()
	if fs, ok := descriptors.Load(d.FullName()); ok {
		return fs.(*fieldSet)
	}
	fds := d.Fields()
	fs := &fieldSet{
		apiVersion: fds.ByName("api_version"),
		kind:       fds.ByName("kind"),
		metadata:   fds.ByName("metadata"),
		spec:       fds.ByName("spec"),
		status:     fds.ByName("status"),
	}
	for i := 0; i < fds.Len(); i++ {
		fd := fds.Get(i)
		switch fd {
		case fs.apiVersion, fs.kind, fs.metadata, fs.status:
			continue
		}
		fs.specLike = append(fs.specLike, fd)
	}
	descriptors.Store(d.FullName(), fs)
	return fs
}

// New returns a new empty message of type M (a pointer type such as
// *corev1.Pod), for generic code that cannot write &T{}.
func New[M proto.Message]() M {
	var zero M
	return zero.ProtoReflect().Type().New().Interface().(M)
}

// Meta returns obj's metadata, creating it when unset so callers may write to it.
func Meta(obj proto.Message) *metav1.ObjectMeta {
	r := obj.ProtoReflect()
	fs := fieldsOf(r)
	return r.Mutable(fs.metadata).Message().Interface().(*metav1.ObjectMeta)
}

// SetTypeMeta sets apiVersion and kind.
func SetTypeMeta(obj proto.Message, apiVersion, kind string) {
	r := obj.ProtoReflect()
	fs := fieldsOf(r)
	if fs.apiVersion != nil {
		r.Set(fs.apiVersion, protoreflect.ValueOfString(apiVersion))
	}
	if fs.kind != nil {
		r.Set(fs.kind, protoreflect.ValueOfString(kind))
	}
}

// HasStatus reports whether the kind has a status field.
func HasStatus(obj proto.Message) bool { return fieldsOf(obj.ProtoReflect()).status != nil }

// SpecEqual reports whether a and b (same type) have equal desired state:
// every field except apiVersion, kind, metadata and status. A change there
// bumps metadata.generation.
func SpecEqual(a, b proto.Message) bool {
	ra, rb := a.ProtoReflect(), b.ProtoReflect()
	for _, fd := range fieldsOf(ra).specLike {
		if !valueEqual(fd, ra, rb) {
			return false
		}
	}
	return true
}

// StatusEqual reports whether a and b (same type) have equal status.
func StatusEqual(a, b proto.Message) bool {
	ra, rb := a.ProtoReflect(), b.ProtoReflect()
	fs := fieldsOf(ra)
	return fs.status == nil || valueEqual(fs.status, ra, rb)
}

func valueEqual(fd protoreflect.FieldDescriptor, ra, rb protoreflect.Message) bool {
	ha, hb := ra.Has(fd), rb.Has(fd)
	if !ha || !hb {
		return ha == hb
	}
	if fd.Message() != nil && !fd.IsList() && !fd.IsMap() {
		return proto.Equal(ra.Get(fd).Message().Interface(), rb.Get(fd).Message().Interface())
	}
	// Lists, maps and scalars: compare through a shallow message holding only this field.
	return ra.Get(fd).Equal(rb.Get(fd))
}

// CopyStatus sets dst's status to a deep copy of src's.
func CopyStatus(dst, src proto.Message) {
	rd, rs := dst.ProtoReflect(), src.ProtoReflect()
	if fs := fieldsOf(rd); fs.status != nil {
		copyField(fs.status, rd, rs)
	}
}

func copyField(fd protoreflect.FieldDescriptor, rd, rs protoreflect.Message) {
	rd.Clear(fd)
	if !rs.Has(fd) {
		return
	}
	if fd.Message() != nil && !fd.IsList() && !fd.IsMap() {
		rd.Set(fd, protoreflect.ValueOfMessage(proto.Clone(rs.Get(fd).Message().Interface()).ProtoReflect()))
		return
	}
	if !fd.IsList() && !fd.IsMap() {
		rd.Set(fd, rs.Get(fd))
		return
	}
	// Lists and maps: merge into the cleared field copies every element deeply.
	tmp := rs.New()
	tmp.Set(fd, rs.Get(fd))
	proto.Merge(rd.Interface(), tmp.Interface())
}

// ClearStatus empties the status.
func ClearStatus(obj proto.Message) {
	r := obj.ProtoReflect()
	if fs := fieldsOf(r); fs.status != nil {
		r.Clear(fs.status)
	}
}
