package server

import (
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
)

// accessLog writes the access log line of a finished request
// (Chain.AccessLog), at info level: who (the authenticated user; "" when
// authentication refused the request), what (verb, resource,
// subresource, namespace, name, and the gRPC method), the outcome (the
// gRPC code and the HTTP code the call would have had, as
// apiserver_request_total's) and how long it took (a watch or a log
// stream: how long it was open). Never a request's or a response's
// message, nor credentials. Health checks have none (probes call them
// every few seconds).
func (c *Chain) accessLog(ri *RequestInfo, code codes.Code, httpCode int, took time.Duration) {
	if publicMethod(ri.Path) {
		return
	}
	var name string
	if ri.User != nil {
		name = ri.User.Name
	}
	c.Log.Info("access",
		zap.String("request_id", ri.ID),
		zap.String("user", name),
		zap.String("verb", ri.Verb),
		zap.String("apiGroup", ri.APIGroup),
		zap.String("resource", ri.Resource),
		zap.String("subresource", ri.Subresource),
		zap.String("namespace", ri.Namespace),
		zap.String("name", ri.Name),
		zap.String("method", ri.Path),
		zap.String("code", code.String()),
		zap.Int("httpCode", httpCode),
		zap.Duration("duration", took),
	)
}
