package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/field"
	"skiff.dev/internal/kinds"
	"skiff.dev/internal/object"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/registry"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/storage"
)

// resourceRequest is a request's path, as Kubernetes' RequestInfo reads
// it: /api/v1/namespaces/{namespace}/{resource}/{name}/{subresource}, or
// /apis/{group}/{version}/...; a cluster-scoped resource (or a list across
// namespaces) has no namespaces/{namespace} part.
type resourceRequest struct {
	kind                         *kinds.Kind
	namespace, name, subresource string
}

// namespaceSubresources are the subresources of a Namespace, which its
// path cannot tell from a resource in it (/api/v1/namespaces/a/status).
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseResource reads a resource path; false for anything else (a
// discovery document, or a path that names no served resource).
func (h *Handler) parseResource(path string) (resourceRequest, bool) {
	var group, ver string
	var parts []string
	if rest, ok := strings.CutPrefix(path, "/api/"); ok {
		parts = strings.Split(strings.Trim(rest, "/"), "/")
		ver, parts = parts[0], parts[1:]
	} else if rest, ok := strings.CutPrefix(path, "/apis/"); ok {
		parts = strings.Split(strings.Trim(rest, "/"), "/")
		if len(parts) < 3 {
			return resourceRequest{}, false
		}
		group, ver, parts = parts[0], parts[1], parts[2:]
	}
	if len(parts) == 0 || parts[0] == "" {
		return resourceRequest{}, false
	}
	var req resourceRequest
	if parts[0] == "namespaces" && len(parts) > 2 && !namespaceSubresources[parts[2]] {
		req.namespace, parts = parts[1], parts[2:]
	}
	if len(parts) > 3 {
		return resourceRequest{}, false
	}
	k, ok := h.resources[gvr{group, ver, parts[0]}]
	if !ok {
		return resourceRequest{}, false
	}
	req.kind = k
	if len(parts) > 1 {
		req.name = parts[1]
	}
	if len(parts) > 2 {
		req.subresource = parts[2]
	}
	return req, true
}

// method is the full name of a method of the kind's service.
func method(k *kinds.Kind, name string) string { return "/" + k.Service() + "/" + name }

// subresourceMethods are the service methods of a subresource's verbs.
var subresourceMethods = map[string]map[string]string{
	"status":              {http.MethodGet: "Get", http.MethodPut: "UpdateStatus"},
	"scale":               {http.MethodGet: "GetScale", http.MethodPut: "UpdateScale"},
	"binding":             {http.MethodPost: "Bind"},
	"eviction":            {http.MethodPost: "Evict"},
	"token":               {http.MethodPost: "CreateToken"},
	"ephemeralcontainers": {http.MethodGet: "Get", http.MethodPut: "UpdateEphemeralContainers"},
	"approval":            {http.MethodGet: "Get", http.MethodPut: "UpdateApproval"},
}

func (h *Handler) serveResource(w http.ResponseWriter, r *http.Request, req resourceRequest) {
	k := req.kind
	if req.namespace != "" && !k.Namespaced {
		writeError(w, notFound())
		return
	}
	q := r.URL.Query()
	if r.Method != http.MethodGet {
		growStack(len(q))
		dry, err := dryRun(q["dryRun"], r.Method)
		if err != nil {
			writeError(w, err)
			return
		}
		if dry {
			r = r.WithContext(registry.WithDryRun(r.Context()))
		}
	}
	switch {
	case req.subresource == "log" && r.Method == http.MethodGet:
		h.logs(w, r, req)
	case r.Method == http.MethodPatch && req.name != "":
		h.patch(w, r, req)
	case req.subresource == "exec" && (r.Method == http.MethodGet || r.Method == http.MethodPost):
		h.execStream(w, r, req, "Exec")
	case req.subresource == "attach" && (r.Method == http.MethodGet || r.Method == http.MethodPost):
		h.execStream(w, r, req, "Attach")
	case req.subresource == "portforward" && (r.Method == http.MethodGet || r.Method == http.MethodPost):
		h.portForward(w, r, req)
	case req.subresource != "":
		h.subresource(w, r, req)
	case r.Method == http.MethodGet && req.name == "" && isTrue(q.Get("watch")):
		h.watch(w, r, req)
	case r.Method == http.MethodGet && req.name == "":
		h.list(w, r, req)
	case r.Method == http.MethodGet:
		h.get(w, r, req)
	case r.Method == http.MethodPost && req.name == "":
		h.write(w, r, req, "Create", http.StatusCreated)
	case r.Method == http.MethodPut && req.name != "":
		h.write(w, r, req, "Update", http.StatusOK)
	case r.Method == http.MethodDelete && req.name != "":
		h.delete(w, r, req)
	case r.Method == http.MethodDelete && (req.namespace != "" || !k.Namespaced):
		h.deleteCollection(w, r, req)
	default:
		writeError(w, apierrors.NewMethodNotAllowed(k.Resource, r.Method))
	}
}

func isTrue(s string) bool { return s == "1" || s == "true" }

// unary calls a method with ctx (the request's, or AsSubresource's) and
// answers with its response.
func (h *Handler) unary(ctx context.Context, w http.ResponseWriter, req resourceRequest, name string, in proto.Message, code int) {
	out, err := h.cfg.Methods.Call(ctx, method(req.kind, name), in, nil)
	if err != nil {
		writeError(w, err)
		return
	}
	writeObject(w, code, out)
}

// get answers one object, as a Table when the client asks for one.
func (h *Handler) get(w http.ResponseWriter, r *http.Request, req resourceRequest) {
	out, err := h.cfg.Methods.Call(requestContext(r), method(req.kind, "Get"), &metav1.GetRequest{Namespace: req.namespace, Name: req.name}, nil)
	if err != nil {
		writeError(w, err)
		return
	}
	if o, ok := out.(object.Object); ok && wantsTable(r) {
		h.writeTable(w, r, req, []object.Object{o}, nil)
		return
	}
	writeObject(w, http.StatusOK, out)
}

func (h *Handler) writeTable(w http.ResponseWriter, r *http.Request, req resourceRequest, objs []object.Object, meta *metav1.ListMeta) {
	b, err := table(r, req.kind.New(), objs, meta)
	if err != nil {
		writeError(w, err)
		return
	}
	writeBody(w, http.StatusOK, tableContentType, b)
}

// readBody reads a request body up to the largest object the server
// stores (and a little more for the envelope).
func readBody(r *http.Request) ([]byte, error) {
	limit := int64(storage.MaxObjectBytes + 64<<10)
	var b []byte
	var err error
	if n := r.ContentLength; n >= 0 && n <= limit {
		// The size is known (client-go sends it): one buffer of it. The
		// server holds a body to its Content-Length, HTTP/1.1 and
		// HTTP/2 alike.
		b = make([]byte, n)
		_, err = io.ReadFull(r.Body, b)
	} else {
		b, err = io.ReadAll(io.LimitReader(r.Body, limit+1))
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the request body: %v", err))
	}
	if int64(len(b)) > limit {
		return nil, apierrors.NewTooLarge("", "", len(b), int(limit))
	}
	return b, nil
}

// decodeObject reads the body into a new in (the method's request
// message) and checks it against the path: its namespace (set from the
// path when empty) and, for a named object, its name.
func (h *Handler) decodeObject(w http.ResponseWriter, r *http.Request, req resourceRequest, in proto.Message) bool {
	v, err := parseFieldValidation(r)
	if err == nil {
		var body []byte
		if body, err = readBody(r); err == nil {
			var warnings []string
			warnings, err = decodeBody(r, body, in, v)
			writeWarnings(w, warnings)
		}
	}
	if err == nil {
		err = matchPath(in, req)
	}
	if err != nil {
		writeError(w, err)
		return false
	}
	return true
}

// matchPath fills an object's namespace from the path, and refuses an
// object whose namespace or name differ from the path's, as Kubernetes
// does.
func matchPath(in proto.Message, req resourceRequest) error {
	o, ok := in.(object.Object)
	if !ok {
		return nil
	}
	meta := object.Meta(o)
	if meta == nil {
		return nil
	}
	if req.kind.Namespaced || req.subresource != "" {
		switch {
		case meta.Namespace == "":
			meta.Namespace = req.namespace
		case req.namespace != "" && meta.Namespace != req.namespace:
			return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	}
	if req.name != "" && req.subresource == "" && meta.Name != req.name {
		if meta.Name == "" {
			meta.Name = req.name
		} else {
			return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", meta.Name, req.name))
		}
	}
	return nil
}

// write creates or updates the object of the body, with its managed
// fields recorded for the request's field manager: one request to the
// chain, as the method's (an update reads the object it replaces).
func (h *Handler) write(w http.ResponseWriter, r *http.Request, req resourceRequest, name string, code int) {
	k := req.kind
	in := k.New()
	if !h.decodeObject(w, r, req, in) {
		return
	}
	p, err := h.patcher()
	if err != nil {
		writeError(w, apierrors.NewInternal(err))
		return
	}
	manager := fieldManager(r)
	out, err := h.cfg.Methods.Admit(requestContext(r), method(k, name), in, func(ctx context.Context) (proto.Message, error) {
		var old []byte
		if name == "Update" {
			meta := object.Meta(in)
			cur, err := h.cfg.Methods.CallDirect(ctx, method(k, "Get"), &metav1.GetRequest{Namespace: meta.GetNamespace(), Name: meta.GetName()}, nil)
			if err != nil {
				return nil, err
			}
			old = encodeJSON(cur)
		}
		obj, err := h.tracked(p, k, name, old, in, manager, time.Now())
		if err != nil {
			return nil, err
		}
		return h.cfg.Methods.CallDirect(registry.WithManagedFieldsSet(ctx), method(k, name), obj, nil)
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeObject(w, code, out)
}

// subresource serves a subresource's verb by its method, whose request
// is the body (a write) or the object's name (a read).
func (h *Handler) subresource(w http.ResponseWriter, r *http.Request, req resourceRequest) {
	name := subresourceMethods[req.subresource][r.Method]
	if name == "" || !h.cfg.Methods.Has(method(req.kind, name)) {
		writeError(w, apierrors.NewMethodNotAllowed(req.kind.Resource+"/"+req.subresource, r.Method))
		return
	}
	if r.Method == http.MethodGet {
		// The object's Get, authorized as the subresource's.
		h.unary(server.AsSubresource(requestContext(r), req.subresource), w, req, name, &metav1.GetRequest{Namespace: req.namespace, Name: req.name}, http.StatusOK)
		return
	}
	in, err := inputOf(req.kind, name)
	if err != nil {
		writeError(w, apierrors.NewInternal(err))
		return
	}
	if !h.decodeObject(w, r, req, in) {
		return
	}
	code := http.StatusOK
	if r.Method == http.MethodPost {
		code = http.StatusCreated
	}
	h.unary(requestContext(r), w, req, name, in, code)
}

// inputOf is a new request message of a method of the kind's service.
func inputOf(k *kinds.Kind, name string) (proto.Message, error) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(k.Service()))
	if err != nil {
		return nil, err
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is not a service", k.Service())
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil, fmt.Errorf("%s has no method %s", k.Service(), name)
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
	if err != nil {
		return nil, err
	}
	return mt.New().Interface(), nil
}

// queryInt reads a non-negative integer query parameter; nil when absent.
func queryInt(q url.Values, name string) (*int64, error) {
	s := q.Get(name)
	if s == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s: invalid value %q: a non-negative integer is required", name, s))
	}
	return &n, nil
}

// listOptions reads a list's or watch's query parameters.
func listOptions(r *http.Request, namespace string) (*metav1.ListOptions, error) {
	q := r.URL.Query()
	o := &metav1.ListOptions{
		Namespace:            namespace,
		LabelSelector:        q.Get("labelSelector"),
		FieldSelector:        q.Get("fieldSelector"),
		Continue:             q.Get("continue"),
		ResourceVersion:      q.Get("resourceVersion"),
		ResourceVersionMatch: q.Get("resourceVersionMatch"),
		AllowWatchBookmarks:  isTrue(q.Get("allowWatchBookmarks")),
	}
	for name, dst := range map[string]*int64{"limit": &o.Limit, "timeoutSeconds": &o.TimeoutSeconds} {
		n, err := queryInt(q, name)
		if err != nil {
			return nil, err
		}
		if n != nil {
			*dst = *n
		}
	}
	if s := q.Get("sendInitialEvents"); s != "" {
		b := isTrue(s)
		o.SendInitialEvents = &b
	}
	return o, nil
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request, req resourceRequest) {
	opts, err := listOptions(r, req.namespace)
	if err != nil {
		writeError(w, err)
		return
	}
	if wantsTable(r) {
		out, err := h.cfg.Methods.Call(requestContext(r), method(req.kind, "List"), opts, req.kind.NewList())
		if err != nil {
			writeError(w, err)
			return
		}
		objs, meta := listItems(out)
		h.writeTable(w, r, req, objs, meta)
		return
	}
	// The list's JSON from its items' encodings (listjson.go), when the
	// method answered with them.
	out, items, encoded, err := h.cfg.Methods.CallList(requestContext(r), method(req.kind, "List"), opts)
	if err != nil {
		writeError(w, err)
		return
	}
	if !encoded {
		objs, _ := listItems(out)
		writeJSON(w, http.StatusOK, encodeList(out, len(objs)))
		return
	}
	b, err := listJSON(out, items)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// delete deletes one object, with the DeleteOptions of the body or the
// query: the object when it is still there (finalizers, graceful
// deletion), else a Success Status, as Kubernetes answers.
func (h *Handler) delete(w http.ResponseWriter, r *http.Request, req resourceRequest) {
	dr, err := deleteRequest(r, req)
	if err != nil {
		writeError(w, err)
		return
	}
	out, err := h.cfg.Methods.Call(requestContext(r), method(req.kind, "Delete"), dr, nil)
	if err != nil {
		writeError(w, err)
		return
	}
	if o, ok := out.(object.Object); ok {
		if meta := object.Meta(o); meta != nil && meta.DeletionTimestamp == nil {
			writeJSON(w, http.StatusOK, success(req.kind.Group, req.kind.Resource, meta.Name, meta.Uid))
			return
		}
	}
	writeObject(w, http.StatusOK, out)
}

// deleteCollection deletes the objects a list with the request's
// selectors finds, each with the request's DeleteOptions, and answers
// with them (as they were before), authorized once as deletecollection.
func (h *Handler) deleteCollection(w http.ResponseWriter, r *http.Request, req resourceRequest) {
	opts, err := listOptions(r, req.namespace)
	if err != nil {
		writeError(w, err)
		return
	}
	tmpl, err := deleteRequest(r, req)
	if err != nil {
		writeError(w, err)
		return
	}
	k := req.kind
	out, err := h.cfg.Methods.Admit(requestContext(r), method(k, "DeleteCollection"), opts, func(ctx context.Context) (proto.Message, error) {
		list, err := h.cfg.Methods.CallDirect(ctx, method(k, "List"), opts, k.NewList())
		if err != nil {
			return nil, err
		}
		items := list.ProtoReflect().Get(list.ProtoReflect().Descriptor().Fields().ByName("items")).List()
		for i := 0; i < items.Len(); i++ {
			meta := object.Meta(items.Get(i).Message().Interface().(object.Object))
			dr := proto.Clone(tmpl).(*metav1.DeleteRequest)
			dr.Namespace, dr.Name = meta.GetNamespace(), meta.GetName()
			if _, err := h.cfg.Methods.CallDirect(ctx, method(k, "Delete"), dr, nil); err != nil && !apierrors.IsNotFound(err) {
				return nil, err
			}
		}
		return list, nil
	})
	if err != nil {
		writeError(w, err)
		return
	}
	objs, _ := listItems(out)
	writeJSON(w, http.StatusOK, encodeList(out, len(objs)))
}

// dryRun reads a write's dryRun values: "All" (a dry run) or none, as
// Kubernetes' only value.
func dryRun(values []string, httpMethod string) (bool, error) {
	for _, v := range values {
		if v != "All" {
			opts := map[string]string{http.MethodPost: "CreateOptions", http.MethodPut: "UpdateOptions", http.MethodPatch: "PatchOptions", http.MethodDelete: "DeleteOptions"}[httpMethod]
			return false, apierrors.NewInvalid(opts, "", field.ErrorList{field.NotSupported(field.NewPath("dryRun"), v, []string{"All"})})
		}
	}
	return len(values) > 0, nil
}

// deleteRequest reads DeleteOptions from the body (kubectl sends them
// there) and the query.
func deleteRequest(r *http.Request, req resourceRequest) (*metav1.DeleteRequest, error) {
	dr := &metav1.DeleteRequest{Namespace: req.namespace, Name: req.name}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	opts := &corev1.DeleteOptions{}
	if len(strings.TrimSpace(string(body))) > 0 {
		if _, err := decodeBody(r, body, opts, validationWarn); err != nil {
			return nil, err
		}
	}
	q := r.URL.Query()
	if n, err := queryInt(q, "gracePeriodSeconds"); err != nil {
		return nil, err
	} else if n != nil {
		opts.GracePeriodSeconds = n
	}
	if s := q.Get("propagationPolicy"); s != "" {
		opts.PropagationPolicy = &s
	}
	if dry, err := dryRun(opts.GetDryRun(), http.MethodDelete); err != nil {
		return nil, err
	} else if dry && !registry.IsDryRun(r.Context()) {
		// In the body's options only: the handler's context does not say it.
		return nil, apierrors.NewBadRequest("dryRun in the body's DeleteOptions: give it as the dryRun query parameter too (dryRun=All)")
	}
	dr.GracePeriodSeconds = opts.GracePeriodSeconds
	dr.PropagationPolicy = opts.GetPropagationPolicy()
	dr.Preconditions = opts.GetPreconditions()
	return dr, nil
}

// logs streams a container's log as text, flushed as it comes (follow).
func (h *Handler) logs(w http.ResponseWriter, r *http.Request, req resourceRequest) {
	q := r.URL.Query()
	opts := &corev1.PodLogOptions{Namespace: req.namespace, Name: req.name, Container: q.Get("container"),
		Follow: isTrue(q.Get("follow")), Timestamps: isTrue(q.Get("timestamps")), Previous: isTrue(q.Get("previous"))}
	for name, dst := range map[string]**int64{"tailLines": &opts.TailLines, "sinceSeconds": &opts.SinceSeconds} {
		n, err := queryInt(q, name)
		if err != nil {
			writeError(w, err)
			return
		}
		*dst = n
	}
	flusher, _ := w.(http.Flusher)
	started := false
	start := func() {
		if !started {
			started = true
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusOK)
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
	err := h.cfg.Methods.Stream(requestContext(r), method(req.kind, "Logs"), opts, nil, func(b []byte) error {
		chunk := &corev1.LogChunk{}
		if err := proto.Unmarshal(b, chunk); err != nil {
			return err
		}
		start()
		if _, err := w.Write(chunk.GetData()); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	})
	if err != nil && !started {
		writeError(w, err)
		return
	}
	start()
}
