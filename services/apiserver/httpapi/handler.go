// Package httpapi serves Kubernetes' HTTP API beside the gRPC API, on the
// same port (listener.go: Split): discovery, OpenAPI, health, and the
// REST verbs of every declared kind, in Kubernetes' JSON. A REST request
// becomes a call of the kind's gRPC method in-process (server.Methods),
// through the same chain as a gRPC client's call: authentication,
// fairness, authorization, admission (in the registry), audit and metrics
// are the gRPC API's, not copies of them.
package httpapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"go.uber.org/zap"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/discoverydoc"
	"skiff.dev/internal/kinds"
	"skiff.dev/internal/openapi"
	"skiff.dev/internal/version"
	"skiff.dev/services/apiserver/patch"
	"skiff.dev/services/apiserver/server"
)

// Config is what the handler serves from.
type Config struct {
	// GRPC serves requests of content-type application/grpc (a gRPC client
	// that did not negotiate client.GRPCProtocol): the gRPC server.
	GRPC http.Handler
	// Methods calls the gRPC API's methods in-process.
	Methods *server.Methods
	// Version is the build's, for /version and the OpenAPI documents.
	Version version.Info
	// Ready says whether the server serves (readyz, healthz); Live whether
	// the process is alive and not shutting down (livez).
	Ready, Live func() bool
	// Address is the host:port clients reach the server at, for /api's
	// serverAddressByClientCIDRs ("" for none).
	Address string
	Log     *zap.Logger
}

// Handler is the HTTP API.
type Handler struct {
	cfg       Config
	resources map[gvr]*kinds.Kind

	openapiOnce sync.Once
	openapi     *openapi.Documents
	openapiErr  error
	// v2Proto is /openapi/v2 in protobuf (gnostic's openapi_v2.Document),
	// made from the JSON on its first request.
	v2ProtoOnce sync.Once
	v2Proto     []byte
	v2ProtoErr  error

	patcherOnce sync.Once
	patcherV    *patch.Patcher
	patcherErr  error

	// creates are the managed fields of creates by shape (createfields.go).
	creates createShapes
}

// gvr names a served resource: its group, version and plural.
type gvr struct{ group, version, resource string }

// New returns the handler of every declared kind.
func New(cfg Config) *Handler {
	h := &Handler{cfg: cfg, resources: map[gvr]*kinds.Kind{}}
	for _, k := range kinds.All() {
		h.resources[gvr{k.Group, k.Version, k.Resource}] = k
	}
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
		h.cfg.GRPC.ServeHTTP(w, r)
		return
	}
	path := r.URL.Path
	switch {
	case isHealthPath(path):
		h.health(w, r)
	case path == "/api" || strings.HasPrefix(path, "/api/") || path == "/apis" || strings.HasPrefix(path, "/apis/"):
		if rv, ok := reviewOf(path); ok {
			h.serveReview(w, r, rv)
			return
		}
		if req, ok := h.parseResource(path); ok {
			h.serveResource(w, r, req)
			return
		}
		h.nonResource(w, r, h.discovery)
	case path == "/version" || path == "/version/":
		h.nonResource(w, r, func(*http.Request) ([]byte, string, error) {
			return discoverydoc.Version(h.cfg.Version), "application/json", nil
		})
	case path == "/openapi/v2" || path == "/openapi/v3" || strings.HasPrefix(path, "/openapi/v3/"):
		h.nonResource(w, r, h.openAPI)
	default:
		h.nonResource(w, r, nil)
	}
}

func notFound() error {
	se := apierrors.NewNotFound("", "")
	se.Status.Message = "the server could not find the requested resource"
	se.Status.Details = nil
	return se
}

// requestContext is what the chain authenticates a request by, as it
// finds it for a gRPC call: the peer (its TLS state: client certificates)
// and incoming metadata (the bearer token, the request id).
func requestContext(r *http.Request) context.Context {
	p := &peer.Peer{}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		p.Addr = net.TCPAddrFromAddrPort(ap)
	}
	if r.TLS != nil {
		p.AuthInfo = credentials.TLSInfo{State: *r.TLS, CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}
	}
	md := metadata.MD{}
	if v := r.Header.Get("Authorization"); v != "" {
		md.Set("authorization", v)
	}
	if v := r.Header.Get("X-Request-Id"); v != "" {
		md.Set(server.RequestIDHeader, v)
	}
	if v := r.Header.Get("User-Agent"); v != "" {
		md.Set("user-agent", v)
	}
	impersonationHeaders(r.Header, md)
	return metadata.NewIncomingContext(peer.NewContext(r.Context(), p), md)
}

