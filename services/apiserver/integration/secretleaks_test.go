package integration

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/audit"
)

// lockedBuffer is a log sink the server's goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// TestSecretsNeverLogged: with the audit log at RequestResponse, the
// access log on and the zap log at debug, creating, updating, reading and
// listing a Secret, and failing to (validation, immutability), leaves
// neither its value nor the value's base64 in the audit file or the log.
func TestSecretsNeverLogged(t *testing.T) {
	const mark = "LEAKCHECK-c0ffee-91"
	path := filepath.Join(t.TempDir(), "audit.log")
	var logs lockedBuffer
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&logs), zap.DebugLevel))
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Audit = audit.Options{Path: path, Level: audit.LevelRequestResponse, OmitVerbs: []string{"watch"}}
		c.AccessLog = true
		c.Logger = log
	}))
	ctx := testContext(t)
	sc := client.Secrets(s.ConnAs(t, "leaker", "system:masters"))

	created, err := sc.Create(ctx, &corev1.Secret{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "db"}, StringData: map[string]string{"password": mark + "-1"}, Immutable: new(false)})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Data) != 1 || created.StringData != nil {
		t.Fatalf("created %v: stringData is returned or not merged", created)
	}
	created.Data["password"] = []byte(mark + "-2")
	created.Immutable = new(true)
	updated, err := sc.Update(ctx, created)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Get(ctx, "default", "db"); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.List(ctx, &metav1.ListOptions{Namespace: "default"}); err != nil {
		t.Fatal(err)
	}
	// Failures: immutable data, and a dockerconfigjson that is not JSON.
	updated.Data["password"] = []byte(mark + "-3")
	if _, err := sc.Update(ctx, updated); err == nil || bytes.Contains([]byte(err.Error()), []byte(mark)) {
		t.Fatalf("update of immutable data: %v", err)
	}
	_, err = sc.Create(ctx, &corev1.Secret{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "pull"}, Type: "kubernetes.io/dockerconfigjson", Data: map[string][]byte{".dockerconfigjson": []byte(mark + "-4")}})
	if err == nil || bytes.Contains([]byte(err.Error()), []byte(mark)) {
		t.Fatalf("create of a bad dockerconfigjson: %v", err)
	}

	var events []auditEvent
	var sig await.Signal
	sig.Until(t, 10*time.Second, "the audit log's lines", ctx.Done(), func() (bool, string) {
		events, err = auditLines(t, path, "leaker")
		if err != nil {
			return false, err.Error()
		}
		return len(events) >= 6, fmt.Sprintf("%d of 6 lines of user leaker", len(events))
	})
	for _, e := range events {
		if e.Level != "Metadata" || e.ObjectRef.Resource != "secrets" {
			t.Errorf("event %+v: want level Metadata", e)
		}
	}
	auditRaw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	logRaw := logs.Bytes()
	if !bytes.Contains(logRaw, []byte(`"resource":"secrets"`)) {
		t.Fatalf("the access log has no line about secrets: the check would see nothing:\n%s", logRaw)
	}
	for i := 1; i <= 4; i++ {
		v := fmt.Sprintf("%s-%d", mark, i)
		for _, leak := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), mark} {
			if bytes.Contains(auditRaw, []byte(leak)) {
				t.Errorf("the audit log holds %q", leak)
			}
			if bytes.Contains(logRaw, []byte(leak)) {
				t.Errorf("the apiserver's log holds %q", leak)
			}
		}
	}
}
