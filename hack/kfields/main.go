// Command kfields writes internal/kfields/kubernetes.gen.go: the fields of
// Kubernetes' types, read by reflection from k8s.io/api at the version
// this module pins (Kubernetes v1.36), for every kind Skiff declares
// (internal/kinds/decl). It is its own module, outside go.work, so that the
// workspace never sees this k8s.io/api version (the node agent uses
// another).
//
// Run it from the repository root:
//
//	GOWORK=off go -C hack/kfields run . -out ../../internal/kfields/kubernetes.gen.go
//
// A type's fields are its JSON fields as encoding/json sees them: embedded
// and `json:",inline"` structs flattened, `json:"-"` left out. A field's
// value type is its struct type after unwrapping pointers, slices, arrays
// and maps; a type with its own JSON encoding (metav1.Time, Quantity,
// IntOrString, RawExtension...) and any non-struct is a leaf.
//
// Beside the fields it records each field's strategic merge patch facts
// (its patchStrategy and patchMergeKey struct tags) and each type's and
// field's description (the SwaggerDoc method k8s.io/api generates from
// the Go comments): what an OpenAPI document in Kubernetes' shape needs
// and reflection can see. The +listType and +listMapKey markers are
// comments that reach no compiled code, so they are not recorded.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/format"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"skiff.dev/internal/kinds/decl"
)

func main() {
	out := flag.String("out", "", "the file to write (standard output if empty)")
	flag.Parse()
	src, err := generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfields:", err)
		os.Exit(1)
	}
	if *out == "" {
		os.Stdout.Write(src)
		return
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "kfields:", err)
		os.Exit(1)
	}
}

// table is what the generated file holds.
type table struct {
	roots   map[string]string    // "apps/v1/Deployment" -> "apps/v1.Deployment"
	skipped []string             // declared kinds k8s.io/api does not have
	types   map[string][]string  // type name -> "json" or "json:Type", in declaration order
	patches map[string][2]string // "type.json" -> {patchStrategy, patchMergeKey}
	docs    map[string]string    // "type" and "type.json" -> description
}

