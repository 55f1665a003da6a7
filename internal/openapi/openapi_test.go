package openapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"skiff.dev/internal/kfields"
	"skiff.dev/internal/kinds"
)

// doc is a parsed document, with the helpers the tests walk it with.
type doc struct {
	t      *testing.T
	raw    map[string]any
	prefix string         // "#/definitions/" or "#/components/schemas/"
	defs   map[string]any // definitions or components.schemas
}

func parse(t *testing.T, b []byte, v3 bool) *doc {
	t.Helper()
	d := &doc{t: t}
	if err := json.Unmarshal(b, &d.raw); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if v3 {
		if d.raw["openapi"] != "3.0.0" {
			t.Fatalf("openapi = %v", d.raw["openapi"])
		}
		d.prefix = "#/components/schemas/"
		d.defs = d.raw["components"].(map[string]any)["schemas"].(map[string]any)
	} else {
		if d.raw["swagger"] != "2.0" {
			t.Fatalf("swagger = %v", d.raw["swagger"])
		}
		d.prefix = "#/definitions/"
		d.defs = d.raw["definitions"].(map[string]any)
	}
	return d
}

func (d *doc) def(name string) map[string]any {
	d.t.Helper()
	def, ok := d.defs[name].(map[string]any)
	if !ok {
		d.t.Fatalf("no schema %s", name)
	}
	return def
}

func (d *doc) prop(def map[string]any, name string) map[string]any {
	d.t.Helper()
	props, _ := def["properties"].(map[string]any)
	p, ok := props[name].(map[string]any)
	if !ok {
		d.t.Fatalf("no property %q", name)
	}
	return p
}

// refOf is the schema a property refers to: $ref, or (OpenAPI 3.0, with a
// description beside it) allOf's one $ref.
func (d *doc) refOf(p map[string]any) string {
	d.t.Helper()
	if r, ok := p["$ref"].(string); ok {
		return strings.TrimPrefix(r, d.prefix)
	}
	if all, ok := p["allOf"].([]any); ok && len(all) == 1 {
		return d.refOf(all[0].(map[string]any))
	}
	d.t.Fatalf("not a reference: %v", p)
	return ""
}

func (d *doc) hasGVK(def map[string]any, group, version, kind string) bool {
	list, _ := def["x-kubernetes-group-version-kind"].([]any)
	for _, e := range list {
		m := e.(map[string]any)
		if m["group"] == group && m["version"] == version && m["kind"] == kind {
			return true
		}
	}
	return false
}

// refs reports the $refs of v that name no schema of d.
func (d *doc) dangling(where string, v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		if r, ok := v["$ref"].(string); ok {
			name, found := strings.CutPrefix(r, d.prefix)
			if _, ok := d.defs[name]; !found || !ok {
				*out = append(*out, where+": "+r)
			}
		}
		for k, e := range v {
			d.dangling(where+"/"+k, e, out)
		}
	case []any:
		for i, e := range v {
			d.dangling(fmt.Sprintf("%s[%d]", where, i), e, out)
		}
	}
}

