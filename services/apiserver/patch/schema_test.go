package patch

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// kubernetesTypeConverter is server-side apply's schema of Kubernetes'
// own types, as client-go carries it (generated from Kubernetes'
// OpenAPI): the reference the tests hold Skiff's to.
var kubernetesTypeConverter = applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)

// smdSchema is the structured-merge-diff schema a type converter holds
// (every type, whatever the object it is read from).
func smdSchema(t *testing.T, tc managedfields.TypeConverter) *smdschema.Schema {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(deploymentGVK)
	tv, err := tc.ObjectToTyped(u)
	if err != nil {
		t.Fatal(err)
	}
	return tv.Schema()
}

// TestSchemaIsKubernetes: for every type and field Skiff and Kubernetes
// share, server-side apply sees the same thing: lists of the same type
// (atomic, a set, or a map with the same keys), maps and structs of the
// same type (atomic or granular), and the same defaults of scalars (the
// defaults of a list map's keys say which element an applied element
// without the key is). So Skiff's OpenAPI carries what Kubernetes' does.
func TestSchemaIsKubernetes(t *testing.T) {
	ours, theirs := smdSchema(t, patcher(t).converter), smdSchema(t, kubernetesTypeConverter)
	var compared, fields, keyed, atomic, defaults int
	for _, td := range ours.Types {
		ktd, ok := theirs.FindNamedType(td.Name)
		if !ok || td.Map == nil || ktd.Map == nil {
			continue
		}
		compared++
		if a, b := mapRelationship(td.Map), mapRelationship(ktd.Map); a != b {
			t.Errorf("%s is %s, in Kubernetes %s", td.Name, a, b)
		}
		for _, f := range td.Map.Fields {
			kf, ok := ktd.Map.FindField(f.Name)
			if !ok {
				continue
			}
			fields++
			where := td.Name + "." + f.Name
			a, aok := ours.Resolve(f.Type)
			b, bok := theirs.Resolve(kf.Type)
			if !aok || !bok {
				t.Errorf("%s does not resolve", where)
				continue
			}
			switch {
			case a.List != nil && b.List != nil:
				if len(b.List.Keys) > 0 {
					keyed++
				}
				if b.List.ElementRelationship == smdschema.Atomic {
					atomic++
				}
				if a.List.ElementRelationship != b.List.ElementRelationship || !slices.Equal(a.List.Keys, b.List.Keys) {
					t.Errorf("%s is a list %s %v, in Kubernetes %s %v", where, a.List.ElementRelationship, a.List.Keys, b.List.ElementRelationship, b.List.Keys)
				}
			case a.Map != nil && b.Map != nil:
				if x, y := mapRelationship(a.Map), mapRelationship(b.Map); x != y {
					t.Errorf("%s is a map %s, in Kubernetes %s", where, x, y)
				}
			case a.Scalar != nil && b.Scalar != nil:
				if kf.Default != nil {
					defaults++
				}
				if x, y := scalarDefault(f.Default), scalarDefault(kf.Default); x != y {
					t.Errorf("%s defaults to %s, in Kubernetes %s", where, x, y)
				}
			}
		}
	}
	// A schema that shared nothing with Kubernetes' would pass the loop.
	if compared < 150 || fields < 700 || keyed < 20 || atomic < 30 || defaults < 100 {
		t.Errorf("compared %d types and %d fields only (%d keyed lists, %d atomic, %d defaults)", compared, fields, keyed, atomic, defaults)
	}
	t.Logf("compared %d types, %d fields (%d keyed lists, %d atomic lists, %d defaults)", compared, fields, keyed, atomic, defaults)
}

func mapRelationship(m *smdschema.Map) smdschema.ElementRelationship {
	if m.ElementRelationship == "" {
		return smdschema.Separable
	}
	return m.ElementRelationship
}

// scalarDefault is a scalar default as text ("" for none): YAML's
// integers and JSON's floats print alike.
func scalarDefault(v any) string {
	switch v.(type) {
	case nil, map[string]any, []any:
		return "none"
	}
	return fmt.Sprintf("%v", v)
}
