package httpapi

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"skiff.dev/internal/kinds"
	"skiff.dev/internal/manifest"
	"skiff.dev/internal/object"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// exampleObjects are the example manifest of every kind
// (tests/conformance/testdata): rich objects (a Pod's spec has
// containers, probes, volumes, quantities, int-or-strings).
func exampleObjects(t testing.TB) map[*kinds.Kind]object.Object {
	t.Helper()
	out := map[*kinds.Kind]object.Object{}
	for _, k := range kinds.All() {
		name := k.Version + "." + k.Kind.Kind + ".yaml"
		if k.Group != "" {
			name = k.Group + "." + name
		}
		path := filepath.Join("..", "..", "..", "tests", "conformance", "testdata", name)
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
		out[k] = obj
	}
	if len(out) < 30 {
		t.Fatalf("%d example manifests", len(out))
	}
	return out
}

// encodedList is a list as server.Endpoint.ListEncoded answers it (the
// head, then each item's record) and as server.Methods.CallList hands it
// on: the head decoded, the items' encodings.
type encodedList struct {
	whole []byte
	head  proto.Message
	items [][]byte
}

func encodeListOf(t testing.TB, k *kinds.Kind, meta *metav1.ListMeta, objs []object.Object) encodedList {
	t.Helper()
	list := k.NewList()
	r := list.ProtoReflect()
	fds := r.Descriptor().Fields()
	r.Set(fds.ByNumber(1), protoreflect.ValueOfString(k.GroupVersion()))
	r.Set(fds.ByNumber(2), protoreflect.ValueOfString(k.Kind.Kind+"List"))
	if meta != nil {
		r.Set(fds.ByNumber(3), protoreflect.ValueOfMessage(meta.ProtoReflect()))
	}
	whole, err := proto.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	var l encodedList
	for _, o := range objs {
		b, err := proto.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		whole = protowire.AppendTag(whole, 4, protowire.BytesType)
		whole = protowire.AppendBytes(whole, b)
		l.items = append(l.items, b)
	}
	l.whole = whole
	l.head = k.NewList()
	if err := proto.Unmarshal(whole[:len(whole)-lenOfItems(l.items)], l.head); err != nil {
		t.Fatal(err)
	}
	return l
}

func lenOfItems(items [][]byte) int {
	n := 0
	for _, b := range items {
		n += protowire.SizeTag(4) + protowire.SizeBytes(len(b))
	}
	return n
}

// oldListJSON is the list's JSON as the HTTP API made it before
// listJSON: the whole list decoded, then encodeList.
func oldListJSON(t testing.TB, k *kinds.Kind, l encodedList) []byte {
	t.Helper()
	list := k.NewList()
	if err := proto.Unmarshal(l.whole, list); err != nil {
		t.Fatal(err)
	}
	objs, _ := listItems(list)
	return encodeList(list, len(objs))
}

// newListJSON is listJSON of l through c, from a head of its own (the
// head is the request's).
func newListJSON(t testing.TB, c *jsonCache, l encodedList) []byte {
	t.Helper()
	b, err := c.listJSON(proto.Clone(l.head), l.items)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		from := max(0, i-80)
		t.Fatalf("%s: the JSON differs at byte %d of %d (want %d):\ngot  …%s\nwant …%s", what, i, len(got), len(want),
			got[from:min(len(got), i+80)], want[from:min(len(want), i+80)])
	}
}

// copies are n copies of obj, each of its own name and label.
func copies(obj object.Object, n int) []object.Object {
	out := make([]object.Object, n)
	for i := range out {
		o := proto.Clone(obj).(object.Object)
		m := o.GetMetadata()
		m.Name = fmt.Sprintf("%s-%d", m.GetName(), i)
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels["copy"] = fmt.Sprint(i)
		out[i] = o
	}
	return out
}

