package printers

import (
	"strings"
	"testing"

	tables "skiff.dev/internal/printers"
)

func tree(name string, replicas any, labels map[string]any, images ...string) any {
	var containers []any
	for _, img := range images {
		containers = append(containers, map[string]any{"image": img})
	}
	m := map[string]any{
		"metadata": map[string]any{"name": name, "creationTimestamp": "2024-05-01T12:00:00Z"},
		"spec":     map[string]any{"containers": containers},
	}
	if replicas != nil {
		m["spec"].(map[string]any)["replicas"] = replicas
	}
	if labels != nil {
		m["metadata"].(map[string]any)["labels"] = labels
	}
	return m
}

func TestRelaxedJSONPath(t *testing.T) {
	for in, want := range map[string]string{
		"metadata.name":    "{.metadata.name}",
		".metadata.name":   "{.metadata.name}",
		"{metadata.name}":  "{.metadata.name}",
		"{.metadata.name}": "{.metadata.name}",
		".items[*].x":      "{.items[*].x}",
	} {
		if got, err := RelaxedJSONPath(in); err != nil || got != want {
			t.Errorf("RelaxedJSONPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := RelaxedJSONPath("{a}{b}"); err == nil {
		t.Error("two actions are not a field")
	}
}

func TestCustomColumns(t *testing.T) {
	cols, err := ParseCustomColumns("NAME:.metadata.name,IMAGE:.spec.containers[*].image,REPLICAS:spec.replicas,LABELS:{.metadata.labels}")
	if err != nil {
		t.Fatal(err)
	}
	trees := []any{
		tree("web", int64(3), map[string]any{"app": "web"}, "nginx:1.14.2", "envoy:1.30"),
		tree("bare", nil, nil),
	}
	tb, err := CustomColumnsTable(cols, trees)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := tables.PrintTable(&b, tb, false); err != nil {
		t.Fatal(err)
	}
	want := "NAME   IMAGE                     REPLICAS   LABELS\n" +
		"web    nginx:1.14.2,envoy:1.30   3          map[app:web]\n" +
		"bare   <none>                    <none>     <none>\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	fromFile, err := ReadCustomColumns(strings.NewReader("NAME   IMAGE\n.metadata.name  {.spec.containers[0].image}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tb, err := CustomColumnsTable(fromFile, trees[:1]); err != nil || strings.Join(tb.Rows[0], " ") != "web nginx:1.14.2" {
		t.Errorf("from a file: %+v, %v", tb, err)
	}

	for spec, want := range map[string]string{
		"":                 "custom-columns format specified but no custom columns given",
		"NAME":             "unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>",
		"NAME:{.a}{.b}":    "unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'",
		"NAME:.items[oops": "column NAME: .items[oops: unterminated array",
	} {
		if _, err := ParseCustomColumns(spec); err == nil || err.Error() != want {
			t.Errorf("ParseCustomColumns(%q): %v, want %q", spec, err, want)
		}
	}
	if _, err := ReadCustomColumns(strings.NewReader("A B\n.a\n")); err == nil || err.Error() != "number of headers (2) and field specifications (1) don't match" {
		t.Errorf("a short spec line: %v", err)
	}
}

func TestSortOrder(t *testing.T) {
	names := func(trees []any, order []int) string {
		var out []string
		for _, i := range order {
			out = append(out, trees[i].(map[string]any)["metadata"].(map[string]any)["name"].(string))
		}
		return strings.Join(out, " ")
	}
	withTime := func(name, ts string) any {
		t := tree(name, nil, nil)
		t.(map[string]any)["metadata"].(map[string]any)["creationTimestamp"] = ts
		return t
	}
	cases := []struct {
		name, field string
		trees       []any
		want        string
	}{
		{"strings in natural order", ".metadata.name",
			[]any{tree("pod-10", nil, nil), tree("pod-2", nil, nil), tree("api", nil, nil)}, "api pod-2 pod-10"},
		{"numbers numerically", ".spec.replicas",
			[]any{tree("ten", int64(10), nil), tree("three", int64(3), nil), tree("half", 0.5, nil)}, "half three ten"},
		{"missing fields first, in their order", "{.spec.replicas}",
			[]any{tree("two", int64(2), nil), tree("none-a", nil, nil), tree("one", int64(1), nil), tree("none-b", nil, nil)}, "none-a none-b one two"},
		{"quantities as quantities", "metadata.labels.mem",
			[]any{tree("big", nil, map[string]any{"mem": "1Gi"}), tree("small", nil, map[string]any{"mem": "512Mi"}), tree("tiny", nil, map[string]any{"mem": "100"})}, "tiny small big"},
		{"times by time", ".metadata.creationTimestamp",
			[]any{withTime("late", "2024-05-01T12:00:01Z"), withTime("early", "2024-05-01T11:59:59.5Z"), withTime("mid", "2024-05-01T12:00:00Z")}, "early mid late"},
		{"the first of several values", ".spec.containers[*].image",
			[]any{tree("z", nil, nil, "b", "a"), tree("y", nil, nil, "a", "z")}, "y z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			order, err := SortOrder(tc.trees, tc.field)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(tc.trees, order); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	for field, want := range map[string]string{
		".spec.nope":      `couldn't find any field with path "{.spec.nope}" in the list of objects`,
		".metadata":       "field {.metadata} is an unsortable type: map[string]interface {}",
		".metadata.{bad}": "unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'",
	} {
		if _, err := SortOrder([]any{tree("a", nil, nil)}, field); err == nil || err.Error() != want {
			t.Errorf("SortOrder(%s): %v, want %q", field, err, want)
		}
	}
	if _, err := SortOrder([]any{tree("a", "3", nil), tree("b", int64(2), nil)}, ".spec.replicas"); err == nil {
		t.Error("a string and a number sorted together")
	}
	if order, err := SortOrder(nil, ".x"); err != nil || len(order) != 0 {
		t.Errorf("nothing to sort: %v, %v", order, err)
	}
}

func TestNaturalCompare(t *testing.T) {
	sorted := []string{"", "1", "01", "2", "10", "a", "a1", "a01", "a2", "a10", "a10b", "b"}
	for i := range sorted {
		for j := range sorted {
			if got, want := naturalCompare(sorted[i], sorted[j]), cmpIndex(i, j); got != want {
				t.Errorf("naturalCompare(%q, %q) = %d, want %d", sorted[i], sorted[j], got, want)
			}
		}
	}
}

func cmpIndex(i, j int) int {
	switch {
	case i < j:
		return -1
	case i > j:
		return 1
	}
	return 0
}
