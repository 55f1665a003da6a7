package patch

import (
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"skiff.dev/internal/openapi"
)

// gvkExtension is the extension that names a schema's kinds.
const gvkExtension = "x-kubernetes-group-version-kind"

// models are the schemas of every group version's OpenAPI 3.0 document,
// in one map by name, as kube-apiserver gives them to its field managers:
// OpenAPI 3.0 because it is the form that carries the defaults and the
// allOf references server-side apply and strategic merge patches read.
type models struct {
	schemas map[string]*spec.Schema
	roots   map[schema.GroupVersionKind]string // a kind's schema name
}

func newModels(docs *openapi.Documents) (*models, error) {
	m := &models{schemas: map[string]*spec.Schema{}, roots: map[schema.GroupVersionKind]string{}}
	for _, path := range docs.V3Paths() {
		body, _, _ := docs.V3(path)
		var doc struct {
			Components struct {
				Schemas map[string]*spec.Schema `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return nil, fmt.Errorf("openapi/v3/%s: %w", path, err)
		}
		for name, s := range doc.Components.Schemas {
			if err := m.add(name, s); err != nil {
				return nil, fmt.Errorf("openapi/v3/%s: %w", path, err)
			}
		}
	}
	for name, s := range m.schemas {
		for _, gvk := range kindsOf(s) {
			m.roots[gvk] = name
		}
	}
	return m, nil
}

// add merges a document's schema into the map. The documents share
// schemas (ObjectMeta, DeleteOptions); each holds the same one, but for
// the kinds it names in its own group version.
func (m *models) add(name string, s *spec.Schema) error {
	have, ok := m.schemas[name]
	if !ok {
		m.schemas[name] = s
		return nil
	}
	a, b := *have, *s
	a.Extensions, b.Extensions = withoutGVK(a.Extensions), withoutGVK(b.Extensions)
	if !reflect.DeepEqual(a, b) {
		return fmt.Errorf("two schemas named %s", name)
	}
	list, _ := have.Extensions[gvkExtension].([]any)
	more, _ := s.Extensions[gvkExtension].([]any)
	for _, e := range more {
		if !containsValue(list, e) {
			list = append(list, e)
		}
	}
	if len(list) > 0 {
		have.AddExtension(gvkExtension, list)
	}
	return nil
}

func withoutGVK(ext spec.Extensions) spec.Extensions {
	out := spec.Extensions{}
	for k, v := range ext {
		if k != gvkExtension {
			out[k] = v
		}
	}
	return out
}

func containsValue(list []any, v any) bool {
	for _, e := range list {
		if reflect.DeepEqual(e, v) {
			return true
		}
	}
	return false
}

func kindsOf(s *spec.Schema) []schema.GroupVersionKind {
	list, _ := s.Extensions[gvkExtension].([]any)
	var out []schema.GroupVersionKind
	for _, e := range list {
		m, _ := e.(map[string]any)
		g, _ := m["group"].(string)
		v, _ := m["version"].(string)
		k, _ := m["kind"].(string)
		if v != "" && k != "" {
			out = append(out, schema.GroupVersionKind{Group: g, Version: v, Kind: k})
		}
	}
	return out
}

// root is the schema of a kind, or a 500 for a kind the documents lack.
func (m *models) root(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	name, ok := m.roots[gvk]
	if !ok {
		return nil, fromError(fmt.Errorf("no schema for %s", gvk))
	}
	return m.schemas[name], nil
}
