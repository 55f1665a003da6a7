package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/user"
)

type oneUser struct{ u *user.Info }

func (a oneUser) Authenticate(context.Context, *RequestInfo) (*user.Info, error) { return a.u, nil }

// TestAccessLog: with AccessLog on, each finished request is one info line
// "access" that says who (user), what (verb, resource, subresource,
// namespace, name), the outcome (gRPC code and the HTTP code it would have
// had) and how long it took; never the messages (a ConfigMap's data).
// Health checks have none; with AccessLog off nothing is written.
func TestAccessLog(t *testing.T) {
	rs := Routes{}
	rs.Add("skiff.core.v1.ConfigMaps", "", "configmaps", true)
	rs.Add("skiff.core.v1.Pods", "", "pods", true)
	secret := &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "a", Name: "cm"}, Data: map[string]string{"password": "s3cret-value"}}
	call := func(chain *Chain, method string, req any, err error) {
		handler := func(context.Context, any) (any, error) { return nil, err }
		_, _ = chain.Unary(context.Background(), req, &grpc.UnaryServerInfo{FullMethod: method}, handler)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	chain := NewChain(rs, nil, zap.New(core))
	chain.Authenticator = oneUser{&user.Info{Name: "alice", Groups: []string{"dev"}}}
	chain.AccessLog = true
	call(chain, "/skiff.core.v1.ConfigMaps/Create", secret, nil)
	call(chain, "/skiff.core.v1.Pods/UpdateStatus", &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "a", Name: "p"}}, apierrors.NewConflict("pods", "p", "stale"))
	call(chain, "/skiff.core.v1.Pods/List", &metav1.ListOptions{}, nil)
	call(chain, "/grpc.health.v1.Health/Check", &metav1.GetRequest{}, nil)

	type line map[string]any
	want := []line{
		{"user": "alice", "verb": "create", "resource": "configmaps", "subresource": "", "namespace": "a", "name": "cm", "code": "OK", "httpCode": int64(201)},
		{"user": "alice", "verb": "update", "resource": "pods", "subresource": "status", "namespace": "a", "name": "p", "code": "Aborted", "httpCode": int64(409)},
		{"user": "alice", "verb": "list", "resource": "pods", "subresource": "", "namespace": "", "name": "", "code": "OK", "httpCode": int64(200)},
	}
	got := logs.FilterMessage("access").All()
	if len(got) != len(want) {
		t.Fatalf("%d access lines, want %d (none for the health check): %v", len(got), len(want), got)
	}
	for i, e := range got {
		if e.Level != zapcore.InfoLevel {
			t.Errorf("line %d at level %v, want info", i, e.Level)
		}
		fields := e.ContextMap()
		for k, v := range want[i] {
			if fields[k] != v {
				t.Errorf("line %d: %s = %#v, want %#v (%v)", i, k, fields[k], v, fields)
			}
		}
		if _, ok := fields["duration"]; !ok {
			t.Errorf("line %d has no duration: %v", i, fields)
		}
		if s := fmt.Sprint(fields); strings.Contains(s, "s3cret") {
			t.Errorf("line %d shows the request's content: %s", i, s)
		}
	}

	quiet, quietLogs := observer.New(zapcore.DebugLevel)
	off := NewChain(rs, nil, zap.New(quiet))
	call(off, "/skiff.core.v1.ConfigMaps/Create", secret, nil)
	if n := quietLogs.FilterMessage("access").Len(); n != 0 {
		t.Errorf("AccessLog off: %d access lines", n)
	}
}
