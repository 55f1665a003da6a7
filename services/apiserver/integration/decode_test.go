package integration

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
)

// invokeRaw sends b as it is (client.Raw) to a unary method
// and decodes the answer into out.
func invokeRaw(ctx context.Context, conn *grpc.ClientConn, method string, b []byte, out proto.Message) error {
	return conn.Invoke(ctx, method, b, out, client.Raw())
}

// withUnknown returns m's encoding with a string field number num appended.
func withUnknown(t *testing.T, m proto.Message, num protowire.Number) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, "from a newer client")
}

// setUnknown gives m a string field number num it does not know.
func setUnknown[M proto.Message](m M, num protowire.Number) M {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	m.ProtoReflect().SetUnknown(protowire.AppendString(b, "from a newer client"))
	return m
}

// startObserved starts an apiserver whose log is kept, at every level.
func startObserved(t *testing.T) (*apiservertest.Server, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) { c.Logger = zap.New(core) }))
	return s, logs
}

func noErrorLogged(t *testing.T, logs *observer.ObservedLogs) {
	t.Helper()
	for _, e := range logs.FilterLevelExact(zapcore.ErrorLevel).All() {
		t.Errorf("logged at error level: %s %v", e.Message, e.ContextMap())
	}
}

// Bytes that are not protobuf are the client's mistake, as Kubernetes'
// 400 for a body it cannot decode: INVALID_ARGUMENT, not INTERNAL, and no
// error in the server's log.
func TestUndecodableRequestIsInvalidArgument(t *testing.T) {
	s, logs := startObserved(t)
	ctx := testContext(t)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"a truncated field", []byte{0x0a, 0x05, 'a', 'b'}},
		{"field number 0", []byte{0x00, 0x01}},
		{"an invalid wire type", []byte{0x0f, 0x01}},
		{"a truncated tag", []byte{0xff, 0xff, 0xff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := invokeRaw(ctx, s.Conn, "/skiff.core.v1.ConfigMaps/Create", tc.b, &corev1.ConfigMap{})
			wantRefused(t, err, codes.InvalidArgument, "could not be decoded", "skiff.core.v1.ConfigMap")
			if !apierrors.IsBadRequest(apierrors.FromError(err)) {
				t.Errorf("reason: want BadRequest, got %v", apierrors.ReasonForError(apierrors.FromError(err)))
			}
		})
	}
	// The chain answered them: counted as Kubernetes counts a 400, logged
	// at debug level.
	if n := metricValue(t, s, "apiserver_request_total", map[string]string{"verb": "POST", "resource": "configmaps", "code": "400"}); n != 4 {
		t.Errorf("apiserver_request_total of the refused creates with code 400: %v, want 4", n)
	}
	if n := logs.FilterMessage("request").FilterField(zap.String("method", "/skiff.core.v1.ConfigMaps/Create")).FilterField(zap.String("code", codes.InvalidArgument.String())).Len(); n != 4 {
		t.Errorf("debug lines of the refused creates: %d, want 4", n)
	}
	t.Run("a watch's options", func(t *testing.T) {
		st, err := s.Conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/skiff.core.v1.ConfigMaps/Watch", client.Raw())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SendMsg([]byte{0x0a, 0x05, 'a'}); err != nil {
			t.Fatal(err)
		}
		if err := st.CloseSend(); err != nil {
			t.Fatal(err)
		}
		var resp corev1.ConfigMapWatchResponse
		wantRefused(t, st.RecvMsg(&resp), codes.InvalidArgument, "could not be decoded", "skiff.meta.v1.ListOptions")
	})
	noErrorLogged(t, logs)
}

// A write carrying fields the server does not know is refused, as
// Kubernetes' strict field validation refuses unknown fields, and nothing
// is stored; reads ignore them.
func TestUnknownFieldsInWritesAreRefused(t *testing.T) {
	s, logs := startObserved(t)
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	stored := func(name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := cms.Get(ctx, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}

	t.Run("create: a field of the object", func(t *testing.T) {
		cm := &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "extra"}, Data: map[string]string{"a": "b"}}
		err := invokeRaw(ctx, s.Conn, "/skiff.core.v1.ConfigMaps/Create", withUnknown(t, cm, 99), &corev1.ConfigMap{})
		wantRefused(t, err, codes.InvalidArgument, "unknown field number 99 in skiff.core.v1.ConfigMap")
		if _, err := cms.Get(ctx, "default", "extra"); !apierrors.IsNotFound(err) {
			t.Errorf("get after the refused create: want NotFound, got %v", err)
		}
	})
	t.Run("create: a field of metadata", func(t *testing.T) {
		cm := &corev1.ConfigMap{Metadata: setUnknown(&metav1.ObjectMeta{Name: "extra-meta"}, 42)}
		_, err := cms.Create(ctx, cm)
		wantRefused(t, err, codes.InvalidArgument, "unknown field number 42 in skiff.meta.v1.ObjectMeta (at metadata)")
		if _, err := cms.Get(ctx, "default", "extra-meta"); !apierrors.IsNotFound(err) {
			t.Errorf("get after the refused create: want NotFound, got %v", err)
		}
	})
	t.Run("create: a field of a list's element", func(t *testing.T) {
		p := pod("default", "extra", &corev1.Container{Name: "web", Image: "nginx"}, setUnknown(&corev1.Container{Name: "side", Image: "busybox"}, 77))
		_, err := client.Pods(s.Conn).Create(ctx, p)
		wantRefused(t, err, codes.InvalidArgument, "unknown field number 77 in skiff.core.v1.Container (at spec.containers[1])")
	})

	cm, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "known"}, Data: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("update", func(t *testing.T) {
		next := proto.Clone(cm).(*corev1.ConfigMap)
		next.Data["a"] = "changed"
		err := invokeRaw(ctx, s.Conn, "/skiff.core.v1.ConfigMaps/Update", withUnknown(t, next, 99), &corev1.ConfigMap{})
		wantRefused(t, err, codes.InvalidArgument, "unknown field number 99 in skiff.core.v1.ConfigMap")
		if got := stored("known"); got.GetMetadata().GetResourceVersion() != cm.GetMetadata().GetResourceVersion() || got.GetData()["a"] != "b" {
			t.Errorf("the refused update was stored: %v", got)
		}
	})
	t.Run("update status", func(t *testing.T) {
		p, err := client.Pods(s.Conn).Create(ctx, pod("default", "status"))
		if err != nil {
			t.Fatal(err)
		}
		p.Status = setUnknown(&corev1.PodStatus{Phase: "Running"}, 1000)
		_, err = client.Pods(s.Conn).UpdateStatus(ctx, p)
		wantRefused(t, err, codes.InvalidArgument, "unknown field number 1000 in skiff.core.v1.PodStatus (at status)")
	})
	t.Run("reads ignore unknown fields", func(t *testing.T) {
		var got corev1.ConfigMap
		req := withUnknown(t, &metav1.GetRequest{Namespace: "default", Name: "known"}, 50)
		if err := invokeRaw(ctx, s.Conn, "/skiff.core.v1.ConfigMaps/Get", req, &got); err != nil {
			t.Fatalf("get: %v", err)
		}
		var list corev1.ConfigMapList
		req = withUnknown(t, &metav1.ListOptions{Namespace: "default"}, 50)
		if err := invokeRaw(ctx, s.Conn, "/skiff.core.v1.ConfigMaps/List", req, &list); err != nil {
			t.Fatalf("list: %v", err)
		}
	})
	noErrorLogged(t, logs)
}