func build(t *testing.T) *Documents {
	t.Helper()
	docs, err := Build(kinds.All(), "v1.36.6-skiff")
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// each runs f on the Swagger 2.0 document and on every OpenAPI 3.0 one,
// with the kinds each holds.
func each(t *testing.T, docs *Documents, f func(t *testing.T, d *doc, ks []*kinds.Kind)) {
	t.Run("v2", func(t *testing.T) { f(t, parse(t, docs.V2(), false), kinds.All()) })
	for _, p := range docs.V3Paths() {
		var ks []*kinds.Kind
		for _, k := range kinds.All() {
			if docPath(k.Group, k.Version) == p {
				ks = append(ks, k)
			}
		}
		b, _, _ := docs.V3(p)
		t.Run("v3/"+p, func(t *testing.T) { f(t, parse(t, b, true), ks) })
	}
}

// TestEveryKind: every declared kind has its schema, named as Kubernetes
// names its type, with its group, version and kind (how kubectl explain
// finds it), and so has its list; and every kind has a PATCH operation of
// its GVK with the fieldValidation parameter (how kubectl decides that
// the server validates fields).
func TestEveryKind(t *testing.T) {
	each(t, build(t), func(t *testing.T, d *doc, ks []*kinds.Kind) {
		if len(ks) == 0 {
			t.Fatal("a document of no kind")
		}
		for _, k := range ks {
			name, err := schemaName(k.New().ProtoReflect().Descriptor())
			if err != nil {
				t.Fatal(err)
			}
			if root, ok := kfields.Root(k.Group, k.Version, k.Kind.Kind); ok {
				if want := "io.k8s.api." + strings.ReplaceAll(root, "/", "."); name != want {
					t.Errorf("%s is named %s, Kubernetes names it %s", k.GVK(), name, want)
				}
			}
			if !d.hasGVK(d.def(name), k.Group, k.Version, k.Kind.Kind) {
				t.Errorf("%s: schema %s has no x-kubernetes-group-version-kind of it", k.GVK(), name)
			}
			if !d.hasGVK(d.def(name+"List"), k.Group, k.Version, k.Kind.Kind+"List") {
				t.Errorf("%s: schema %sList has no x-kubernetes-group-version-kind of it", k.GVK(), name)
			}
			if !patchHasFieldValidation(d, k) {
				t.Errorf("%s: no PATCH operation of its GVK with a fieldValidation query parameter", k.GVK())
			}
		}
	})
}

// patchHasFieldValidation looks for the parameter as kubectl's
// QueryParamVerifier does: a PATCH operation whose
// x-kubernetes-group-version-kind is the kind's, with the parameter in
// the query.
func patchHasFieldValidation(d *doc, k *kinds.Kind) bool {
	for _, item := range d.raw["paths"].(map[string]any) {
		op, ok := item.(map[string]any)["patch"].(map[string]any)
		if !ok {
			continue
		}
		g := op["x-kubernetes-group-version-kind"].(map[string]any)
		if g["group"] != k.Group || g["version"] != k.Version || g["kind"] != k.Kind.Kind {
			continue
		}
		for _, p := range op["parameters"].([]any) {
			if p := p.(map[string]any); p["name"] == "fieldValidation" && p["in"] == "query" {
				return true
			}
		}
	}
	return false
}

// TestContainerAndPod checks the schemas kubectl explain and strategic
// merge patches read most, field by field.
func TestContainerAndPod(t *testing.T) {
	each(t, build(t), func(t *testing.T, d *doc, ks []*kinds.Kind) {
		if _, ok := d.defs["io.k8s.api.core.v1.Pod"]; !ok {
			return // a group version without pods
		}
		c := d.def("io.k8s.api.core.v1.Container")
		if got := d.prop(c, "name")["type"]; got != "string" {
			t.Errorf("Container.name type = %v", got)
		}
		image := d.prop(c, "image")
		if image["type"] != "string" || !strings.Contains(image["description"].(string), "Container image name") {
			t.Errorf("Container.image = %v", image)
		}
		ports := d.prop(c, "ports")
		if ports["type"] != "array" || d.refOf(ports["items"].(map[string]any)) != "io.k8s.api.core.v1.ContainerPort" {
			t.Errorf("Container.ports = %v", ports)
		}
		if ports["x-kubernetes-patch-merge-key"] != "containerPort" || ports["x-kubernetes-patch-strategy"] != "merge" {
			t.Errorf("Container.ports patch facts = %v, %v", ports["x-kubernetes-patch-strategy"], ports["x-kubernetes-patch-merge-key"])
		}
		if got := d.prop(d.def("io.k8s.api.core.v1.ContainerPort"), "containerPort"); got["type"] != "integer" || got["format"] != "int32" {
			t.Errorf("ContainerPort.containerPort = %v", got)
		}
		resources := d.refOf(d.prop(c, "resources"))
		limits := d.prop(d.def(resources), "limits")
		if limits["type"] != "object" || d.refOf(limits["additionalProperties"].(map[string]any)) != quantityName {
			t.Errorf("%s.limits = %v", resources, limits)
		}
		quantity := d.def(quantityName)
		if _, v3 := d.raw["openapi"]; v3 {
			if len(quantity["oneOf"].([]any)) != 2 {
				t.Errorf("Quantity = %v", quantity)
			}
		} else if quantity["type"] != "string" {
			t.Errorf("Quantity = %v", quantity)
		}
		if ios := d.def(intOrStringName); ios["format"] != "int-or-string" {
			t.Errorf("IntOrString = %v", ios)
		}

		pod := d.def("io.k8s.api.core.v1.Pod")
		if got := d.refOf(d.prop(pod, "metadata")); got != "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" {
			t.Errorf("Pod.metadata refers to %s", got)
		}
		meta := d.def("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
		if got := d.refOf(d.prop(meta, "creationTimestamp")); got != timeName {
			t.Errorf("ObjectMeta.creationTimestamp refers to %s", got)
		}
		if time := d.def(timeName); time["type"] != "string" || time["format"] != "date-time" {
			t.Errorf("Time = %v", time)
		}
		spec := d.def(d.refOf(d.prop(pod, "spec")))
		if got := d.prop(spec, "containers"); got["x-kubernetes-patch-merge-key"] != "name" {
			t.Errorf("PodSpec.containers = %v", got)
		}
		if got := d.prop(spec, "volumes"); got["x-kubernetes-patch-strategy"] != "merge,retainKeys" {
			t.Errorf("PodSpec.volumes = %v", got)
		}
		if !strings.HasPrefix(fmt.Sprint(pod["description"]), "Pod is a collection of containers") {
			t.Errorf("Pod.description = %v", pod["description"])
		}
	})
	// Secrets' data are bytes: base64 strings.
	d := parse(t, build(t).V2(), false)
	data := d.prop(d.def("io.k8s.api.core.v1.Secret"), "data")
	if v := data["additionalProperties"].(map[string]any); v["type"] != "string" || v["format"] != "byte" {
		t.Errorf("Secret.data = %v", data)
	}
	// Deployment's scale is autoscaling/v1's Scale, as in Kubernetes.
	op := d.raw["paths"].(map[string]any)["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"].(map[string]any)["get"].(map[string]any)
	if got := op["operationId"]; got != "readAppsV1NamespacedDeploymentScale" {
		t.Errorf("scale operationId = %v", got)
	}
	if !d.hasGVK(d.def("io.k8s.api.autoscaling.v1.Scale"), "autoscaling", "v1", "Scale") {
		t.Error("no autoscaling/v1 Scale")
	}
}

// TestRefsResolve: every $ref of every document names one of its schemas.
func TestRefsResolve(t *testing.T) {
	each(t, build(t), func(t *testing.T, d *doc, _ []*kinds.Kind) {
		var bad []string
		d.dangling("", d.raw, &bad)
		for _, b := range bad {
			t.Errorf("dangling $ref at %s", b)
		}
	})
}

// TestOperations checks the paths of a namespaced and of a cluster-scoped
// kind as kube-apiserver documents them.
func TestOperations(t *testing.T) {
	d := parse(t, build(t).V2(), false)
	paths := d.raw["paths"].(map[string]any)
	for _, c := range []struct{ path, method, id, action string }{
		{"/api/v1/namespaces/{namespace}/pods", "get", "listCoreV1NamespacedPod", "list"},
		{"/api/v1/namespaces/{namespace}/pods", "post", "createCoreV1NamespacedPod", "post"},
		{"/api/v1/namespaces/{namespace}/pods", "delete", "deleteCoreV1CollectionNamespacedPod", "deletecollection"},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "get", "readCoreV1NamespacedPod", "get"},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "patch", "patchCoreV1NamespacedPod", "patch"},
		{"/api/v1/namespaces/{namespace}/pods/{name}/status", "put", "replaceCoreV1NamespacedPodStatus", "put"},
		{"/api/v1/pods", "get", "listCoreV1PodForAllNamespaces", "list"},
		{"/api/v1/namespaces/{name}", "delete", "deleteCoreV1Namespace", "delete"},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}", "get", "readRbacAuthorizationV1ClusterRole", "get"},
	} {
		item, ok := paths[c.path].(map[string]any)
		if !ok {
			t.Errorf("no path %s", c.path)
			continue
		}
		op, ok := item[c.method].(map[string]any)
		if !ok {
			t.Errorf("%s has no %s", c.path, c.method)
			continue
		}
		if op["operationId"] != c.id || op["x-kubernetes-action"] != c.action {
			t.Errorf("%s %s: operationId %v, action %v; want %s, %s", c.method, c.path, op["operationId"], op["x-kubernetes-action"], c.id, c.action)
		}
	}
	patch := paths["/api/v1/namespaces/{namespace}/pods/{name}"].(map[string]any)["patch"].(map[string]any)
	consumes := fmt.Sprint(patch["consumes"])
	for _, mt := range []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"} {
		if !strings.Contains(consumes, mt) {
			t.Errorf("PATCH consumes %s, not %s", consumes, mt)
		}
	}
}

