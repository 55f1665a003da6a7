package kfields

import (
	"strings"
	"sync"
)

// KubernetesVersion is the Kubernetes release the table was generated
// from ("v1.36.6").
func KubernetesVersion() string { return kubernetesVersion }

// Root is the type of a kind ("core/v1.Pod" for group "", version "v1",
// kind "Pod"); ok is false for a kind Kubernetes does not have.
func Root(group, version, kind string) (typeName string, ok bool) {
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	typeName, ok = roots[gv+"/"+kind]
	return typeName, ok
}

// ForMessage is the Kubernetes type of the same package and name as a
// Skiff proto message ("skiff.core.v1.PodSpec" -> "core/v1.PodSpec"; a
// Skiff proto package is "skiff." and the first label of the Kubernetes
// group); ok is false when Kubernetes has no such type among those the
// table holds.
func ForMessage(fullName string) (typeName string, ok bool) {
	rest, found := strings.CutPrefix(fullName, "skiff.")
	if !found {
		return "", false
	}
	group, rest, found := strings.Cut(rest, ".")
	if !found {
		return "", false
	}
	version, name, found := strings.Cut(rest, ".")
	if !found || strings.Contains(name, ".") {
		return "", false
	}
	typeName = group + "/" + version + "." + name
	_, ok = parsed()[typeName]
	return typeName, ok
}

// Has reports whether the table holds the type.
func Has(typeName string) bool {
	_, ok := parsed()[typeName]
	return ok
}

// Field is the type of the value of a field of a type (of its elements,
// for a list or a map): "" for a leaf. ok is false when the type has no
// field of that JSON name (or the table does not hold the type).
func Field(typeName, jsonName string) (childType string, ok bool) {
	t := parsed()[typeName]
	if t == nil {
		return "", false
	}
	childType, ok = t.child[jsonName]
	return childType, ok
}

// Fields are the JSON names of a type's fields, in Kubernetes' order.
func Fields(typeName string) []string {
	t := parsed()[typeName]
	if t == nil {
		return nil
	}
	return append([]string(nil), t.names...)
}

// PatchStrategy is a field's strategic merge patch facts, Kubernetes'
// patchStrategy and patchMergeKey struct tags: strategy is "merge",
// "replace", "retainKeys" or "merge,retainKeys" (empty for the default,
// replace); mergeKey is the field that identifies a list's elements
// ("containerPort" for core/v1.Container's ports). Both are empty for a
// field without the tags or a type the table does not hold.
func PatchStrategy(typeName, jsonName string) (strategy, mergeKey string) {
	p := patches[typeName+"."+jsonName]
	return p[0], p[1]
}

// Doc is Kubernetes' description of a type (jsonName empty) or of one of
// its fields, from the Go comments of k8s.io/api; "" when there is none.
func Doc(typeName, jsonName string) string {
	if jsonName == "" {
		return docs[typeName]
	}
	return docs[typeName+"."+jsonName]
}

// Types are the names of every type the table holds, in no order.
func Types() []string {
	out := make([]string, 0, len(types))
	for name := range types {
		out = append(out, name)
	}
	return out
}

// Kinds are the kinds the table has a root for, as apiVersion/kind
// ("apps/v1/Deployment", "v1/Pod"), in no order.
func Kinds() []string {
	out := make([]string, 0, len(roots))
	for k := range roots {
		out = append(out, k)
	}
	return out
}

// Skipped are the kinds Skiff declares that Kubernetes does not have, as
// apiVersion/kind.
func Skipped() []string { return append([]string(nil), skipped...) }

type typeInfo struct {
	names []string
	child map[string]string
}

var parsed = sync.OnceValue(func() map[string]*typeInfo {
	out := make(map[string]*typeInfo, len(types))
	for name, spec := range types {
		t := &typeInfo{child: map[string]string{}}
		for _, f := range strings.Fields(spec) {
			json, child, _ := strings.Cut(f, ":")
			t.names = append(t.names, json)
			t.child[json] = child
		}
		out[name] = t
	}
	return out
})
