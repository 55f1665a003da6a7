package httpapi

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/field"
	"skiff.dev/internal/kinds"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/patch"
	"skiff.dev/services/apiserver/registry"
)

// PATCH in Kubernetes' four types (package patch: JSON patch, merge
// patch, strategic merge patch, server-side apply), and the managed
// fields every write of the HTTP API records, as kube-apiserver's field
// manager does. A PATCH is one request to the chain, authorized as patch
// (Routes: Patch, PatchStatus, PatchScale); inside it the object is read,
// patched and written back with its resourceVersion, again when another
// write came between (unless the patch names a resourceVersion itself:
// then a conflict is the client's).

// patchRetries bounds the read-patch-write rounds of one PATCH.
const patchRetries = 5

// patchMethods are the read, write and route of a PATCH of the object or
// a subresource.
var patchMethods = map[string][3]string{
	"":         {"Get", "Update", "Patch"},
	"status":   {"Get", "UpdateStatus", "PatchStatus"},
	"scale":    {"GetScale", "UpdateScale", "PatchScale"},
	"approval": {"Get", "UpdateApproval", "PatchApproval"},
}

func gvkOf(k *kinds.Kind) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind.Kind}
}

// patcher is the server's Patcher, built with the OpenAPI documents on
// first use.
func (h *Handler) patcher() (*patch.Patcher, error) {
	h.patcherOnce.Do(func() {
		docs, err := h.openAPIDocs()
		if err == nil {
			h.patcherV, err = patch.New(docs)
		}
		h.patcherErr = err
	})
	return h.patcherV, h.patcherErr
}

// fieldManager is the request's fieldManager, else its user agent's
// first part, as Kubernetes names the manager of a write.
func fieldManager(r *http.Request) string {
	if m := r.URL.Query().Get("fieldManager"); m != "" {
		return m
	}
	return patch.ManagerFromUserAgent(r.UserAgent())
}

func (h *Handler) patch(w http.ResponseWriter, r *http.Request, req resourceRequest) {
	k := req.kind
	ms, ok := patchMethods[req.subresource]
	if !ok || !h.cfg.Methods.Has(method(k, ms[1])) {
		writeError(w, apierrors.NewMethodNotAllowed(k.Resource+"/"+req.subresource, r.Method))
		return
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	typ := patch.Type(mt)
	q := r.URL.Query()
	force := isTrue(q.Get("force"))
	var errs field.ErrorList
	switch {
	case typ == patch.ApplyPatchType && q.Get("fieldManager") == "":
		errs = append(errs, field.Required(field.NewPath("fieldManager"), "is required for apply patch"))
	case typ != patch.ApplyPatchType && q.Has("force"):
		errs = append(errs, field.Forbidden(field.NewPath("force"), "may not be specified for non-apply patch"))
	}
	if len(errs) > 0 {
		writeError(w, apierrors.NewInvalid("PatchOptions", "", errs))
		return
	}
	v, err := parseFieldValidation(r)
	if err != nil {
		writeError(w, err)
		return
	}
	body, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	p, err := h.patcher()
	if err != nil {
		writeError(w, apierrors.NewInternal(err))
		return
	}
	manager := fieldManager(r)
	get := &metav1.GetRequest{Namespace: req.namespace, Name: req.name}
	if k.Namespaced && get.Namespace == "" {
		get.Namespace = "default"
	}
	code := http.StatusOK
	var warnings []string
	out, err := h.cfg.Methods.Admit(requestContext(r), method(k, ms[2]), get, func(ctx context.Context) (proto.Message, error) {
		for attempt := 0; ; attempt++ {
			cur, err := h.cfg.Methods.CallDirect(ctx, method(k, ms[0]), get, nil)
			var live []byte
			switch {
			case err == nil:
				live = encodeJSON(cur)
			case apierrors.IsNotFound(err) && typ == patch.ApplyPatchType && req.subresource == "":
				// An apply creates what does not exist.
			default:
				return nil, err
			}
			now := time.Now()
			var next []byte
			if typ == patch.ApplyPatchType {
				next, err = p.Apply(gvkOf(k), live, body, manager, force, now)
			} else if next, err = p.Patch(gvkOf(k), typ, live, body); err == nil && req.subresource != "scale" {
				next, _, err = h.track(p, k, live, next, manager, req.subresource, now)
			}
			if err != nil {
				return nil, err
			}
			obj, err := inputOf(k, ms[1])
			if err != nil {
				return nil, apierrors.NewInternal(err)
			}
			if warnings, err = decodeJSON(next, obj, v); err != nil {
				return nil, err
			}
			if err := matchPath(obj, req); err != nil {
				return nil, err
			}
			meta := object.Meta(obj.(object.Object))
			if live == nil {
				code = http.StatusCreated
				return h.cfg.Methods.CallDirect(ctx, method(k, "Create"), obj, nil)
			}
			// The patch's own resourceVersion is a precondition; without
			// one, the version read, and another round on a conflict.
			own := meta.GetResourceVersion() != object.Meta(cur.(object.Object)).GetResourceVersion()
			if !own {
				meta.ResourceVersion = object.Meta(cur.(object.Object)).GetResourceVersion()
			}
			res, err := h.cfg.Methods.CallDirect(registry.WithManagedFieldsSet(ctx), method(k, ms[1]), obj, nil)
			if apierrors.IsConflict(err) && !own && attempt < patchRetries {
				continue
			}
			return res, err
		}
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeWarnings(w, warnings)
	writeObject(w, code, out)
}

// track records the managed fields of a write that is not an apply: the
// object's JSON with metadata.managedFields updated for manager. A
// failure to track is logged and the write goes on, as kube-apiserver's;
// tracked then says false.
func (h *Handler) track(p *patch.Patcher, k *kinds.Kind, old, next []byte, manager, subresource string, now time.Time) (out []byte, tracked bool, err error) {
	out, err = p.Update(gvkOf(k), old, next, manager, subresource, now)
	if errors.Is(err, patch.ErrNotTracked) {
		h.cfg.Log.Warn("managed fields not updated", zap.String("kind", k.GVK()), zap.Error(err))
		return out, false, nil
	}
	return out, err == nil, err
}
