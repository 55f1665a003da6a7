package openapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	// The markers are read from k8s.io/api's source; importing it makes
	// go test fetch the module this test reads.
	_ "k8s.io/api/core/v1"

	"skiff.dev/internal/kfields"
)

var update = flag.Bool("update", false, "rewrite markers.gen.go from k8s.io/api's source")

// TestKubernetesMarkers: markers.gen.go holds the +listType, +listMapKey,
// +mapType, +structType and +default markers of Kubernetes' types, as
// read from the Go source of the k8s.io/api and k8s.io/apimachinery this
// module requires, for every type internal/kfields holds. With -update it
// rewrites the file:
//
//	go test ./internal/openapi -run TestKubernetesMarkers -update
func TestKubernetesMarkers(t *testing.T) {
	src, err := generateMarkers()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("markers.gen.go", src, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile("markers.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, src) {
		t.Error("markers.gen.go is not what k8s.io/api's source gives: run go test ./internal/openapi -run TestKubernetesMarkers -update")
	}
}

// The markers of a few fields, as Kubernetes' source writes them, so that
// a generator that read nothing cannot pass.
func TestMarkersOfWellKnownFields(t *testing.T) {
	for _, c := range []struct {
		key  string
		want fieldMarker
	}{
		{"core/v1.Container.ports", fieldMarker{listType: "map", listMapKeys: []string{"containerPort", "protocol"}}},
		{"core/v1.Container.env", fieldMarker{listType: "map", listMapKeys: []string{"name"}}},
		{"core/v1.PodSpec.tolerations", fieldMarker{listType: "atomic"}},
		{"core/v1.PodSpec.nodeSelector", fieldMarker{mapType: "atomic"}},
		{"core/v1.ContainerPort.protocol", fieldMarker{def: `"TCP"`}},
		{"core/v1.ContainerPort.containerPort", fieldMarker{def: `0`}},
		{"meta/v1.ObjectMeta.finalizers", fieldMarker{listType: "set"}},
		{"meta/v1.ObjectMeta.ownerReferences", fieldMarker{listType: "map", listMapKeys: []string{"uid"}}},
		{"meta/v1.OwnerReference.uid", fieldMarker{def: `""`}},
	} {
		if got := fieldMarkers[c.key]; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.key, got, c.want)
		}
	}
	if got := structTypes["meta/v1.LabelSelector"]; got != "atomic" {
		t.Errorf("meta/v1.LabelSelector is %q, want atomic", got)
	}
}

// generateMarkers is the source of markers.gen.go.
func generateMarkers() ([]byte, error) {
	dirs, versions, err := moduleDirs("k8s.io/api", "k8s.io/apimachinery")
	if err != nil {
		return nil, err
	}
	wanted := map[string]bool{} // kfields type names
	pkgs := map[string]*goPackage{}
	var order []string
	add := func(importPath, dir, name string) error {
		if pkgs[importPath] != nil {
			return nil
		}
		p, err := parsePackage(importPath, dir, name)
		if err != nil {
			return err
		}
		pkgs[importPath] = p
		order = append(order, importPath)
		return nil
	}
	// Packages whose types' markers the table holds: those of every
	// type kfields knows.
	for _, name := range kfields.Types() {
		wanted[name] = true
		gv, _, _ := strings.Cut(name, ".")
		importPath, dir := "k8s.io/api/"+gv, filepath.Join(dirs["k8s.io/api"], gv)
		if gv == "meta/v1" {
			importPath, dir = "k8s.io/apimachinery/pkg/apis/meta/v1", filepath.Join(dirs["k8s.io/apimachinery"], "pkg/apis/meta/v1")
		}
		if err := add(importPath, dir, gv); err != nil {
			return nil, err
		}
	}
	// Packages only read for the underlying types of fields (types.UID).
	if err := add("k8s.io/apimachinery/pkg/types", filepath.Join(dirs["k8s.io/apimachinery"], "pkg/types"), ""); err != nil {
		return nil, err
	}
	structs := map[string]string{}
	fields := map[string]fieldMarker{}
	for _, ip := range order {
		p := pkgs[ip]
		if p.name == "" {
			continue
		}
		for typeName, st := range p.structs {
			full := p.name + "." + typeName
			if !wanted[full] {
				continue
			}
			if v := marker(st.doc, "structType"); v != "" {
				structs[full] = v
			}
			for _, f := range flatten(pkgs, p, st) {
				if m := f.marker(pkgs); !m.empty() {
					fields[full+"."+f.json] = m
				}
			}
		}
	}
	return markersSource(versions, structs, fields)
}