func generate() ([]byte, error) {
	scheme := runtime.NewScheme()
	for _, add := range addToScheme {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	t := &table{roots: map[string]string{}, types: map[string][]string{}, patches: map[string][2]string{}, docs: map[string]string{}}
	for _, k := range decl.All {
		gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
		key := gvk.GroupVersion().String() + "/" + k.Kind
		rt, ok := scheme.AllKnownTypes()[gvk]
		if !ok {
			t.skipped = append(t.skipped, key)
			continue
		}
		t.roots[key] = t.walk(rt)
	}
	return t.render()
}

var (
	marshaler   = reflect.TypeFor[json.Marshaler]()
	unmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

// walk records rt's fields and those of every struct reachable from it;
// it returns rt's name, or "" when rt is a leaf.
func (t *table) walk(rt reflect.Type) string {
	rt = unwrap(rt)
	if rt.Kind() != reflect.Struct || ownJSON(rt) {
		return ""
	}
	name := typeName(rt)
	if _, done := t.types[name]; done {
		return name
	}
	t.types[name] = nil // mark before recursing: types refer to themselves (JSONSchemaProps-like)
	var fields []string
	t.fields(name, rt, &fields)
	t.types[name] = fields
	return name
}

var swaggerDoc = reflect.TypeFor[interface{ SwaggerDoc() map[string]string }]()

// describe records the descriptions of rt's own fields (those of an
// inlined struct come from its own SwaggerDoc) under the type name, and
// rt's own description when rt is the named type itself.
func (t *table) describe(name string, rt reflect.Type, self bool) {
	if !rt.Implements(swaggerDoc) {
		return
	}
	doc := reflect.Zero(rt).Interface().(interface{ SwaggerDoc() map[string]string }).SwaggerDoc()
	for k, v := range doc {
		switch {
		case k == "" && self:
			t.docs[name] = v
		case k != "":
			t.docs[name+"."+k] = v
		}
	}
}

func (t *table) fields(name string, rt reflect.Type, out *[]string) {
	t.describe(name, rt, typeName(rt) == name)
	for i := range rt.NumField() {
		f := rt.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		jsonName, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && jsonName == "" {
			ft := unwrap(f.Type)
			if ft.Kind() == reflect.Struct && !ownJSON(ft) {
				t.fields(name, ft, out) // inline
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if jsonName == "" {
			jsonName = f.Name
		}
		if strategy, key := f.Tag.Get("patchStrategy"), f.Tag.Get("patchMergeKey"); strategy != "" || key != "" {
			t.patches[name+"."+jsonName] = [2]string{strategy, key}
		}
		if child := t.walk(f.Type); child != "" {
			*out = append(*out, jsonName+":"+child)
		} else {
			*out = append(*out, jsonName)
		}
	}
}

func unwrap(rt reflect.Type) reflect.Type {
	for {
		switch rt.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			rt = rt.Elem()
		default:
			return rt
		}
	}
}

func ownJSON(rt reflect.Type) bool {
	p := reflect.PointerTo(rt)
	return rt.Implements(marshaler) || p.Implements(marshaler) || rt.Implements(unmarshaler) || p.Implements(unmarshaler)
}

// typeName is the type's package path after k8s.io/api/ (or
// k8s.io/apimachinery/pkg/apis/), a dot and its name: "core/v1.PodSpec",
// "meta/v1.ObjectMeta".
func typeName(rt reflect.Type) string {
	p := rt.PkgPath()
	for _, prefix := range []string{"k8s.io/api/", "k8s.io/apimachinery/pkg/apis/"} {
		if s, ok := strings.CutPrefix(p, prefix); ok {
			p = s
			break
		}
	}
	return p + "." + rt.Name()
}

func (t *table) render() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `// Code generated by hack/kfields from k8s.io/api %s; DO NOT EDIT.
// Regenerate from the repository root with
//
//	GOWORK=off go -C hack/kfields run . -out ../../internal/kfields/kubernetes.gen.go
//
// (make kfields), after adding a kind to internal/kinds/decl or moving to
// another Kubernetes version.

package kfields

// kubernetesVersion is the Kubernetes release whose types these are.
const kubernetesVersion = %q

// roots maps each declared kind that Kubernetes has (apiVersion/kind) to
// its type.
var roots = map[string]string{
`, apiVersion(), kubernetesRelease())
	for _, k := range sortedKeys(t.roots) {
		fmt.Fprintf(&b, "%q: %q,\n", k, t.roots[k])
	}
	b.WriteString("}\n\n// skipped are the declared kinds k8s.io/api does not have.\nvar skipped = []string{")
	for i, k := range t.skipped {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", k)
	}
	b.WriteString(`}

// types holds each type's JSON fields in declaration order, separated by
// spaces: "name" for a leaf, "name:Type" for a field whose value (or
// element, for lists and maps) is the struct Type.
var types = map[string]string{
`)
	for _, k := range sortedKeys(t.types) {
		fmt.Fprintf(&b, "%q: %q,\n", k, strings.Join(t.types[k], " "))
	}
	b.WriteString(`}

// patches holds the strategic merge patch facts of the fields that have
// them ("type.json"): the patchStrategy and patchMergeKey tags.
var patches = map[string][2]string{
`)
	for _, k := range sortedKeys(t.patches) {
		fmt.Fprintf(&b, "%q: {%q, %q},\n", k, t.patches[k][0], t.patches[k][1])
	}
	b.WriteString(`}

// docs holds Kubernetes' descriptions of the types ("type") and of their
// fields ("type.json"), from k8s.io/api's SwaggerDoc methods.
var docs = map[string]string{
`)
	for _, k := range sortedKeys(t.docs) {
		fmt.Fprintf(&b, "%q: %q,\n", k, t.docs[k])
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// apiVersion is the k8s.io/api module version linked in.
func apiVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/api" {
				if d.Replace != nil {
					d = d.Replace
				}
				return d.Version
			}
		}
	}
	return "(unknown version)"
}

// kubernetesRelease is the Kubernetes release of k8s.io/api vX.Y.Z: vX+1.Y.Z
// (v0.36.6 is Kubernetes v1.36.6).
func kubernetesRelease() string {
	v := apiVersion()
	if s, ok := strings.CutPrefix(v, "v0."); ok {
		return "v1." + s
	}
	return v
}
