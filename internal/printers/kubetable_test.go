package printers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	kmetav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/kinds"
	"skiff.dev/internal/manifest"
	"skiff.dev/internal/object"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// encodeJSON is the HTTP API's codec: Kubernetes' JSON of a message.
func encodeJSON(m proto.Message) []byte {
	b, err := json.Marshal(manifest.Encode(m))
	if err != nil {
		panic(err)
	}
	return b
}

// decodeTable decodes b strictly (no unknown or duplicate fields) into
// apimachinery's Table, and checks that the Table encodes to b again:
// b has its fields, in their order, with their omitempty and escaping.
func decodeTable(t *testing.T, b []byte) *kmetav1.Table {
	t.Helper()
	var table kmetav1.Table
	strict, err := kjson.UnmarshalStrict(b, &table, kjson.DisallowUnknownFields)
	if err != nil || len(strict) > 0 {
		t.Fatalf("not a meta.k8s.io/v1 Table: %v %v\n%s", err, strict, b)
	}
	again, err := json.Marshal(&table)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, b) {
		t.Fatalf("apimachinery encodes the Table otherwise:\n got %s\nwant %s", b, again)
	}
	if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" {
		t.Errorf("kind %q apiVersion %q", table.Kind, table.APIVersion)
	}
	return &table
}

// examples are the conformance test's example of every declared kind,
// decoded as skiffctl decodes manifests, made to look stored.
func examples(t *testing.T) map[*kinds.Kind]object.Object {
	t.Helper()
	out := map[*kinds.Kind]object.Object{}
	for _, k := range kinds.All() {
		name := k.Version + "." + k.Kind.Kind + ".yaml"
		if k.Group != "" {
			name = k.Group + "." + name
		}
		path := filepath.Join("..", "..", "tests", "conformance", "testdata", name)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", k.GVK(), err)
		}
		docs, err := manifest.Read(path, bytes.NewReader(src))
		if err != nil || len(docs) != 1 {
			t.Fatalf("%s: %d documents, %v", path, len(docs), err)
		}
		obj := k.New()
		if err := manifest.Decode(docs[0].Object, obj, manifest.DecodeOptions{}); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		m := obj.GetMetadata()
		m.CreationTimestamp, m.ResourceVersion, m.Uid = ago(5*time.Minute), "42", "0b9d5c2e-1d5f-4a8e-9d7c-2f1e1c6a7b11"
		if k.Namespaced {
			m.Namespace = "default"
		}
		out[k] = obj
	}
	return out
}

// cellTypes are the JSON types of kube-apiserver's cells where they are
// not the columns' declared types (k8s.io/kubernetes
// pkg/printers/internalversion puts integers in string columns, and
// CronJob's SUSPEND is "True" or "False" in a boolean column).
var cellTypes = map[string]string{
	"Deployment.Up-to-date":             "integer",
	"Deployment.Available":              "integer",
	"Event.Count":                       "integer",
	"ConfigMap.Data":                    "integer",
	"Secret.Data":                       "integer",
	"ServiceAccount.Secrets":            "integer",
	"ControllerRevision.Revision":       "integer",
	"StorageClass.AllowVolumeExpansion": "boolean",
	"CronJob.Suspend":                   "string",
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case bool:
		return "boolean"
	}
	return fmt.Sprintf("%T", v)
}

// TestKubeTableOfEveryKind: the Table of every declared kind's example,
// with each includeObject, is a meta.k8s.io/v1 Table as apimachinery
// encodes one, whose header is skiffctl's (upper-cased names; priority 0
// without -o wide), whose cells print as skiffctl's row, typed as
// kube-apiserver's, and whose rows carry the object as asked.
func TestKubeTableOfEveryKind(t *testing.T) {
	remaining := int64(3)
	list := &metav1.ListMeta{ResourceVersion: "77", Continue: "next-page", RemainingItemCount: &remaining}
	for k, obj := range examples(t) {
		for _, include := range []string{"", IncludeMetadata, IncludeObject, IncludeNone} {
			b, err := KubeTable(k.New(), []object.Object{obj}, list, include, encodeJSON, now)
			if err != nil {
				t.Fatalf("%s: %v", k.GVK(), err)
			}
			table := decodeTable(t, b)
			if table.ResourceVersion != "77" || table.Continue != "next-page" || table.RemainingItemCount == nil || *table.RemainingItemCount != 3 {
				t.Errorf("%s: list metadata %+v", k.GVK(), table.ListMeta)
			}
			if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(table.ColumnDefinitions) {
				t.Fatalf("%s: %d columns, rows %+v", k.GVK(), len(table.ColumnDefinitions), table.Rows)
			}
			row := table.Rows[0]
			for _, wide := range []bool{false, true} {
				var header, cells []string
				for i, c := range table.ColumnDefinitions {
					if c.Priority == 0 || wide {
						header = append(header, strings.ToUpper(c.Name))
						cells = append(cells, fmt.Sprint(row.Cells[i]))
					}
				}
				o := Options{Wide: wide, Now: now}
				if got, want := strings.Join(header, "|"), strings.Join(Header(obj, o), "|"); got != want {
					t.Errorf("%s wide=%t: header %s, skiffctl's %s", k.GVK(), wide, got, want)
				}
				if got, want := strings.Join(cells, "|"), strings.Join(Row(obj, o), "|"); got != want {
					t.Errorf("%s wide=%t: cells %s, skiffctl's %s", k.GVK(), wide, got, want)
				}
			}
			for i, c := range table.ColumnDefinitions {
				want := c.Type
				if typ, ok := cellTypes[k.Kind.Kind+"."+c.Name]; ok {
					want = typ
				} else if want == "date" {
					want = "string"
				}
				if got := jsonType(row.Cells[i]); got != want {
					t.Errorf("%s: %s cell %v is a JSON %s, kube-apiserver's cell a JSON %s", k.GVK(), c.Name, row.Cells[i], got, want)
				}
			}
			checkRowObject(t, k.GVK()+" includeObject="+include, include, row.Object.Raw, obj)
		}
	}
}

