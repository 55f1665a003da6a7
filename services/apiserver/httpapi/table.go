package httpapi

import (
	"mime"
	"net/http"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/object"
	"skiff.dev/internal/printers"
	metav1 "skiff.dev/proto/meta/v1"
)

// tableContentType is the media type of a Table answer.
const tableContentType = "application/json;as=Table;v=v1;g=meta.k8s.io"

// wantsTable says whether the request accepts a meta.k8s.io Table (what
// kubectl get asks for first), in v1 or v1beta1 (answered in v1, which
// v1beta1's readers read the same).
func wantsTable(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || mt != "application/json" || params["as"] != "Table" || params["g"] != "meta.k8s.io" {
			continue
		}
		if v := params["v"]; v == "v1" || v == "v1beta1" {
			return true
		}
	}
	return false
}

// table is objs as a Table: the list's rows (listMeta of the list), or a
// get's one row (listMeta nil), with includeObject from the request.
func table(r *http.Request, kind object.Object, objs []object.Object, listMeta *metav1.ListMeta) ([]byte, error) {
	return printers.KubeTable(kind, objs, listMeta, r.URL.Query().Get("includeObject"), encodeJSON, time.Now())
}

// listItems are a list message's items and metadata.
func listItems(list proto.Message) ([]object.Object, *metav1.ListMeta) {
	m := list.ProtoReflect()
	fds := m.Descriptor().Fields()
	var meta *metav1.ListMeta
	if fd := fds.ByName("metadata"); fd != nil && m.Has(fd) {
		meta, _ = m.Get(fd).Message().Interface().(*metav1.ListMeta)
	}
	if meta == nil {
		meta = &metav1.ListMeta{}
	}
	var objs []object.Object
	if fd := fds.ByName("items"); fd != nil {
		items := m.Get(fd).List()
		objs = make([]object.Object, items.Len())
		for i := range objs {
			objs[i] = items.Get(i).Message().Interface().(object.Object)
		}
	}
	return objs, meta
}
