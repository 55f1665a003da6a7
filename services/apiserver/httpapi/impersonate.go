package httpapi

import (
	"net/http"
	"strings"

	"google.golang.org/grpc/metadata"

	"skiff.dev/services/apiserver/server"
)

// impersonationHeaders passes Kubernetes' Impersonate-User,
// Impersonate-Group (repeated), Impersonate-Uid and
// Impersonate-Extra-<key> headers to the chain as the incoming metadata
// of the same names, where it authorizes and applies them
// (server/impersonate.go) as it does for a gRPC call's.
func impersonationHeaders(h http.Header, md metadata.MD) {
	const prefix = "impersonate-"
	for k, vs := range h {
		// Most requests have none: only a header that starts so is
		// lowered (an allocation each).
		if len(k) < len(prefix) || !strings.EqualFold(k[:len(prefix)], prefix) {
			continue
		}
		lk := strings.ToLower(k)
		switch {
		case lk == server.ImpersonateUserHeader, lk == server.ImpersonateGroupHeader, lk == server.ImpersonateUIDHeader,
			strings.HasPrefix(lk, server.ImpersonateExtraHeaderPrefix):
			md.Append(lk, vs...)
		}
	}
}
