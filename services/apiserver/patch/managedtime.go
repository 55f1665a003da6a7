package patch

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// managedTimes give the managedFields entries a write changes the time
// the caller says (its now), where apimachinery's field manager stamps
// them with time.Now() and offers no clock to inject. Before the field
// manager runs, stampTimes replaces the entries' times with stand-ins,
// the seconds 1, 2, 3... of 1970 in the order of the times they replace
// (so that the field manager, which orders entries and merges the oldest
// by their times, sees the same order); after, restore puts the times
// back, and every time that is no stand-in is one the field manager set:
// it becomes now.
type managedTimes struct {
	original map[int64]string // stand-in, in Unix seconds -> the time it replaced
}

func stampTimes(objs ...*unstructured.Unstructured) *managedTimes {
	type stamp struct {
		t time.Time
		s string
	}
	var all []stamp
	for _, obj := range objs {
		for _, e := range managedEntries(obj) {
			if s, ok := e["time"].(string); ok {
				if t, err := time.Parse(time.RFC3339, s); err == nil {
					all = append(all, stamp{t, s})
				}
			}
		}
	}
	slices.SortFunc(all, func(a, b stamp) int { return a.t.Compare(b.t) })
	m := &managedTimes{original: map[int64]string{}}
	standIn := map[int64]int64{} // original Unix seconds -> stand-in
	for _, st := range all {
		if _, ok := standIn[st.t.Unix()]; !ok {
			n := int64(len(standIn) + 1)
			standIn[st.t.Unix()] = n
			m.original[n] = st.s
		}
	}
	for _, obj := range objs {
		for _, e := range managedEntries(obj) {
			if s, ok := e["time"].(string); ok {
				if t, err := time.Parse(time.RFC3339, s); err == nil {
					e["time"] = time.Unix(standIn[t.Unix()], 0).UTC().Format(time.RFC3339)
				}
			}
		}
	}
	return m
}

// restore puts back the times stampTimes replaced in obj's entries, sets
// the others to now, and sorts the entries as Kubernetes does: by
// operation, time, manager, apiVersion and subresource.
func (m *managedTimes) restore(obj *unstructured.Unstructured, now time.Time) {
	for _, e := range managedEntries(obj) {
		s, ok := e["time"].(string)
		if !ok {
			continue
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			continue
		}
		if orig, ok := m.original[t.Unix()]; ok {
			e["time"] = orig
		} else {
			e["time"] = now.UTC().Format(time.RFC3339)
		}
	}
	list, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "managedFields")
	items, _ := list.([]any)
	slices.SortStableFunc(items, func(x, y any) int {
		a, _ := x.(map[string]any)
		b, _ := y.(map[string]any)
		return cmp.Or(
			cmp.Compare(str(a, "operation"), str(b, "operation")),
			cmp.Compare(entrySeconds(a), entrySeconds(b)),
			cmp.Compare(str(a, "manager"), str(b, "manager")),
			cmp.Compare(str(a, "apiVersion"), str(b, "apiVersion")),
			cmp.Compare(str(a, "subresource"), str(b, "subresource")),
		)
	})
}

// managedEntries are obj's managedFields entries, the maps themselves.
func managedEntries(obj *unstructured.Unstructured) []map[string]any {
	list, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "managedFields")
	items, _ := list.([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if e, ok := it.(map[string]any); ok {
			out = append(out, e)
		}
	}
	return out
}

// entrySeconds is an entry's time in Unix seconds, 0 without one (as
// Kubernetes orders them).
func entrySeconds(e map[string]any) int64 {
	s, _ := e["time"].(string)
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0
	}
	return t.Unix()
}

func str(e map[string]any, key string) string {
	s, _ := e[key].(string)
	return s
}
