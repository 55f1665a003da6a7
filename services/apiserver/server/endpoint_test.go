package server

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/registry"
	"skiff.dev/services/apiserver/scheme"
	"skiff.dev/services/apiserver/storage"
	"skiff.dev/services/apiserver/watchcache"
)

// messages packs a batch into messages within the byte and event caps,
// every event once and in order, each message a valid watch response.
func TestMessagesPackWithinTheCaps(t *testing.T) {
	var ds []watchcache.Delivery[*corev1.ConfigMap]
	for i := range 10 {
		raw, err := proto.Marshal(&corev1.ConfigMap{
			Metadata: &metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: "ns"},
			Data:     map[string]string{"k": "0123456789"},
		})
		if err != nil {
			t.Fatal(err)
		}
		e := &watchcache.Entry[*corev1.ConfigMap]{Key: fmt.Sprint(i), Raw: raw}
		typ := watchcache.Added
		if i%2 == 1 {
			typ = watchcache.Modified
		}
		ds = append(ds, watchcache.Delivery[*corev1.ConfigMap]{Type: typ, Event: &watchcache.Event[*corev1.ConfigMap]{Type: typ, Cur: e}})
	}
	one, err := (&Endpoint[*corev1.ConfigMap, *corev1.ConfigMap, *corev1.ConfigMapList, corev1.ConfigMapWatchEvent]{maxBatchBytes: 1 << 20, maxBatchEvents: 1 << 10}).messages(ds[:1])
	if err != nil || len(one) != 1 {
		t.Fatalf("one event: %d messages, %v", len(one), err)
	}
	size := len(one[0]) // every event frames to about this size

	for _, tc := range []struct {
		name              string
		maxBytes, maxEvts int
		want              int // messages
	}{
		{"all in one", 1 << 20, 1024, 1},
		{"three events a message by count", 1 << 20, 3, 4},
		{"two events a message by size", 2*size + 8, 1024, 5}, // MODIFIED frames 3 bytes larger than ADDED
		{"an event larger than the cap goes alone", 1, 1024, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := &Endpoint[*corev1.ConfigMap, *corev1.ConfigMap, *corev1.ConfigMapList, corev1.ConfigMapWatchEvent]{maxBatchBytes: tc.maxBytes, maxBatchEvents: tc.maxEvts}
			msgs, err := ep.messages(ds)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != tc.want {
				t.Fatalf("%d messages, want %d", len(msgs), tc.want)
			}
			var got []string
			for _, m := range msgs {
				if len(m) > tc.maxBytes && tc.maxBytes >= size {
					t.Errorf("a message of %d bytes, cap %d", len(m), tc.maxBytes)
				}
				var resp corev1.ConfigMapWatchResponse
				if err := proto.Unmarshal(m, &resp); err != nil {
					t.Fatalf("message does not decode: %v", err)
				}
				if n := len(resp.GetEvents()); n > tc.maxEvts {
					t.Errorf("a message of %d events, cap %d", n, tc.maxEvts)
				}
				err := client.WatchEvents(m, func(typ string, obj []byte) error {
					var cm corev1.ConfigMap
					if err := proto.Unmarshal(obj, &cm); err != nil {
						return err
					}
					got = append(got, typ+" "+cm.GetMetadata().GetName())
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			want := fmt.Sprint([]string{"ADDED cm-0", "MODIFIED cm-1", "ADDED cm-2", "MODIFIED cm-3", "ADDED cm-4", "MODIFIED cm-5", "ADDED cm-6", "MODIFIED cm-7", "ADDED cm-8", "MODIFIED cm-9"})
			if fmt.Sprint(got) != want {
				t.Fatalf("events %v, want %v", got, want)
			}
		})
	}
}

// TestEncodedListsDecodeAsListsOfObjects: a list assembled from the
// entries' encodings decodes to exactly the list message the endpoint
// built before from decoded objects (apiVersion, kind, metadata with
// resourceVersion and continue, every item with every field and its
// resourceVersion), at the storage version and at a converted one; the
// codec sends the pieces as one message.
func TestEncodedListsDecodeAsListsOfObjects(t *testing.T) {
	newCM := func() *corev1.ConfigMap { return &corev1.ConfigMap{} }
	store := storage.New(nil, storage.ClientWatcher{}, "", "configmaps", newCM, nil)
	cache := watchcache.New(watchcache.Config[*corev1.ConfigMap]{Store: store})
	kind := &scheme.Kind{GVK: scheme.GroupVersionKind{GroupVersion: scheme.GroupVersion{Version: "v1"}, Kind: "ConfigMap"}}
	var entries []*watchcache.Entry[*corev1.ConfigMap]
	for i := range 5 {
		obj := &corev1.ConfigMap{
			Metadata: &metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: "ns", Uid: fmt.Sprint("uid-", i),
				Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"n": fmt.Sprint(i)}},
			Data:       map[string]string{"k": strings.Repeat("v", 100*i)},
			BinaryData: map[string][]byte{"b": {byte(i)}},
		}
		stored, err := storage.Encode(obj)
		if err != nil {
			t.Fatal(err)
		}
		e, err := cache.NewEntry(store.Key("ns", obj.Metadata.Name), stored, int64(100+i))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	converted := Version[*corev1.ConfigMap, *corev1.ConfigMap]{Slot: 1, Kind: kind,
		FromStorage: func(s *corev1.ConfigMap) (*corev1.ConfigMap, error) {
			e := proto.Clone(s).(*corev1.ConfigMap)
			e.Metadata.Annotations["converted"] = "yes"
			return e, nil
		}}
	for _, tc := range []struct {
		name    string
		ver     Version[*corev1.ConfigMap, *corev1.ConfigMap]
		entries []*watchcache.Entry[*corev1.ConfigMap]
		meta    *metav1.ListMeta
	}{
		{"storage version", StorageVersion[*corev1.ConfigMap](kind), entries, &metav1.ListMeta{ResourceVersion: "104"}},
		{"a page with continue", StorageVersion[*corev1.ConfigMap](kind), entries[:2], &metav1.ListMeta{ResourceVersion: "104", Continue: "token"}},
		{"converted version", converted, entries, &metav1.ListMeta{ResourceVersion: "104"}},
		{"empty", StorageVersion[*corev1.ConfigMap](kind), nil, &metav1.ListMeta{ResourceVersion: "7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := NewEndpoint[*corev1.ConfigMap, *corev1.ConfigMap, *corev1.ConfigMapList, corev1.ConfigMapWatchResponse](nil, tc.ver, newCM,
				func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
			res := &registry.ListResult[*corev1.ConfigMap]{Entries: tc.entries, Meta: tc.meta}
			enc, err := ep.encodeList(res)
			if err != nil {
				t.Fatal(err)
			}
			// The list as the endpoint built it before: decoded objects,
			// converted, in a list message.
			want := &corev1.ConfigMapList{ApiVersion: "v1", Kind: "ConfigMapList", Metadata: tc.meta}
			objs, err := res.Objects()
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				e, err := tc.ver.FromStorage(o)
				if err != nil {
					t.Fatal(err)
				}
				want.Items = append(want.Items, e)
			}
			for i, o := range want.Items {
				if rv := o.Metadata.ResourceVersion; rv != fmt.Sprint(100+i) {
					t.Fatalf("item %d at resourceVersion %q", i, rv)
				}
			}
			msg, err := enc.Message()
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(msg, want) {
				t.Fatalf("encoded list decodes as\n%v\nwant\n%v", msg, want)
			}
			sent, err := NewCodec().Marshal(enc)
			if err != nil {
				t.Fatal(err)
			}
			var got corev1.ConfigMapList
			if err := proto.Unmarshal(sent.Materialize(), &got); err != nil || !proto.Equal(&got, want) {
				t.Fatalf("the codec's message decodes as %v (%v), want %v", &got, err, want)
			}
			if tc.ver.Slot == 0 {
				for i, e := range tc.entries {
					if piece := enc.pieces[2+2*i]; &piece[0] != &e.Raw[0] {
						t.Errorf("item %d is a copy of the cached encoding, not the cached encoding", i)
					}
				}
			}
		})
	}
}
