package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/manifest"
)

// newLogger logs to w when --v is 1 or more.
func newLogger(w io.Writer, v int) *zap.Logger {
	if v <= 0 {
		return zap.NewNop()
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.CallerKey, enc.StacktraceKey = "", ""
	enc.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000000")
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(w), zapcore.DebugLevel)
	return zap.New(core)
}

// body renders a message for --v=8, as JSON in Kubernetes' shape.
func body(m any) string {
	pm, ok := m.(proto.Message)
	if !ok {
		return ""
	}
	return strings.TrimSuffix(manifest.CompactJSON(manifest.Encode(pm)), "\n")
}

// unaryInterceptor logs each call at --v=6 (method, code, time) and its
// request and response at --v=8, as kubectl logs its HTTP requests.
func (r *root) unaryInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	if r.flags.verbosity >= 8 {
		r.log.Info(method + " request body: " + body(req))
	}
	err := invoker(ctx, method, req, reply, cc, opts...)
	if r.flags.verbosity >= 6 {
		r.log.Info(fmt.Sprintf("%s %s in %d milliseconds", method, status.Code(err), time.Since(start).Milliseconds()))
	}
	if r.flags.verbosity >= 8 && err == nil {
		r.log.Info(method + " response body: " + body(reply))
	}
	return err
}

// streamInterceptor logs the opening of each stream at --v=6.
func (r *root) streamInterceptor(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if r.flags.verbosity >= 6 {
		r.log.Info(fmt.Sprintf("%s stream opened: %s", method, status.Code(err)))
	}
	return s, err
}
