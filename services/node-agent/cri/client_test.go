package cri

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"))
}

// slowRuntime answers Version after a delay and Status with NotFound.
type slowRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	delay time.Duration
}

func (s slowRuntime) Version(ctx context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	select {
	case <-time.After(s.delay):
		return &runtimeapi.VersionResponse{RuntimeName: "slow"}, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

func (slowRuntime) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	return nil, status.Error(codes.NotFound, "no status here")
}

func TestEndpointsTimeoutsAndMetrics(t *testing.T) {
	dir, err := os.MkdirTemp("", "cri")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(g, slowRuntime{delay: time.Second})
	go g.Serve(l)
	defer g.Stop()

	for _, endpoint := range []string{"unix://" + sock, sock} {
		conn, err := Dial(endpoint)
		if err != nil {
			t.Fatalf("Dial(%q): %v", endpoint, err)
		}
		reg := prometheus.NewRegistry()
		c := New(conn, Options{Metrics: NewMetrics(reg), Timeout: 50 * time.Millisecond})
		_, err = c.Version(context.Background())
		if status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("%s: Version past the timeout: %v", endpoint, err)
		}
		_, err = c.Status(context.Background())
		if !IsNotFound(err) || Message(err) != "no status here" {
			t.Errorf("%s: Status: %v", endpoint, err)
		}
		if n := testutil.ToFloat64(c.m.errors.WithLabelValues("version")); n != 1 {
			t.Errorf("version errors = %v", n)
		}
		if n := testutil.ToFloat64(c.m.total.WithLabelValues("status")); n != 1 {
			t.Errorf("status calls = %v", n)
		}
		conn.Close()
	}
	if Message(errors.New("plain")) != "plain" {
		t.Error("Message of a plain error")
	}
}
