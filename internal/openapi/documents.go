package openapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"

	"google.golang.org/protobuf/reflect/protoreflect"

	"skiff.dev/internal/kinds"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Documents are the OpenAPI documents of a set of kinds, built once and
// served as they are.
type Documents struct {
	v2    []byte
	v3    map[string]v3Doc // by docPath: "api/v1", "apis/apps/v1"
	index []byte
}

type v3Doc struct {
	body []byte
	hash string
}

// Build makes the documents of ks (kinds.All() for the apiserver's);
// version is the server's version, the documents' info.version.
func Build(ks []*kinds.Kind, version string) (*Documents, error) {
	d := &Documents{v3: map[string]v3Doc{}}
	var err error
	if d.v2, err = document(ks, version, false); err != nil {
		return nil, err
	}
	byPath := map[string][]*kinds.Kind{}
	var paths []string
	for _, k := range ks {
		p := docPath(k.Group, k.Version)
		if byPath[p] == nil {
			paths = append(paths, p)
		}
		byPath[p] = append(byPath[p], k)
	}
	index := map[string]any{}
	for _, p := range paths {
		body, err := document(byPath[p], version, true)
		if err != nil {
			return nil, err
		}
		hash := fmt.Sprintf("%X", sha512.Sum512(body))
		d.v3[p] = v3Doc{body: body, hash: hash}
		u := url.URL{Path: "/openapi/v3/" + p, RawQuery: url.Values{"hash": {hash}}.Encode()}
		index[p] = map[string]any{"serverRelativeURL": u.String()}
	}
	if d.index, err = marshal(map[string]any{"paths": index}); err != nil {
		return nil, err
	}
	return d, nil
}

// V2 is the Swagger 2.0 document of /openapi/v2, in JSON.
func (d *Documents) V2() []byte { return d.v2 }

// V3Index is the /openapi/v3 document: each group version's path and the
// URL of its document, with the document's hash.
func (d *Documents) V3Index() []byte { return d.index }

// V3 is the OpenAPI 3.0 document of a group version, by its path under
// /openapi/v3 ("api/v1", "apis/apps/v1"), and its hash (the ETag and the
// hash parameter of its URL, as kube-apiserver computes them: SHA-512 in
// upper-case hexadecimal); ok is false for a group version with no kind.
func (d *Documents) V3(path string) (doc []byte, hash string, ok bool) {
	v, ok := d.v3[path]
	return v.body, v.hash, ok
}

// V3Paths are the group versions' paths under /openapi/v3, sorted.
func (d *Documents) V3Paths() []string {
	out := make([]string, 0, len(d.v3))
	for p := range d.v3 {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func descriptor(m interface {
	ProtoReflect() protoreflect.Message
}) protoreflect.MessageDescriptor {
	return m.ProtoReflect().Descriptor()
}

// document is the Swagger 2.0 (v3 false) or OpenAPI 3.0 document of ks.
func document(ks []*kinds.Kind, version string, v3 bool) ([]byte, error) {
	s := newSchemas(v3)
	if _, err := s.kind(descriptor(&metav1.Status{}), gvk{"", "v1", "Status"}); err != nil {
		return nil, err
	}
	paths := map[string]any{}
	for _, k := range ks {
		schema, err := s.kind(descriptor(k.New()), gvk{k.Group, k.Version, k.Kind.Kind})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.GVK(), err)
		}
		list, err := s.kind(descriptor(k.NewList()), gvk{k.Group, k.Version, k.Kind.Kind + "List"})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.GVK(), err)
		}
		deleteOptions, err := s.kind(descriptor(&corev1.DeleteOptions{}), gvk{k.Group, k.Version, "DeleteOptions"})
		if err != nil {
			return nil, err
		}
		var scale string
		if slices.Contains(k.Subresources, "scale") {
			if scale, err = s.kind(descriptor(&appsv1.Scale{}), gvk{"autoscaling", "v1", "Scale"}); err != nil {
				return nil, err
			}
		}
		for _, item := range kindPaths(k, schema, list, scale, deleteOptions) {
			ops := map[string]any{"parameters": s.params(item.params)}
			for _, op := range item.ops {
				ops[op.method] = s.operation(k, op)
			}
			paths[item.path] = ops
		}
	}
	defs := map[string]any{}
	for name, def := range s.defs {
		defs[name] = def
	}
	security := []any{map[string]any{"BearerToken": []any{}}}
	bearer := map[string]any{"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}
	info := map[string]any{"title": "Kubernetes", "version": version}
	if v3 {
		return marshal(map[string]any{
			"openapi":    "3.0.0",
			"info":       info,
			"paths":      paths,
			"components": map[string]any{"schemas": defs, "securitySchemes": map[string]any{"BearerToken": bearer}},
			"security":   security,
		})
	}
	return marshal(map[string]any{
		"swagger":             "2.0",
		"info":                info,
		"paths":               paths,
		"definitions":         defs,
		"securityDefinitions": map[string]any{"BearerToken": bearer},
		"security":            security,
	})
}

// params are parameters in the document's form.
func (s *schemas) params(ps []param) []any {
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		e := map[string]any{"name": p.name, "in": p.in, "description": p.desc}
		if p.required {
			e["required"] = true
		}
		if s.v3 {
			e["schema"] = map[string]any{"type": p.typ, "uniqueItems": p.unique}
		} else {
			e["type"] = p.typ
			e["uniqueItems"] = p.unique
		}
		out = append(out, e)
	}
	return out
}

func (s *schemas) bodySchema(name string) map[string]any {
	if name == patchBody {
		return s.patchSchema()
	}
	return s.ref(name)
}

func (s *schemas) operation(k *kinds.Kind, op operation) map[string]any {
	out := map[string]any{
		"description":                     op.description,
		"operationId":                     op.id,
		"tags":                            []any{tag(k.Group, k.Version)},
		"parameters":                      s.params(op.query),
		"x-kubernetes-action":             op.action,
		"x-kubernetes-group-version-kind": op.gvk.value(),
	}
	responses := map[string]any{}
	for _, r := range op.responses {
		e := map[string]any{"description": r.desc}
		if r.schema != "" {
			if s.v3 {
				content := map[string]any{}
				for _, mt := range op.produces() {
					content[mt] = map[string]any{"schema": s.ref(r.schema)}
				}
				e["content"] = content
			} else {
				e["schema"] = s.ref(r.schema)
			}
		}
		responses[r.code] = e
	}
	out["responses"] = responses
	if s.v3 {
		if op.body != "" {
			content := map[string]any{}
			for _, mt := range op.consumes() {
				content[mt] = map[string]any{"schema": s.bodySchema(op.body)}
			}
			body := map[string]any{"content": content}
			if !op.bodyOK {
				body["required"] = true
			}
			out["requestBody"] = body
		}
		return out
	}
	out["consumes"] = op.consumes()
	out["produces"] = op.produces()
	out["schemes"] = []any{"https"}
	if op.body != "" {
		body := map[string]any{"name": "body", "in": "body", "schema": s.bodySchema(op.body)}
		if !op.bodyOK {
			body["required"] = true
		}
		out["parameters"] = append(out["parameters"].([]any), body)
	}
	return out
}

// marshal is JSON with sorted keys (encoding/json sorts map keys) and
// without HTML escapes, so that a document's bytes, and so its hash, are
// the same on every build.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
