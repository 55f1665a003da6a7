package printers

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/object"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// What a Table's rows carry of their objects: the includeObject
// parameter of a request for a Table.
const (
	IncludeNone     = "None"
	IncludeMetadata = "Metadata" // the default
	IncludeObject   = "Object"
)

// The JSON of a meta.k8s.io/v1 Table: k8s.io/apimachinery's types' fields,
// in their order, with their omitempty.
type (
	kubeTable struct {
		Kind              string       `json:"kind"`
		APIVersion        string       `json:"apiVersion"`
		Metadata          kubeListMeta `json:"metadata"`
		ColumnDefinitions []Column     `json:"columnDefinitions"`
		Rows              []kubeRow    `json:"rows"`
	}
	kubeListMeta struct {
		ResourceVersion    string `json:"resourceVersion,omitempty"`
		Continue           string `json:"continue,omitempty"`
		RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
	}
	kubeRow struct {
		Cells      []any          `json:"cells"`
		Conditions []rowCondition `json:"conditions,omitempty"`
		// Object is a json.RawMessage or a partialObjectMetadata; null
		// when the request included none, as a RawExtension without an
		// object encodes.
		Object any `json:"object"`
	}
	rowCondition struct {
		Type    string `json:"type"`
		Status  string `json:"status"`
		Reason  string `json:"reason,omitempty"`
		Message string `json:"message,omitempty"`
	}
	partialObjectMetadata struct {
		Kind       string          `json:"kind"`
		APIVersion string          `json:"apiVersion"`
		Metadata   json.RawMessage `json:"metadata"`
	}
)

// KubeTable is objs as the meta.k8s.io/v1 Table kube-apiserver answers to
// a get or list with Accept: application/json;as=Table;g=meta.k8s.io;v=v1
// (what kubectl get asks for), in JSON as kube-apiserver writes it: the
// columns of kind's table, -o wide ones with priority 1 (kube-apiserver
// sends them all, kubectl leaves them out without -o wide), a row of
// cells per object in objs' order, with the Completed condition of a
// pod that succeeded or failed, as kube-apiserver's printer gives it.
//
// kind is an object of objs' kind, which may be empty: a list may have
// no items and still has its columns. listMeta is the list's; nil answers a
// get, whose Table has the resourceVersion of its one object.
// includeObject is what each row carries of its object: IncludeMetadata
// (or "") a PartialObjectMetadata of the object's metadata, IncludeObject
// the whole object, IncludeNone nothing; another value is a BadRequest,
// as kube-apiserver's. encode writes a message in Kubernetes' JSON (the
// HTTP API's codec): the metadata, and the whole object, which must have
// its apiVersion and kind. now is the clock of the AGE cells.
func KubeTable(kind object.Object, objs []object.Object, listMeta *metav1.ListMeta, includeObject string, encode func(proto.Message) []byte, now time.Time) ([]byte, error) {
	switch includeObject {
	case "", IncludeMetadata, IncludeObject, IncludeNone:
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unrecognized includeObject value: %q", includeObject))
	}
	table := tableOf(kind)
	out := kubeTable{Kind: "Table", APIVersion: "meta.k8s.io/v1", ColumnDefinitions: table.columns, Rows: make([]kubeRow, 0, len(objs))}
	switch {
	case listMeta != nil:
		out.Metadata = kubeListMeta{listMeta.GetResourceVersion(), listMeta.GetContinue(), listMeta.RemainingItemCount}
	case len(objs) == 1:
		out.Metadata.ResourceVersion = objs[0].GetMetadata().GetResourceVersion()
	}
	for _, obj := range objs {
		row := kubeRow{Cells: table.cells(obj, now), Conditions: rowConditions(obj)}
		switch includeObject {
		case "", IncludeMetadata:
			row.Object = partialObjectMetadata{"PartialObjectMetadata", "meta.k8s.io/v1", encode(obj.GetMetadata())}
		case IncludeObject:
			row.Object = json.RawMessage(encode(obj))
		}
		out.Rows = append(out.Rows, row)
	}
	// encoding/json escapes <, > and & ("\u003cnone\u003e") as
	// kube-apiserver's encoder does; the body has no final newline, as
	// the HTTP API's others.
	b, err := json.Marshal(out)
	if err != nil {
		// Cells are strings, integers and booleans: the objects' JSON
		// from encode is what failed.
		return nil, fmt.Errorf("table of %s: %w", kind.ProtoReflect().Descriptor().Name(), err)
	}
	return b, nil
}

// rowConditions are Kubernetes' conditions of a row: a pod that
// succeeded or failed has Completed.
func rowConditions(obj object.Object) []rowCondition {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	switch p.GetStatus().GetPhase() {
	case "Succeeded":
		return []rowCondition{{"Completed", "True", "Succeeded", "The pod has completed successfully."}}
	case "Failed":
		return []rowCondition{{"Completed", "True", "Failed", "The pod failed."}}
	}
	return nil
}
