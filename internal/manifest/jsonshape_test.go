package manifest

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/kinds"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestAppendShapeOfJSON(t *testing.T) {
	shape := func(s string) string {
		t.Helper()
		b, ok := AppendShapeOfJSON(nil, []byte(s))
		if !ok {
			t.Fatalf("AppendShapeOfJSON(%s) refused", s)
		}
		return string(b)
	}
	same := [][2]string{
		{`{"a":"x","b":1,"c":true,"d":null}`, `{"a":"a longer \"quoted\" value","b":-2.5e3,"c":true,"d":null}`},
		{`{"m":{"k1":"v1"},"l":["x",{"n":1}]}`, `{"m":{"k1":"other"},"l":["x",{"n":1}]}`},
	}
	for _, c := range same {
		if a, b := shape(c[0]), shape(c[1]); a != b {
			t.Errorf("%s and %s: shapes %s and %s, want the same", c[0], c[1], a, b)
		}
	}
	differ := [][2]string{
		{`{"a":"x"}`, `{"b":"x"}`},               // another key
		{`{"m":{"k1":"v"}}`, `{"m":{"k2":"v"}}`}, // another map key
		{`{"l":["x"]}`, `{"l":["y"]}`},           // another list item
		{`{"l":[{"name":"a"}]}`, `{"l":[{"name":"b"}]}`},
		{`{"a":"1"}`, `{"a":1}`}, // another type
		{`{"a":true}`, `{"a":false}`},
		{`{"a":{}}`, `{"a":[]}`},
		{`{"a":"x","b":"y"}`, `{"a":"x"}`},
	}
	for _, c := range differ {
		if a, b := shape(c[0]), shape(c[1]); a == b {
			t.Errorf("%s and %s: the same shape %s", c[0], c[1], a)
		}
	}
	for _, bad := range []string{`{"a":"x"`, `{"a":"x}`, `]`, `{1:2}`} {
		if _, ok := AppendShapeOfJSON(nil, []byte(bad)); ok {
			t.Errorf("AppendShapeOfJSON(%s) took it", bad)
		}
	}
}

// AppendJSONShape is AppendShapeOfJSON of AppendJSON, byte for byte, for
// every kind (the managed fields cache's keys are made the first way,
// their meaning is the second's). (A managed field entry's fieldsV1, the
// one value it refuses outside a list, is only ever in a list, written
// whole.)
func TestAppendJSONShapeIsTheShapeOfTheJSON(t *testing.T) {
	same := func(what string, obj proto.Message) bool {
		t.Helper()
		got, ok := AppendJSONShape([]byte("k\x00"), obj)
		if !ok {
			return false
		}
		want, wok := AppendShapeOfJSON([]byte("k\x00"), AppendJSON(nil, obj))
		if !wok {
			t.Fatalf("%s: AppendShapeOfJSON refused AppendJSON's bytes %s", what, AppendJSON(nil, obj))
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: AppendJSONShape\n%q\nwant the shape of its JSON\n%q\nJSON %s", what, got, want, AppendJSON(nil, obj))
		}
		return true
	}
	for gvk, obj := range exampleObjects(t) {
		if !same(gvk, obj) {
			t.Errorf("%s: refused", gvk)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	shaped := 0
	for _, k := range kinds.All() {
		for i := 0; i < 16; i++ {
			for _, msg := range []proto.Message{k.New(), k.NewList()} {
				if same(k.GVK(), randomObject(r, msg, 0.4+0.04*float64(i))) {
					shaped++
				}
			}
		}
	}
	if want := len(kinds.All()) * 32; shaped != want {
		t.Errorf("%d random objects shaped, want all %d", shaped, want)
	}

	// Values outside lists do not count, list items do.
	a, _ := AppendJSONShape(nil, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "one"}})
	b, _ := AppendJSONShape(nil, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "b"}, Data: map[string]string{"k": "two"}})
	if !bytes.Equal(a, b) || string(a) != `{"metadata":{"name":s},"data":{"k":s}}` {
		t.Errorf("two ConfigMaps differing in values: %s and %s", a, b)
	}
}
