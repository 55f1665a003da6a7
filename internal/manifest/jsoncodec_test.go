package manifest

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	corev1 "skiff.dev/proto/core/v1"
)

// The decoder keeps its strings in an arena and is reused through a pool:
// the strings of an object decoded earlier do not change when the same
// decoder reads the next documents, on one goroutine or many.
func TestDecodedStringsOutliveTheDecoder(t *testing.T) {
	doc := func(i int) []byte {
		return []byte(`{"metadata":{"name":"cm-` + strings.Repeat(string(rune('a'+i%26)), 10) + `","labels":{"k\u00e9":"v` + string(rune('a'+i%26)) + `"}},"data":{"x":"` + strings.Repeat("y", i) + `"}}`)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			var kept []*corev1.ConfigMap
			var want [][]byte
			for i := 0; i < 200; i++ {
				cm := &corev1.ConfigMap{}
				if _, err := UnmarshalJSON(doc(g*1000+i), cm, JSONOptions{FieldValidation: FieldValidationStrict}); err != nil {
					t.Error(err)
					return
				}
				kept = append(kept, cm)
				want = append(want, AppendJSON(nil, cm))
			}
			for i, cm := range kept {
				if got := AppendJSON(nil, cm); string(got) != string(want[i]) {
					t.Errorf("object %d changed after later decodes:\n%s\nwas\n%s", i, got, want[i])
				}
				if wantDoc := doc(g*1000 + i); !sameValue(t, wantDoc, want[i]) {
					t.Errorf("object %d: %s, decoded from %s", i, want[i], wantDoc)
				}
			}
		})
	}
	wg.Wait()
}

// sameValue reports whether a and b are the same JSON value.
func sameValue(t *testing.T, a, b []byte) bool {
	t.Helper()
	ta, err := readJSON(strings.NewReader(string(a)))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := readJSON(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return len(ta) == 1 && len(tb) == 1 && string(CompactJSON(ta[0])) == string(CompactJSON(tb[0]))
}

// Encoding and decoding many objects at once, each a first use of its
// type's plan for some: -race checks the plans' and pool's sharing.
func TestJSONCodecConcurrently(t *testing.T) {
	objs := exampleObjects(t)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for gvk, obj := range objs {
				for _, msg := range []proto.Message{obj, randomObject(r, obj.ProtoReflect().New().Interface(), 0.4)} {
					data := AppendJSON(nil, msg)
					back := msg.ProtoReflect().New().Interface()
					if _, err := UnmarshalJSON(data, back, JSONOptions{}); err != nil && msg == obj {
						t.Errorf("%s: %v", gvk, err)
					}
				}
			}
		})
	}
	wg.Wait()
}

// A message without a generated struct (dynamicpb) is written through
// Encode, and refused by UnmarshalJSON, which sets generated structs.
func TestDynamicMessages(t *testing.T) {
	md := (&corev1.ConfigMap{}).ProtoReflect().Descriptor()
	dyn := dynamicpb.NewMessage(md)
	dyn.Set(md.Fields().ByName("kind"), protoreflect.ValueOfString("ConfigMap"))
	data := dyn.Mutable(md.Fields().ByName("data")).Map()
	data.Set(protoreflect.ValueOfString("b").MapKey(), protoreflect.ValueOfString("<2>"))
	data.Set(protoreflect.ValueOfString("a").MapKey(), protoreflect.ValueOfString("1"))
	got := string(AppendJSON([]byte("x"), dyn))
	if want := `x{"data":{"a":"1","b":"\u003c2\u003e"},"kind":"ConfigMap"}`; got != want {
		t.Errorf("AppendJSON of a dynamic message: %s, want %s", got, want)
	}
	if _, err := UnmarshalJSON([]byte(`{"kind":"ConfigMap"}`), dynamicpb.NewMessage(md), JSONOptions{}); err == nil || !strings.Contains(err.Error(), "not a generated message") {
		t.Errorf("UnmarshalJSON into a dynamic message: %v", err)
	}
	if got := string(AppendJSON(nil, (*corev1.ConfigMap)(nil))); got != "{}" {
		t.Errorf("a nil message: %s", got)
	}
}
