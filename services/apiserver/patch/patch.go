package patch

import (
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"skiff.dev/internal/openapi"
)

// Type is a PATCH request's content type, Kubernetes' media types.
type Type string

const (
	JSONPatchType           Type = "application/json-patch+json"
	MergePatchType          Type = "application/merge-patch+json"
	StrategicMergePatchType Type = "application/strategic-merge-patch+json"
	ApplyPatchType          Type = "application/apply-patch+yaml"
)

// Types are the patch types the HTTP API accepts, in the order
// kube-apiserver lists them (the Accept-Patch header, and the 415 answer
// to any other content type).
var Types = []Type{JSONPatchType, MergePatchType, StrategicMergePatchType, ApplyPatchType}

// Patcher patches objects of the kinds of a set of OpenAPI documents. It
// is safe for concurrent use.
type Patcher struct {
	models    *models
	converter managedfields.TypeConverter
	convert   Converter
	reset     ResetFields

	mu       sync.Mutex
	managers map[managerKey]*managedfields.FieldManager
}

type managerKey struct {
	gvk         schema.GroupVersionKind
	subresource string
}

// Option changes a Patcher's defaults.
type Option func(*Patcher)

// Converter converts an object, a JSON tree as encoding/json decodes it,
// to another version of its kind (apiVersion "apps/v1"), for the managed
// fields recorded at another version than the request's.
type Converter func(obj map[string]any, apiVersion string) (map[string]any, error)

// WithConverter has managed fields recorded at another version converted
// with c; without it, they are dropped when an object is written at
// another version.
func WithConverter(c Converter) Option { return func(p *Patcher) { p.convert = c } }

// ResetFields are the top-level fields of an object of gvk that a write
// through subresource ("" for the object itself) does not change, so that
// no manager of that write owns them ("status" for the object itself,
// "spec" for its status subresource): kube-apiserver's registry
// strategies' GetResetFields.
type ResetFields func(gvk schema.GroupVersionKind, subresource string) []string

// WithResetFields replaces DefaultResetFields.
func WithResetFields(r ResetFields) Option { return func(p *Patcher) { p.reset = r } }

// New builds the schemas of the kinds of docs: the strategic merge patch
// metadata and structured-merge-diff's type converter.
func New(docs *openapi.Documents, opts ...Option) (*Patcher, error) {
	m, err := newModels(docs)
	if err != nil {
		return nil, err
	}
	tc, err := managedfields.NewTypeConverter(m.schemas, false)
	if err != nil {
		return nil, fmt.Errorf("server-side apply's schema: %w", err)
	}
	p := &Patcher{models: m, converter: tc, reset: DefaultResetFields, managers: map[managerKey]*managedfields.FieldManager{}}
	for _, o := range opts {
		o(p)
	}
	return p, nil
}

// Patch applies a patch of type typ (JSON patch, merge patch or strategic
// merge patch) to current, the object's JSON at gvk's version, and
// returns the patched object's JSON. For Apply, see (*Patcher).Apply.
func (p *Patcher) Patch(gvk schema.GroupVersionKind, typ Type, current, patch []byte) ([]byte, error) {
	// kube-apiserver checks the patch before anything else, for its
	// audit log (validateAndTranscodePatch).
	if !json.Valid(patch) {
		return nil, badRequest("invalid JSON patch")
	}
	switch typ {
	case JSONPatchType:
		return jsonPatch(current, patch)
	case MergePatchType:
		return mergePatch(current, patch)
	case StrategicMergePatchType:
		return p.strategicMerge(gvk, current, patch)
	}
	return nil, unsupported(typ)
}
