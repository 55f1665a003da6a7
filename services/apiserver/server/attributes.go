package server

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// attributes fills the request info from the request message, generically:
// an object's metadata.namespace and metadata.name; a GetRequest's,
// DeleteRequest's, ListOptions' or PodLogOptions' namespace and name; a
// list's or watch's selectors. A namespaced kind's empty namespace is
// "default" for everything but list and watch (where it means all
// namespaces), as the registry reads it.
func (ri *RequestInfo) attributes(msg any) {
	ri.Object = msg
	m, ok := msg.(proto.Message)
	if !ok || m == nil {
		return
	}
	r := m.ProtoReflect()
	if !r.IsValid() {
		if ri.Namespaced && ri.Verb != "list" && ri.Verb != "watch" {
			ri.Namespace = "default"
		}
		return
	}
	fields := r.Descriptor().Fields()
	str := func(from protoreflect.Message, name protoreflect.Name) string {
		fd := from.Descriptor().Fields().ByName(name)
		if fd == nil || fd.Kind() != protoreflect.StringKind || fd.IsList() {
			return ""
		}
		return from.Get(fd).String()
	}
	if fd := fields.ByName("metadata"); fd != nil && fd.Kind() == protoreflect.MessageKind && fd.Message().Name() == "ObjectMeta" {
		meta := r.Get(fd).Message()
		ri.Namespace, ri.Name = str(meta, "namespace"), str(meta, "name")
	} else {
		ri.Namespace, ri.Name = str(r, "namespace"), str(r, "name")
		ri.LabelSelector, ri.FieldSelector = str(r, "label_selector"), str(r, "field_selector")
	}
	if !ri.Namespaced {
		return
	}
	if ri.Namespace == "" && ri.Verb != "list" && ri.Verb != "watch" {
		ri.Namespace = "default"
	}
}
