package httpapi

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/google/go-cmp/cmp"

	"skiff.dev/internal/kinds"
	"skiff.dev/internal/object"
)

// TestCreateFieldsByShape: a create whose shape was tracked before gets,
// from the cache, the very object the field manager would have made:
// the same managedFields (one entry for its manager, the same fieldsV1)
// and nothing else changed; a create of another shape, or one that
// brings managed fields or kubectl's last-applied annotation, goes to the
// field manager.
func TestCreateFieldsByShape(t *testing.T) {
	h := New(Config{})
	p, err := h.patcher()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 10, 0, 0, 500, time.UTC)
	// Pairs of one shape, the second's scalars changed.
	cases := []struct {
		group, version, kind string
		first, second        string
	}{
		{"", "v1", "ConfigMap",
			`{"metadata":{"name":"a","namespace":"default","labels":{"app":"x"}},"data":{"k":"v","l":"w"}}`,
			`{"metadata":{"name":"b","namespace":"default","labels":{"app":"y"}},"data":{"k":"other","l":"values"}}`},
		{"apps", "v1", "Deployment",
			`{"metadata":{"name":"web","namespace":"default"},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"demo:v1","ports":[{"containerPort":8080}],"env":[{"name":"A","value":"1"}]}]}}}}`,
			`{"metadata":{"name":"api","namespace":"default"},"spec":{"replicas":5,"selector":{"matchLabels":{"app":"api"}},"template":{"metadata":{"labels":{"app":"api"}},"spec":{"containers":[{"name":"app","image":"demo:v1","ports":[{"containerPort":8080}],"env":[{"name":"A","value":"1"}]}]}}}}`},
		{"", "v1", "Service",
			`{"metadata":{"name":"s1","namespace":"default"},"spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80,"targetPort":8080}]}}`,
			`{"metadata":{"name":"s2","namespace":"default"},"spec":{"selector":{"app":"api"},"ports":[{"name":"http","port":80,"targetPort":8080}]}}`},
		{"", "v1", "ConfigMap", // only fields the field manager leaves out: no entry
			`{"metadata":{"name":"empty1","namespace":"default"}}`,
			`{"metadata":{"name":"empty2","namespace":"default"}}`},
	}
	decode := func(k *kinds.Kind, s string) proto.Message {
		t.Helper()
		m := k.New()
		if _, err := decodeJSON([]byte(s), m, validationStrict); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return m
	}
	// fieldManager is what the field manager makes of a create of s.
	fieldManager := func(k *kinds.Kind, s string) proto.Message {
		t.Helper()
		out, err := p.Update(gvkOf(k), nil, encodeJSON(decode(k, s)), "kubectl-create", "", now)
		if err != nil {
			t.Fatal(err)
		}
		return decode(k, string(out))
	}
	for _, c := range cases {
		k := kinds.Get(c.group, c.version, c.kind)
		hits := h.creates.hits
		if _, err := h.tracked(p, k, "Create", nil, decode(k, c.first), "kubectl-create", now); err != nil {
			t.Fatal(err)
		}
		got, err := h.tracked(p, k, "Create", nil, decode(k, c.second), "kubectl-create", now)
		if err != nil {
			t.Fatal(err)
		}
		if h.creates.hits != hits+1 {
			t.Errorf("%s: the second create of a shape was not answered from the cache", c.kind)
		}
		if diff := cmp.Diff(fieldManager(k, c.second), got, protocmp.Transform()); diff != "" {
			t.Errorf("%s: from the cache (+), from the field manager (-):\n%s", c.kind, diff)
		}
		if c.kind == "Deployment" && len(object.Meta(got.(object.Object)).ManagedFields) != 1 {
			t.Errorf("%s: managedFields %v", c.kind, object.Meta(got.(object.Object)).ManagedFields)
		}
	}
	// Not from the cache: another shape (a label more), an object with
	// managed fields of its own or the last-applied annotation.
	k := kinds.Get("", "v1", "ConfigMap")
	for _, s := range []string{
		`{"metadata":{"name":"c","namespace":"default","labels":{"app":"x","tier":"db"}},"data":{"k":"v","l":"w"}}`,
		`{"metadata":{"name":"d","namespace":"default","labels":{"app":"x"},"managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{}}}]},"data":{"k":"v","l":"w"}}`,
		`{"metadata":{"name":"e","namespace":"default","labels":{"app":"x"},"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},"data":{"k":"v","l":"w"}}`,
	} {
		for range 2 {
			hits := h.creates.hits
			got, err := h.tracked(p, k, "Create", nil, decode(k, s), "kubectl-create", now)
			if err != nil {
				t.Fatal(err)
			}
			if h.creates.hits != hits {
				t.Errorf("%s: answered from the cache", s)
			}
			if diff := cmp.Diff(fieldManager(k, s), got, protocmp.Transform()); diff != "" {
				t.Errorf("%s: tracked (+), the field manager (-):\n%s", s, diff)
			}
			if strings.Contains(s, "tier") {
				break // the second of it would hit: its shape is new, not excluded
			}
		}
	}
}
