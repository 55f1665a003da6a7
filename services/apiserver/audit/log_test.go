package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// event is the part of an audit.k8s.io/v1 Event the tests read.
type event struct {
	Kind, APIVersion, Level, AuditID, Stage, RequestURI, Verb string
	User, ImpersonatedUser                                    *struct {
		Username string
		UID      string
		Groups   []string
	}
	ObjectRef *struct {
		Resource, Namespace, Name, APIGroup, Subresource string
	}
	ResponseStatus struct {
		Code                    int
		Status, Message, Reason string
	}
	RequestObject            json.RawMessage
	ResponseObject           json.RawMessage
	RequestReceivedTimestamp time.Time
	StageTimestamp           time.Time
}

func readEvents(t *testing.T, path string) []event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

var alice = &user.Info{Name: "alice", UID: "u-1", Groups: []string{"devs", user.AllAuthenticated}}

func createRequest(name string) (*server.RequestInfo, *corev1.ConfigMap) {
	ri := &server.RequestInfo{ID: "req-1", Path: "/skiff.core.v1.ConfigMaps/Create", Resource: "configmaps", Verb: "create",
		Namespaced: true, Namespace: "team-a", Name: name, User: alice, Start: time.Date(2026, 5, 1, 10, 0, 0, 123456000, time.UTC)}
	cm := &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "team-a", Name: name, GenerateName: "cfg-"}, Data: map[string]string{"k": "v"}}
	return ri, cm
}

// runLog starts a log of o on a temporary file with its writer; stop ends
// the writer and waits for it.
func runLog(t *testing.T, o Options) (l *Log, path string, reg *prometheus.Registry, stop func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "audit.log")
	o.Path = path
	reg = prometheus.NewRegistry()
	l, err := New(o, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go l.Run(ctx)
	return l, path, reg, func() { cancel(); <-l.Stopped() }
}

func TestLevels(t *testing.T) {
	for _, level := range []Level{LevelMetadata, LevelRequest, LevelRequestResponse} {
		t.Run(string(level), func(t *testing.T) {
			l, path, _, stop := runLog(t, Options{Level: level})
			ri, cm := createRequest("")
			stored := &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "team-a", Name: "cfg-x1", ResourceVersion: "7"}, Data: cm.Data}
			l.Audit(ri, cm, stored, nil)
			stop()
			events := readEvents(t, path)
			if len(events) != 1 {
				t.Fatalf("%d events, want 1", len(events))
			}
			e := events[0]
			if e.Kind != "Event" || e.APIVersion != "audit.k8s.io/v1" || e.Level != string(level) || e.AuditID != "req-1" ||
				e.Stage != "ResponseComplete" || e.RequestURI != ri.Path || e.Verb != "create" {
				t.Errorf("header fields: %+v", e)
			}
			if e.User.Username != "alice" || e.User.UID != "u-1" || strings.Join(e.User.Groups, ",") != "devs,system:authenticated" {
				t.Errorf("user %+v", e.User)
			}
			if r := e.ObjectRef; r == nil || r.Resource != "configmaps" || r.Namespace != "team-a" || r.Name != "cfg-x1" {
				t.Errorf("objectRef %+v: want configmaps team-a/cfg-x1 (the created name)", r)
			}
			if e.ResponseStatus.Code != 201 || e.ResponseStatus.Status != "Success" {
				t.Errorf("responseStatus %+v", e.ResponseStatus)
			}
			if !e.RequestReceivedTimestamp.Equal(ri.Start) || e.StageTimestamp.Before(ri.Start) {
				t.Errorf("timestamps %v %v", e.RequestReceivedTimestamp, e.StageTimestamp)
			}
			hasReq, hasResp := len(e.RequestObject) > 0, len(e.ResponseObject) > 0
			if hasReq != level.atLeast(LevelRequest) || hasResp != level.atLeast(LevelRequestResponse) {
				t.Errorf("request object %s, response object %s at level %s", e.RequestObject, e.ResponseObject, level)
			}
			if hasReq && !strings.Contains(string(e.RequestObject), `"generateName":"cfg-"`) {
				t.Errorf("request object %s is not the request", e.RequestObject)
			}
			if hasResp && !strings.Contains(string(e.ResponseObject), `"resourceVersion":"7"`) {
				t.Errorf("response object %s is not the response", e.ResponseObject)
			}
		})
	}
}

func TestFailuresAndOmissions(t *testing.T) {
	l, path, _, stop := runLog(t, Options{Level: LevelMetadata, OmitVerbs: []string{"get", "list"}})
	ri, _ := createRequest("web")
	l.Audit(ri, nil, nil, apierrors.NewForbidden("configmaps", "web", `user "alice" cannot create resource "configmaps" in the namespace "team-a"`).GRPCStatus().Err())
	l.Audit(&server.RequestInfo{Path: "/skiff.core.v1.ConfigMaps/Get", Resource: "configmaps", Verb: "get", User: alice}, nil, nil, nil)
	l.Audit(&server.RequestInfo{Path: "/grpc.health.v1.Health/Check", Verb: "check", User: alice}, nil, nil, nil)
	l.Audit(&server.RequestInfo{Path: "/skiff.discovery.v1.Discovery/ServerResources", Verb: "serverresources", User: alice}, nil, nil, context.Canceled)
	stop()
	events := readEvents(t, path)
	if len(events) != 2 {
		t.Fatalf("%d events, want 2 (the get and the health check omitted): %+v", len(events), events)
	}
	if s := events[0].ResponseStatus; s.Code != 403 || s.Status != "Failure" || s.Reason != "Forbidden" || !strings.Contains(s.Message, `cannot create`) {
		t.Errorf("denied create: %+v", s)
	}
	if events[1].ObjectRef != nil || events[1].ResponseStatus.Code != 499 {
		t.Errorf("non-resource call cancelled by the client: objectRef %+v, status %+v", events[1].ObjectRef, events[1].ResponseStatus)
	}
}