// nonResource serves a document that is not a resource (discovery,
// OpenAPI, /version) through the chain as a get of its path, which RBAC
// grants by nonResourceURLs (system:discovery, system:public-info-viewer).
// A nil doc is a path nothing serves: not found, whatever the method, as
// kube-apiserver answers.
func (h *Handler) nonResource(w http.ResponseWriter, r *http.Request, doc func(*http.Request) (body []byte, contentType string, err error)) {
	if doc == nil {
		doc = func(*http.Request) ([]byte, string, error) { return nil, "", notFound() }
	} else if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, apierrors.NewMethodNotAllowed(r.URL.Path, r.Method))
		return
	}
	var body []byte
	var contentType string
	_, err := h.cfg.Methods.Admit(requestContext(r), r.URL.Path, nil, func(context.Context) (proto.Message, error) {
		var err error
		body, contentType, err = doc(r)
		return nil, err
	})
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// discovery answers /api, /apis and their group and version documents;
// the roots in aggregated form (apidiscovery.k8s.io/v2) when the client
// accepts it, as kubectl and client-go ask first.
func (h *Handler) discovery(r *http.Request) ([]byte, string, error) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	aggregated := strings.Contains(r.Header.Get("Accept"), "g=apidiscovery.k8s.io;v=v2")
	switch path {
	case "/api":
		if aggregated {
			return discoverydoc.Aggregated(discoverydoc.Core), discoverydoc.AggregatedContentType, nil
		}
		return discoverydoc.APIVersions(h.cfg.Address), "application/json", nil
	case "/apis":
		if aggregated {
			return discoverydoc.Aggregated(discoverydoc.Groups), discoverydoc.AggregatedContentType, nil
		}
		return discoverydoc.APIGroupList(), "application/json", nil
	case "/api/v1":
		if doc, ok := discoverydoc.APIResourceList("v1"); ok {
			return doc, "application/json", nil
		}
	}
	if rest, ok := strings.CutPrefix(path, "/apis/"); ok {
		parts := strings.Split(rest, "/")
		switch len(parts) {
		case 1:
			if doc, ok := discoverydoc.APIGroup(parts[0]); ok {
				return doc, "application/json", nil
			}
		case 2:
			if doc, ok := discoverydoc.APIResourceList(parts[0] + "/" + parts[1]); ok {
				return doc, "application/json", nil
			}
		}
	}
	return nil, "", notFound()
}

// openAPIDocs are the OpenAPI documents, built on first use.
func (h *Handler) openAPIDocs() (*openapi.Documents, error) {
	h.openapiOnce.Do(func() {
		h.openapi, h.openapiErr = openapi.Build(kinds.All(), discoverydoc.GitVersion(h.cfg.Version.GitVersion))
	})
	return h.openapi, h.openapiErr
}

// openAPI answers /openapi/v2 (JSON) and /openapi/v3[/<group version>],
// built on first use (they take a moment and most clients never ask).
func (h *Handler) openAPI(r *http.Request) ([]byte, string, error) {
	if _, err := h.openAPIDocs(); err != nil {
		return nil, "", apierrors.NewInternal(err)
	}
	switch p := r.URL.Path; {
	case p == "/openapi/v2" && acceptsV2Protobuf(r.Header.Values("Accept")):
		h.v2ProtoOnce.Do(func() {
			doc, err := openapiv2.ParseDocument(h.openapi.V2())
			if err == nil {
				h.v2Proto, err = proto.Marshal(doc)
			}
			h.v2ProtoErr = err
		})
		if h.v2ProtoErr != nil {
			return nil, "", apierrors.NewInternal(fmt.Errorf("OpenAPI v2 in protobuf: %w", h.v2ProtoErr))
		}
		return h.v2Proto, v2ProtobufReturned, nil
	case p == "/openapi/v2":
		return h.openapi.V2(), "application/json", nil
	case p == "/openapi/v3":
		return h.openapi.V3Index(), "application/json", nil
	default:
		doc, _, ok := h.openapi.V3(strings.TrimPrefix(p, "/openapi/v3/"))
		if !ok {
			return nil, "", notFound()
		}
		return doc, "application/json", nil
	}
}

// v2ProtobufType is the media type of /openapi/v2 in protobuf as clients
// ask for it; v2ProtobufReturned is what kube-openapi answers it with (the
// spelling with a dot, which mime parsers accept: "@" is no token
// character).
const (
	v2ProtobufType     = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	v2ProtobufReturned = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
)

// acceptsV2Protobuf says whether an Accept header asks for /openapi/v2 in
// protobuf before JSON (the first of the types it names that is served).
func acceptsV2Protobuf(accept []string) bool {
	for _, h := range accept {
		for _, part := range strings.Split(h, ",") {
			// Not mime.ParseMediaType: "@" is no token character.
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case v2ProtobufType, v2ProtobufReturned:
				return true
			case "application/json", "*/*", "application/*":
				return false
			}
		}
	}
	return false
}
