package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Error categories; each maps to one gRPC code (Code).
var (
	errNotFound           = errors.New("not found")
	errAlreadyExists      = errors.New("already exists")
	errFailedPrecondition = errors.New("failed precondition")
	errInvalid            = errors.New("invalid argument")
	errUnavailable        = errors.New("unavailable")
	errExhausted          = errors.New("resource exhausted")
	errInternal           = errors.New("internal")
)

// Code is the gRPC code of an error of this package: the one place where
// categories become codes.
func Code(err error) codes.Code {
	switch {
	case err == nil:
		return codes.OK
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, errNotFound):
		return codes.NotFound
	case errors.Is(err, errAlreadyExists):
		return codes.AlreadyExists
	case errors.Is(err, errFailedPrecondition):
		return codes.FailedPrecondition
	case errors.Is(err, errInvalid):
		return codes.InvalidArgument
	case errors.Is(err, errUnavailable):
		return codes.Unavailable
	case errors.Is(err, errExhausted):
		return codes.ResourceExhausted
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return codes.Unknown
}

// toStatus turns an error of the runtime into a gRPC status. The message
// drops the category prefix: "failed to pull ...: not found", as
// containerd words it.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	msg := err.Error()
	for _, cat := range []error{errNotFound, errAlreadyExists, errFailedPrecondition, errInvalid, errUnavailable, errExhausted, errInternal} {
		if p := cat.Error() + ": "; len(msg) > len(p) && msg[:len(p)] == p {
			msg = msg[len(p):]
			break
		}
	}
	return status.Error(Code(err), msg)
}

// Server serves a Runtime over gRPC.
type Server struct {
	*Runtime
	grpc     *grpc.Server
	endpoint string
	dir      string // removed on Close when Start made it
	done     chan struct{}
	once     sync.Once
	err      error
}

// Start makes a Runtime and serves it on a unix socket in a new temporary
// directory. Close stops it.
func Start(o Options) (*Server, error) {
	r, err := New(o)
	if err != nil {
		return nil, err
	}
	// Short paths: a unix socket path is limited to 108 bytes.
	dir, err := os.MkdirTemp("", "skiffsim")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := r.Serve(l)
	s.endpoint = "unix://" + sock
	s.dir = dir
	return s, nil
}

// Serve serves r on l until Close.
func (r *Runtime) Serve(l net.Listener) *Server {
	g := grpc.NewServer(grpc.UnaryInterceptor(r.intercept))
	runtimeapi.RegisterRuntimeServiceServer(g, r)
	runtimeapi.RegisterImageServiceServer(g, r)
	s := &Server{Runtime: r, grpc: g, endpoint: l.Addr().String(), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.err = g.Serve(l)
	}()
	return s
}

// intercept injects the faults and latencies the test asked for and maps
// errors to gRPC codes.
func (r *Runtime) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := r.before(ctx, path.Base(info.FullMethod)); err != nil {
		return nil, toStatus(err)
	}
	resp, err := h(ctx, req)
	return resp, toStatus(err)
}

// Endpoint is the address to give a CRI client ("unix:///tmp/.../cri.sock").
func (s *Server) Endpoint() string { return s.endpoint }

// Close stops serving and removes the socket's directory.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.grpc.Stop()
		<-s.done
		if s.dir != "" {
			os.RemoveAll(s.dir)
		}
	})
	if s.err != nil && !errors.Is(s.err, grpc.ErrServerStopped) {
		return fmt.Errorf("sim: serving: %w", s.err)
	}
	return nil
}