// TestFullBufferDrops: with no writer running and room for one event, the
// second is dropped and counted, not waited for.
func TestFullBufferDrops(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	reg := prometheus.NewRegistry()
	l, err := New(Options{Path: path, Level: LevelMetadata, BufferSize: 1}, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ri, _ := createRequest("web")
	done := make(chan struct{})
	go func() {
		l.Audit(ri, nil, nil, nil)
		l.Audit(ri, nil, nil, nil)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Audit blocked on a full buffer")
	}
	if got, lost := testutil.ToFloat64(l.events), testutil.ToFloat64(l.lost); got != 2 || lost != 1 {
		t.Errorf("events %v, lost %v; want 2 and 1", got, lost)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l.Run(ctx) // writes the buffered one and returns
	// After the writer stopped, a request writes its own event.
	l.Audit(ri, nil, nil, nil)
	if n := len(readEvents(t, path)); n != 2 {
		t.Errorf("%d events in the file, want 2 (one buffered, one after the stop)", n)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metric lint: %v %v", problems, err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrorsCounted(t *testing.T) {
	l, _, _, stop := runLog(t, Options{Level: LevelMetadata})
	stop()
	l.out = failingWriter{}
	ri, _ := createRequest("web")
	l.Audit(ri, nil, nil, nil)
	l.Audit(ri, nil, nil, nil)
	if lost := testutil.ToFloat64(l.lost); lost != 2 {
		t.Errorf("lost %v, want 2", lost)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `quo"te back\slash`, "tab\tnl\ncr\r\x00\x1f", "é ✓ 🚀", "bad \xff utf8", "line\u2028sep\u2029"} {
		b := appendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("%q encodes as %s: %v", s, b, err)
			continue
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if got != want {
			t.Errorf("%q round-trips as %q", s, got)
		}
	}
}

func TestOptions(t *testing.T) {
	if l, err := New(Options{}, nil, nil); l != nil || err != nil {
		t.Errorf("zero options: %v, %v; want off", l, err)
	}
	if l, err := New(Options{Path: filepath.Join(t.TempDir(), "a.log"), Level: LevelNone}, nil, nil); l != nil || err != nil {
		t.Errorf("level None: %v, %v; want off", l, err)
	}
	for _, o := range []Options{
		{Path: "x", Level: "Everything"},
		{Path: "x", Level: LevelMetadata, OmitVerbs: []string{"patch"}},
		{Path: "x", Level: LevelMetadata, BufferSize: -1},
		{Path: filepath.Join(t.TempDir(), "no", "such", "dir", "a.log"), Level: LevelMetadata},
	} {
		if _, err := New(o, nil, nil); err == nil || !strings.Contains(err.Error(), "--audit-") {
			t.Errorf("New(%+v) = %v, want an error naming the flag", o, err)
		}
	}
}

func BenchmarkAudit(b *testing.B) {
	path := filepath.Join(b.TempDir(), "audit.log")
	l, err := New(Options{Path: path, Level: LevelMetadata, BufferSize: 1 << 20}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	ri, cm := createRequest("web")
	b.ReportAllocs()
	for b.Loop() {
		l.Audit(ri, cm, cm, nil)
	}
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l.Run(ctx)
}

func BenchmarkEncode(b *testing.B) {
	ri, cm := createRequest("web")
	ri.User = alice
	for _, level := range []Level{LevelMetadata, LevelRequest} {
		b.Run(string(level), func(b *testing.B) {
			e := entry{ri: ri, name: "web", req: cm, at: time.Now()}
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				buf = appendEvent(buf[:0], level, &e)
			}
		})
	}
}

// TestImpersonation: a request made as another user records who
// authenticated as user and whom it acted as as impersonatedUser.
func TestImpersonation(t *testing.T) {
	l, path, _, stop := runLog(t, Options{Level: LevelMetadata})
	ri, cm := createRequest("a")
	ri.Impersonator = alice
	ri.User = &user.Info{Name: "bob", Groups: []string{user.AllAuthenticated}}
	l.Audit(ri, cm, cm, nil)
	stop()
	evs := readEvents(t, path)
	if len(evs) != 1 || evs[0].User == nil || evs[0].ImpersonatedUser == nil {
		t.Fatalf("events %+v", evs)
	}
	if evs[0].User.Username != "alice" || evs[0].ImpersonatedUser.Username != "bob" {
		t.Errorf("user %+v, impersonatedUser %+v", evs[0].User, evs[0].ImpersonatedUser)
	}
}