// TestV3Index: the index names each group version's document by a URL
// whose hash is the document's, as kube-apiserver's (SHA-512, upper-case
// hexadecimal).
func TestV3Index(t *testing.T) {
	docs := build(t)
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(docs.V3Index(), &index); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, k := range kinds.All() {
		want[docPath(k.Group, k.Version)] = true
	}
	for _, p := range []string{"api/v1", "apis/apps/v1", "apis/apps/v1beta1", "apis/rbac.authorization.k8s.io/v1"} {
		if !want[p] {
			t.Errorf("no kind of %s: test out of date", p)
		}
	}
	if len(index.Paths) != len(want) {
		t.Errorf("index has %d paths, want %d", len(index.Paths), len(want))
	}
	for p := range want {
		e, ok := index.Paths[p]
		if !ok {
			t.Errorf("index lacks %s", p)
			continue
		}
		body, hash, ok := docs.V3(p)
		if !ok {
			t.Errorf("no document %s", p)
			continue
		}
		if sum := fmt.Sprintf("%X", sha512.Sum512(body)); hash != sum {
			t.Errorf("%s: hash %s, document's %s", p, hash, sum)
		}
		u, err := url.Parse(e.ServerRelativeURL)
		if err != nil || u.Path != "/openapi/v3/"+p || u.Query().Get("hash") != hash {
			t.Errorf("%s: serverRelativeURL %s", p, e.ServerRelativeURL)
		}
	}
	if _, _, ok := docs.V3("apis/flavours/v1"); ok {
		t.Error("a document for a group version with no kind")
	}
}

