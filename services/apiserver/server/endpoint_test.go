package server

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
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
