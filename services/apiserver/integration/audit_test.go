package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/audit"
)

// auditEvent is what the tests read of an audit line.
type auditEvent struct {
	Level, AuditID, Verb, RequestURI string
	User                             struct {
		Username string
		Groups   []string
	}
	ObjectRef      struct{ Resource, Namespace, Name string }
	ResponseStatus struct {
		Code   int
		Status string
		Reason string
	}
	RequestObject  json.RawMessage
	ResponseObject json.RawMessage
}

// auditLines reads the audit log's events of user name.
func auditLines(t *testing.T, path, name string) ([]auditEvent, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []auditEvent
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit line %q: %v", sc.Text(), err)
		}
		if e.User.Username == name {
			out = append(out, e)
		}
	}
	return out, nil
}

// TestAuditLog: one JSON line per request of a real user with the verb,
// resource, namespace, name and code; at level Request the request
// object, not the response.
func TestAuditLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Audit = audit.Options{Path: path, Level: audit.LevelRequest, OmitVerbs: []string{"watch"}}
	}))
	ctx := testContext(t)
	cms := client.ConfigMaps(s.ConnAs(t, "auditee", "team-a"))

	created, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", GenerateName: "audited-"}, Data: map[string]string{"secret-ish": "v1"}})
	if err != nil {
		t.Fatal(err)
	}
	name := created.GetMetadata().GetName()
	if _, err := cms.Get(ctx, "default", name); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "default", "absent"); !apierrors.IsNotFound(err) {
		t.Fatalf("get absent: %v", err)
	}
	if _, err := cms.List(ctx, &metav1.ListOptions{Namespace: "default"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: name}); err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()

	type want struct {
		verb, name string
		code       int
		status     string
	}
	wants := []want{
		{"create", name, 201, "Success"},
		{"get", name, 200, "Success"},
		{"get", "absent", 404, "Failure"},
		{"list", "", 200, "Success"},
		{"delete", name, 200, "Success"},
	}
	var events []auditEvent
	var sig await.Signal // nobody pokes: Until re-reads the file every await.Recheck
	sig.Until(t, 10*time.Second, "the audit log's lines", ctx.Done(), func() (bool, string) {
		events, err = auditLines(t, path, "auditee")
		if err != nil {
			return false, err.Error()
		}
		return len(events) >= len(wants), fmt.Sprintf("%d of %d lines of user auditee", len(events), len(wants))
	})
	if len(events) != len(wants) {
		t.Fatalf("%d lines of user auditee, want %d (the watch omitted): %+v", len(events), len(wants), events)
	}
	for i, w := range wants {
		e := events[i]
		if e.Verb != w.verb || e.ObjectRef.Resource != "configmaps" || e.ObjectRef.Namespace != "default" || e.ObjectRef.Name != w.name ||
			e.ResponseStatus.Code != w.code || e.ResponseStatus.Status != w.status || e.Level != "Request" || e.AuditID == "" {
			t.Errorf("line %d: %+v\nwant %s configmaps default/%s %d %s", i, e, w.verb, w.name, w.code, w.status)
		}
		if e.User.Username != "auditee" || len(e.User.Groups) == 0 || e.User.Groups[0] != "team-a" {
			t.Errorf("line %d: user %+v", i, e.User)
		}
		if len(e.ResponseObject) != 0 {
			t.Errorf("line %d: a response object at level Request", i)
		}
	}
	if obj := string(events[0].RequestObject); !bytes.Contains(events[0].RequestObject, []byte(`"secret-ish":"v1"`)) {
		t.Errorf("create's requestObject %s lacks the ConfigMap's data", obj)
	}
	// The request as the client sent it, not the object the server
	// completed (uid, creationTimestamp, resourceVersion).
	for _, filled := range []string{`"uid"`, `"creationTimestamp"`, `"resourceVersion"`} {
		if bytes.Contains(events[0].RequestObject, []byte(filled)) {
			t.Errorf("create's requestObject %s has %s, which the server filled in after the request", events[0].RequestObject, filled)
		}
	}
	if e := events[2]; e.ResponseStatus.Reason != "NotFound" {
		t.Errorf("failed get: reason %q", e.ResponseStatus.Reason)
	}
	if n := metricSum(t, s, "apiserver_audit_error_total"); n != 0 {
		t.Errorf("apiserver_audit_error_total = %v", n)
	}
}