// TestDeterministic: the documents' bytes, and so their hashes and the
// ETags clients cache by, are the same on every build (Go randomizes map
// order on every iteration, so two builds in one process would differ if
// any output followed it).
func TestDeterministic(t *testing.T) {
	a, b := build(t), build(t)
	if !bytes.Equal(a.V2(), b.V2()) {
		t.Error("two builds of /openapi/v2 differ")
	}
	if !bytes.Equal(a.V3Index(), b.V3Index()) {
		t.Error("two builds of /openapi/v3 differ")
	}
}

// TestServerSideApplyFacts: the extensions server-side apply reads (list
// types and their keys, atomic maps and structs, the defaults of keys)
// are Kubernetes', and managedFields' fieldsV1 is a free-form object, as
// in Kubernetes' documents.
func TestServerSideApplyFacts(t *testing.T) {
	each(t, build(t), func(t *testing.T, d *doc, ks []*kinds.Kind) {
		if _, ok := d.defs["io.k8s.api.core.v1.Pod"]; !ok {
			return
		}
		c := d.def("io.k8s.api.core.v1.Container")
		ports := d.prop(c, "ports")
		if ports["x-kubernetes-list-type"] != "map" || fmt.Sprint(ports["x-kubernetes-list-map-keys"]) != "[containerPort protocol]" {
			t.Errorf("Container.ports = %v", ports)
		}
		if env := d.prop(c, "env"); env["x-kubernetes-list-type"] != "map" || fmt.Sprint(env["x-kubernetes-list-map-keys"]) != "[name]" {
			t.Errorf("Container.env = %v", env)
		}
		if got := d.prop(d.def("io.k8s.api.core.v1.ContainerPort"), "protocol")["default"]; got != "TCP" {
			t.Errorf("ContainerPort.protocol default = %v", got)
		}
		spec := d.def("io.k8s.api.core.v1.PodSpec")
		if got := d.prop(spec, "tolerations")["x-kubernetes-list-type"]; got != "atomic" {
			t.Errorf("PodSpec.tolerations list type = %v", got)
		}
		if got := d.prop(spec, "nodeSelector")["x-kubernetes-map-type"]; got != "atomic" {
			t.Errorf("PodSpec.nodeSelector map type = %v", got)
		}
		meta := d.def("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
		if got := d.prop(meta, "finalizers")["x-kubernetes-list-type"]; got != "set" {
			t.Errorf("ObjectMeta.finalizers list type = %v", got)
		}
		if got := d.prop(meta, "managedFields")["x-kubernetes-list-type"]; got != "atomic" {
			t.Errorf("ObjectMeta.managedFields list type = %v", got)
		}
		entry := d.def(d.refOf(d.prop(meta, "managedFields")["items"].(map[string]any)))
		fields := d.def(d.refOf(d.prop(entry, "fieldsV1")))
		if _, props := fields["properties"]; fields["type"] != "object" || props {
			t.Errorf("FieldsV1 = %v", fields)
		}
		if got := d.def("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector")["x-kubernetes-map-type"]; got != "atomic" {
			t.Errorf("LabelSelector map type = %v", got)
		}
	})
}