// moduleDirs are the directories and versions of modules this module
// requires, as go list finds them in the module cache.
func moduleDirs(paths ...string) (dirs, versions map[string]string, err error) {
	out, err := exec.Command("go", append([]string{"list", "-m", "-json"}, paths...)...).Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list -m %v: %w", paths, err)
	}
	dirs, versions = map[string]string{}, map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var m struct{ Path, Version, Dir string }
		if err := dec.Decode(&m); err != nil {
			return nil, nil, err
		}
		if m.Dir == "" {
			return nil, nil, fmt.Errorf("module %s %s is not in the module cache", m.Path, m.Version)
		}
		dirs[m.Path], versions[m.Path] = m.Dir, m.Version
	}
	return dirs, versions, nil
}

// goPackage is what the generator reads of one Go package.
type goPackage struct {
	importPath string
	name       string               // kfields' prefix ("core/v1"); empty for a package only read for its types
	structs    map[string]*goStruct // by type name
	named      map[string]ast.Expr  // every declared type's underlying expression, by name
	consts     map[string]ast.Expr  // constants' values, by name
}

type goStruct struct {
	doc     []string
	fields  *ast.FieldList
	imports map[string]string // the file's imports: name -> path
}

func parsePackage(importPath, dir, name string) (*goPackage, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	p := &goPackage{importPath: importPath, name: name, structs: map[string]*goStruct{}, named: map[string]ast.Expr{}, consts: map[string]ast.Expr{}}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		imports := map[string]string{}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			n := ip[strings.LastIndex(ip, "/")+1:]
			if imp.Name != nil {
				n = imp.Name.Name
			}
			imports[n] = ip
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					p.named[spec.Name.Name] = spec.Type
					st, ok := spec.Type.(*ast.StructType)
					if !ok {
						continue
					}
					doc := spec.Doc
					if doc == nil && len(gd.Specs) == 1 {
						doc = gd.Doc
					}
					p.structs[spec.Name.Name] = &goStruct{doc: commentLines(doc), fields: st.Fields, imports: imports}
				case *ast.ValueSpec:
					if gd.Tok != token.CONST {
						continue
					}
					for i, n := range spec.Names {
						if i < len(spec.Values) {
							p.consts[n.Name] = spec.Values[i]
						}
					}
				}
			}
		}
	}
	return p, nil
}

func commentLines(g *ast.CommentGroup) []string {
	if g == nil {
		return nil
	}
	var out []string
	for _, c := range g.List {
		out = append(out, strings.TrimSpace(strings.TrimPrefix(c.Text, "//")))
	}
	return out
}