// A List's JSON made from its items' encodings is, byte for byte, the
// JSON of the list decoded as a whole: every kind's example objects, with
// a continue token and remaining item count or without metadata, an
// empty list; the same again from the cache; and an object that changed
// (a new encoding) never answered with its old JSON.
func TestListJSONIsTheDecodedListsJSON(t *testing.T) {
	c := newJSONCache(itemJSONBudget)
	remaining := int64(7)
	metas := map[string]*metav1.ListMeta{
		"resourceVersion":                   {ResourceVersion: "1234"},
		"continue and remainingItemCount":   {ResourceVersion: "1234", Continue: "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", RemainingItemCount: &remaining},
		"remainingItemCount 0":              {ResourceVersion: "1", Continue: "x", RemainingItemCount: new(int64)},
		"no metadata":                       nil,
		"empty metadata (the field is set)": {},
	}
	examples := exampleObjects(t)
	for k, obj := range examples {
		for what, meta := range metas {
			for _, n := range []int{0, 1, 3} {
				name := fmt.Sprintf("%s, %s, %d items", k.GVK(), what, n)
				l := encodeListOf(t, k, meta, copies(obj, n))
				want := oldListJSON(t, k, l)
				sameBytes(t, name, newListJSON(t, c, l), want)
				hits := c.hits.Load()
				sameBytes(t, name+" (again)", newListJSON(t, c, l), want)
				if got := c.hits.Load() - hits; got != uint64(n) {
					t.Fatalf("%s: %d items from the cache the second time, want %d", name, got, n)
				}
			}
		}
	}

	// An object that changes has a new encoding, and a new JSON.
	for k, obj := range examples {
		objs := copies(obj, 3)
		before := encodeListOf(t, k, &metav1.ListMeta{ResourceVersion: "1"}, objs)
		sameBytes(t, "before", newListJSON(t, c, before), oldListJSON(t, k, before))
		objs[1].GetMetadata().Labels["copy"] = "changed"
		objs[1].GetMetadata().ResourceVersion = "2"
		after := encodeListOf(t, k, &metav1.ListMeta{ResourceVersion: "2"}, objs)
		got := newListJSON(t, c, after)
		sameBytes(t, fmt.Sprintf("%s after a change", k.GVK()), got, oldListJSON(t, k, after))
		if !bytes.Contains(got, []byte(`"copy":"changed"`)) {
			t.Fatalf("%s: the changed object's JSON is not in the list: %s", k.GVK(), got)
		}
	}
}

// Kinds whose encodings are the same bytes have JSON of their own: the
// cache keys by type too.
func TestListJSONKeysByType(t *testing.T) {
	c := newJSONCache(itemJSONBudget)
	cm := kinds.Get("", "v1", "ConfigMap")
	secret := kinds.Get("", "v1", "Secret")
	if cm == nil || secret == nil {
		t.Fatal("no ConfigMap or Secret kind")
	}
	// Only metadata: the same field number in both.
	b, err := proto.Marshal(&corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "same"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []*kinds.Kind{cm, secret} {
		o := k.New()
		if err := proto.Unmarshal(b, o); err != nil {
			t.Fatal(err)
		}
		l := encodeListOf(t, k, &metav1.ListMeta{ResourceVersion: "1"}, []object.Object{o})
		sameBytes(t, k.GVK(), newListJSON(t, c, l), oldListJSON(t, k, l))
	}
	if c.misses.Load() != 2 {
		t.Fatalf("%d misses, want one per type", c.misses.Load())
	}
}

// The cache stays within its budget, answering correctly whatever it
// evicted, lists made at the same time included (-race).
func TestListJSONCacheStaysWithinItsBudget(t *testing.T) {
	const budget = 64 << 10
	c := newJSONCache(budget)
	pod := kinds.Get("", "v1", "Pod")
	examples := exampleObjects(t)
	obj := examples[pod]
	type round struct {
		l    encodedList
		want []byte
	}
	rounds := make([][]round, 4)
	for g := range rounds {
		for r := range 20 {
			objs := copies(obj, 20)
			for _, o := range objs { // every fourth round the same
				o.GetMetadata().ResourceVersion = fmt.Sprint(g*1000 + r%4)
			}
			l := encodeListOf(t, pod, &metav1.ListMeta{ResourceVersion: "9"}, objs)
			rounds[g] = append(rounds[g], round{l, oldListJSON(t, pod, l)})
		}
	}
	var wg sync.WaitGroup
	for g, rs := range rounds {
		wg.Go(func() {
			for r, rd := range rs {
				got, err := c.listJSON(proto.Clone(rd.l.head), rd.l.items)
				if err != nil || !bytes.Equal(got, rd.want) {
					t.Errorf("goroutine %d, round %d: the JSON differs (%v)", g, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	c.mu.RLock()
	defer c.mu.RUnlock()
	size, entries := 0, 0
	for _, byEnc := range c.types {
		for k, e := range byEnc {
			size += len(k) + len(e.json) + entryOverhead
			entries++
		}
	}
	if size != c.size {
		t.Fatalf("the cache counts %d bytes, its entries take %d", c.size, size)
	}
	if size > budget {
		t.Fatalf("the cache holds %d bytes, past its budget of %d", size, budget)
	}
	if entries == 0 || c.misses.Load() == 0 || c.hits.Load() == 0 {
		t.Fatalf("%d entries, %d hits, %d misses: the test did not exercise the cache", entries, c.hits.Load(), c.misses.Load())
	}
}