// checkRowObject: Metadata (the default) is a PartialObjectMetadata of
// the object's metadata, Object the object, None null.
func checkRowObject(t *testing.T, what, include string, raw []byte, obj object.Object) {
	t.Helper()
	switch include {
	case IncludeNone:
		if raw != nil {
			t.Errorf("%s: object %s", what, raw)
		}
	case IncludeObject:
		if !bytes.Equal(raw, encodeJSON(obj)) {
			t.Errorf("%s: object %s, want %s", what, raw, encodeJSON(obj))
		}
	default:
		var partial kmetav1.PartialObjectMetadata
		if strict, err := kjson.UnmarshalStrict(raw, &partial, kjson.DisallowUnknownFields); err != nil || len(strict) > 0 {
			t.Fatalf("%s: not a PartialObjectMetadata: %v %v\n%s", what, err, strict, raw)
		}
		m := obj.GetMetadata()
		if partial.Kind != "PartialObjectMetadata" || partial.APIVersion != "meta.k8s.io/v1" || partial.Name != m.GetName() ||
			partial.Namespace != m.GetNamespace() || partial.ResourceVersion != m.GetResourceVersion() || string(partial.UID) != m.GetUid() ||
			!partial.CreationTimestamp.Time.Equal(m.GetCreationTimestamp().AsTime()) {
			t.Errorf("%s: %s", what, raw)
		}
	}
}

// TestKubeTableOfPods: the pods of skiffctl's golden tables, as
// kube-apiserver answers a list of them (testdata/pods.table.json): a
// failed pod's row has the Completed condition, RESTARTS is a string,
// <none> escaped as kube-apiserver's encoder writes it.
func TestKubeTableOfPods(t *testing.T) {
	objs := pods()
	for i, o := range objs {
		o.GetMetadata().ResourceVersion = fmt.Sprint(10 + i)
	}
	b, err := KubeTable(&corev1.Pod{}, objs, &metav1.ListMeta{ResourceVersion: "99"}, "", encodeJSON, now)
	if err != nil {
		t.Fatal(err)
	}
	table := decodeTable(t, b)
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	golden(t, "pods.table.json", buf.String()+"\n")
	if !bytes.Contains(b, []byte(`"\u003cnone\u003e"`)) {
		t.Errorf("<none> is not escaped as kube-apiserver writes it: %s", b)
	}
	for i, row := range table.Rows {
		want := []kmetav1.TableRowCondition(nil)
		if objs[i].(*corev1.Pod).GetStatus().GetPhase() == "Failed" {
			want = []kmetav1.TableRowCondition{{Type: kmetav1.RowCompleted, Status: kmetav1.ConditionTrue, Reason: "Failed", Message: "The pod failed."}}
		}
		if fmt.Sprint(row.Conditions) != fmt.Sprint(want) {
			t.Errorf("%s: conditions %v, want %v", objs[i].GetMetadata().GetName(), row.Conditions, want)
		}
	}
}

// TestKubeTableOfAGet: a get's Table (no list metadata) has its object's
// resourceVersion; an empty list still has its kind's columns, and no
// rows ([] as kube-apiserver's).
func TestKubeTableOfAGet(t *testing.T) {
	pod := pods()[1]
	pod.GetMetadata().ResourceVersion = "12"
	b, err := KubeTable(&corev1.Pod{}, []object.Object{pod}, nil, IncludeNone, encodeJSON, now)
	if err != nil {
		t.Fatal(err)
	}
	if table := decodeTable(t, b); table.ResourceVersion != "12" || table.Continue != "" || table.RemainingItemCount != nil {
		t.Errorf("a get's metadata %+v", table.ListMeta)
	}
	b, err = KubeTable(&corev1.Pod{}, nil, &metav1.ListMeta{ResourceVersion: "13"}, "", encodeJSON, now)
	if err != nil {
		t.Fatal(err)
	}
	table := decodeTable(t, b)
	if len(table.ColumnDefinitions) != 9 || table.Rows == nil || len(table.Rows) != 0 || !bytes.Contains(b, []byte(`"rows":[]`)) {
		t.Errorf("an empty list: %s", b)
	}
}

// TestKubeTableRefusesAnUnknownIncludeObject: as kube-apiserver, a
// BadRequest.
func TestKubeTableRefusesAnUnknownIncludeObject(t *testing.T) {
	_, err := KubeTable(&corev1.Pod{}, pods(), nil, "Everything", encodeJSON, now)
	if !apierrors.IsBadRequest(err) || err.Error() != `unrecognized includeObject value: "Everything"` {
		t.Errorf("got %v", err)
	}
}