// marker is the value of the last "+name=value" line of doc, as gengo
// reads markers; markers returns every value, in order.
func marker(doc []string, name string) string {
	vs := markers(doc, name)
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

func markers(doc []string, name string) []string {
	var out []string
	for _, line := range doc {
		if v, ok := strings.CutPrefix(line, "+"+name+"="); ok {
			out = append(out, v)
		}
	}
	return out
}

// goField is one JSON field of a struct, after flattening embedded
// structs as encoding/json does.
type goField struct {
	json      string
	doc       []string
	typ       ast.Expr
	omitEmpty bool
	pkg       *goPackage // where typ is written
	imports   map[string]string
}

func flatten(pkgs map[string]*goPackage, p *goPackage, st *goStruct) []goField {
	var out []goField
	for _, f := range st.fields.List {
		tag := ""
		if f.Tag != nil {
			s, _ := strconv.Unquote(f.Tag.Value)
			tag = reflect.StructTag(s).Get("json")
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if len(f.Names) == 0 && name == "" { // embedded: its fields are this struct's
			if ep, est := resolveStruct(pkgs, p, st.imports, f.Type); est != nil {
				out = append(out, flatten(pkgs, ep, est)...)
			}
			continue
		}
		if name == "" || (len(f.Names) > 0 && !ast.IsExported(f.Names[0].Name)) {
			continue
		}
		out = append(out, goField{
			json:      name,
			doc:       commentLines(f.Doc),
			typ:       f.Type,
			omitEmpty: slices.Contains(strings.Split(opts, ","), "omitempty"),
			pkg:       p,
			imports:   st.imports,
		})
	}
	return out
}

// resolveStruct is the struct an embedded field's type names.
func resolveStruct(pkgs map[string]*goPackage, p *goPackage, imports map[string]string, e ast.Expr) (*goPackage, *goStruct) {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	switch e := e.(type) {
	case *ast.Ident:
		return p, p.structs[e.Name]
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			if q := pkgs[imports[x.Name]]; q != nil {
				return q, q.structs[e.Sel.Name]
			}
		}
	}
	return nil, nil
}

// fieldMarker of f: its list and map markers, and its default as
// openapi-gen writes it (the +default marker, or the zero value of a
// scalar field that is not a pointer and not omitempty).
func (f goField) marker(pkgs map[string]*goPackage) fieldMarker {
	m := fieldMarker{
		listType:    marker(f.doc, "listType"),
		listMapKeys: markers(f.doc, "listMapKey"),
		mapType:     marker(f.doc, "mapType"),
	}
	if m.mapType == "" {
		m.mapType = marker(f.doc, "structType")
	}
	if d := marker(f.doc, "default"); d != "" {
		m.def = f.defaultValue(d)
	} else if !f.omitEmpty {
		m.def = zeroOf(pkgs, f.pkg, f.imports, f.typ)
	}
	return m
}

// defaultValue is a +default marker's value as JSON: a JSON value, or
// ref(Const) naming a constant of the field's package.
func (f goField) defaultValue(d string) string {
	if ref, ok := strings.CutPrefix(d, "ref("); ok {
		name := strings.TrimSuffix(ref, ")")
		if lit, ok := f.pkg.consts[name].(*ast.BasicLit); ok {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				b, _ := json.Marshal(s)
				return string(b)
			}
			return lit.Value
		}
		return ""
	}
	var v any
	if err := json.Unmarshal([]byte(d), &v); err != nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// zeroOf is the JSON zero value of a scalar type (a builtin, or a named
// type whose underlying type is one), "" for any other.
func zeroOf(pkgs map[string]*goPackage, p *goPackage, imports map[string]string, e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		switch e.Name {
		case "string":
			return `""`
		case "bool":
			return "false"
		case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "byte":
			return "0"
		}
		if u, ok := p.named[e.Name]; ok {
			return zeroOf(pkgs, p, imports, u)
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			if q := pkgs[imports[x.Name]]; q != nil {
				if u, ok := q.named[e.Sel.Name]; ok {
					return zeroOf(pkgs, q, nil, u)
				}
			}
		}
	}
	return ""
}

// markersSource prints the generated file.
func markersSource(versions map[string]string, structs map[string]string, fields map[string]fieldMarker) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by TestKubernetesMarkers from k8s.io/api %s and k8s.io/apimachinery %s; DO NOT EDIT.\n", versions["k8s.io/api"], versions["k8s.io/apimachinery"])
	b.WriteString("// Regenerate from the repository root with\n//\n//\tgo test ./internal/openapi -run TestKubernetesMarkers -update\n\npackage openapi\n\n")
	b.WriteString("// structTypes are the +structType markers of Kubernetes' types (\"atomic\":\n// the object is set and owned as a whole).\nvar structTypes = map[string]string{\n")
	for _, k := range sortedKeys(structs) {
		fmt.Fprintf(&b, "\t%q: %q,\n", k, structs[k])
	}
	b.WriteString("}\n\n// fieldMarkers are the markers of Kubernetes' fields, by type and JSON\n// name (\"core/v1.Container.ports\").\nvar fieldMarkers = map[string]fieldMarker{\n")
	for _, k := range sortedKeys(fields) {
		m := fields[k]
		var parts []string
		if m.listType != "" {
			parts = append(parts, fmt.Sprintf("listType: %q", m.listType))
		}
		if len(m.listMapKeys) > 0 {
			parts = append(parts, fmt.Sprintf("listMapKeys: %#v", m.listMapKeys))
		}
		if m.mapType != "" {
			parts = append(parts, fmt.Sprintf("mapType: %q", m.mapType))
		}
		if m.def != "" {
			parts = append(parts, fmt.Sprintf("def: %s", strconv.Quote(m.def)))
		}
		fmt.Fprintf(&b, "\t%q: {%s},\n", k, strings.Join(parts, ", "))
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
