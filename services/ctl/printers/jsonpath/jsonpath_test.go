package jsonpath

import (
	"encoding/json"
	"strings"
	"testing"
)

// docInput is the object of kubectl's JSONPath documentation
// (kubernetes.io/docs/reference/kubectl/jsonpath/).
const docInput = `{
  "kind": "List",
  "items":[
    {
      "kind":"None",
      "metadata":{
        "name":"127.0.0.1",
        "labels":{"kubernetes.io/hostname":"127.0.0.1"}
      },
      "status":{
        "capacity":{"cpu":"4"},
        "addresses":[{"type": "LegacyHostIP", "address":"127.0.0.1"}]
      }
    },
    {
      "kind":"None",
      "metadata":{"name":"127.0.0.2"},
      "status":{
        "capacity":{"cpu":"8"},
        "addresses":[
          {"type": "LegacyHostIP", "address":"127.0.0.2"},
          {"type": "another", "address":"127.0.0.3"}
        ]
      }
    }
  ],
  "users":[
    {"name": "myself", "user": {}},
    {"name": "e2e", "user": {"username": "admin", "password": "secret"}}
  ]
}`

// podInput has numbers (as skiffctl's trees have them: int64).
var podInput = map[string]any{
	"metadata": map[string]any{"name": "web", "annotations": map[string]any{"a.b/c": "dotted"}},
	"spec": map[string]any{"containers": []any{
		map[string]any{"name": "app", "image": "nginx:1.14.2", "ports": []any{map[string]any{"containerPort": int64(80)}}},
		map[string]any{"name": "sidecar", "image": "envoy:1.30", "ports": []any{map[string]any{"containerPort": int64(9901)}}},
	}},
	"status": map[string]any{"phase": "Running", "ready": true, "ratio": 0.5},
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestExecute(t *testing.T) {
	doc := decode(t, docInput)
	cases := []struct {
		name, template string
		data           any
		want           string
	}{
		// The documentation's table.
		{"the kind", "{.kind}", doc, "List"},
		{"a key in brackets", "{['kind']}", doc, "List"},
		{"recursive descent", "{..name}", doc, "127.0.0.1 127.0.0.2 myself e2e"},
		{"wildcard", "{.items[*].metadata.name}", doc, "127.0.0.1 127.0.0.2"},
		{"an index", "{.users[0].name}", doc, "myself"},
		{"a union of key paths", "{.items[*]['metadata.name', 'status.capacity']}", doc, `127.0.0.1 127.0.0.2 {"cpu":"4"} {"cpu":"8"}`},
		{"a filter", `{.users[?(@.name=="e2e")].user.password}`, doc, "secret"},
		{"range", "{range .items[*]}[{.metadata.name}, {.status.capacity}] {end}", doc, `[127.0.0.1, {"cpu":"4"}] [127.0.0.2, {"cpu":"8"}] `},
		{"a quoted literal", `{range .items[*]}{.metadata.name}{"\t"}{end}`, doc, "127.0.0.1\t127.0.0.2\t"},
		{"an escaped dot", `{.items[0].metadata.labels.kubernetes\.io/hostname}`, doc, "127.0.0.1"},
		// More of client-go's dialect.
		{"text around actions", "kind={.kind}!", doc, "kind=List!"},
		{"text alone", "no actions", doc, "no actions"},
		{"$ is the root", "{$.kind}", doc, "List"},
		{"@ is the current value", "{@.kind}", doc, "List"},
		{"the last element", "{.items[-1].metadata.name}", doc, "127.0.0.2"},
		{"a slice", "{.items[0:1].metadata.name}", doc, "127.0.0.1"},
		{"a slice from the end", "{.items[-1:].metadata.name}", doc, "127.0.0.2"},
		{"a step", "{.items[::2].metadata.name}", doc, "127.0.0.1"},
		{"an empty slice", "{.items[1:1]}", doc, ""},
		{"a union of indexes", "{.users[1,0].name}", doc, "e2e myself"},
		{"a map as JSON", "{.items[0].metadata}", doc, `{"labels":{"kubernetes.io/hostname":"127.0.0.1"},"name":"127.0.0.1"}`},
		{"a list as JSON", "{.items[1].status.addresses[*].type}", doc, "LegacyHostIP another"},
		{"a filter under a wildcard", `{.items[*].status.addresses[?(@.type=="another")].address}`, doc, "127.0.0.3"},
		{"a filter with spaces and single quotes", `{.users[?(@.name != 'e2e')].name}`, doc, "myself"},
		{"a filter on existence", "{.users[?(@.user.username)].name}", doc, "e2e"},
		{"nested ranges", "{range .items[*]}{.metadata.name}:{range .status.addresses[*]}{.address},{end};{end}", doc, "127.0.0.1:127.0.0.1,;127.0.0.2:127.0.0.2,127.0.0.3,;"},
		{"a range over nothing", "{range .users[5:5]}x{end}done", doc, "done"},
		{"{.} is the value", "{.items[0].status.capacity.}", doc, `{"cpu":"4"}`},
		{"a map's values", "{.items[0].status.capacity.*}", doc, "4"},
		{"numbers compare as numbers", "{.spec.containers[?(@.ports[0].containerPort>100)].name}", podInput, "sidecar"},
		{"an int equals a float", "{.spec.containers[?(@.ports[0].containerPort==80.0)].image}", podInput, "nginx:1.14.2"},
		{"booleans", "{.status.ready} {.status.ratio} {.spec.containers[0].ports[0].containerPort}", podInput, "true 0.5 80"},
		{"a container's image", "{.spec.containers[0].image}", podInput, "nginx:1.14.2"},
		{"every image", "{..image}", podInput, "nginx:1.14.2 envoy:1.30"},
		{"an annotation with dots", `{.metadata.annotations.a\.b/c}`, podInput, "dotted"},
		{"a filter on a phase", `{.status.phase}`, podInput, "Running"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Parse(tc.template)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.template, err)
			}
			var b strings.Builder
			if err := tmpl.Execute(&b, tc.data); err != nil {
				t.Fatalf("Execute(%q): %v", tc.template, err)
			}
			if b.String() != tc.want {
				t.Errorf("%s\n got %q\nwant %q", tc.template, b.String(), tc.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	doc := decode(t, docInput)
	cases := []struct {
		name, template, want string
		allowMissing         bool
	}{
		{"a missing key", "{.hello}", "hello is not found", false},
		{"a missing key, allowed", "{.hello}", "", true},
		{"a missing key under a wildcard", "{.items[*].hello}", "hello is not found", false},
		{"out of bounds", "{.items[5]}", "array index out of bounds: index 5, length 2", false},
		{"out of bounds, even when missing keys are allowed", "{.items[5]}", "array index out of bounds: index 5, length 2", true},
		{"a slice past the end", "{.items[0:3]}", "array index out of bounds: index 2, length 2", false},
		{"an index into a string", "{.kind[0]}", "string is not array or slice", false},
		{"an index into a map", "{.items[0].metadata[0]}", "map[string]interface {} is not array or slice", false},
		{"a filter on a map", `{.items[0].metadata[?(@.x=="y")]}`, "map[string]interface {} is not array or slice and cannot be filtered", false},
		{"a string against a number", `{.users[?(@.name==3)]}`, "incompatible types for comparison", false},
		{"a step of zero", "{.items[::0]}", "step must be > 0", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Parse(tc.template)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			err = tmpl.AllowMissingKeys(tc.allowMissing).Execute(&b, doc)
			if tc.want == "" {
				if err != nil || b.Len() != 0 {
					t.Errorf("got %q, %v; want nothing", b.String(), err)
				}
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		"{.items":                 "unclosed action",
		"{.items[}":               "unterminated array",
		"{.items[a]}":             "invalid array index a",
		"{.items[?(@.a==1}":       "unterminated filter",
		`{"abc}`:                  "unterminated quoted string",
		"{end}":                   "not in range, nothing to end",
		"{range .items[*]}x":      "range without end",
		"{.a..b..c}":              "",
		"{....a}":                 "invalid multiple recursive descent",
		"{.a}{foo}":               "unrecognized identifier foo",
		"{.a | b}":                "unrecognized character in action: U+007C '|'",
		"{.items[?(@.a=~\"x\")]}": "unrecognized filter operator =",
	}
	for tmpl, want := range cases {
		_, err := Parse(tmpl)
		switch {
		case want == "" && err != nil:
			t.Errorf("Parse(%q): %v", tmpl, err)
		case want != "" && (err == nil || err.Error() != want):
			t.Errorf("Parse(%q): %v, want %q", tmpl, err, want)
		}
	}
}
