package audit

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/server"
)

// TestSecretsAtMetadata: at any level, events about Secrets and about
// service account tokens (serviceaccounts/token) carry no request nor
// response body, and say level Metadata, as Kubernetes' policies log them.
func TestSecretsAtMetadata(t *testing.T) {
	const mark = "audit-LEAK-7731"
	for _, level := range []Level{LevelMetadata, LevelRequest, LevelRequestResponse} {
		t.Run(string(level), func(t *testing.T) {
			l, path, _, stop := runLog(t, Options{Level: level})
			at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
			sec := &corev1.Secret{Metadata: &metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Data: map[string][]byte{"password": []byte(mark)}, StringData: map[string]string{"x": mark}}
			for _, verb := range []string{"create", "update", "get", "delete"} {
				ri := &server.RequestInfo{ID: "s-" + verb, Path: "/skiff.core.v1.Secrets/" + verb, Resource: "secrets", Verb: verb, Namespaced: true, Namespace: "ns", Name: "db", User: alice, Start: at}
				l.Audit(ri, sec, sec, nil)
			}
			list := &corev1.SecretList{Items: []*corev1.Secret{sec}}
			l.Audit(&server.RequestInfo{ID: "s-list", Path: "/skiff.core.v1.Secrets/List", Resource: "secrets", Verb: "list", User: alice, Start: at}, &metav1.ListOptions{}, list, nil)
			tr := &corev1.TokenRequest{Status: &corev1.TokenRequestStatus{Token: mark}}
			l.Audit(&server.RequestInfo{ID: "tok", Path: "/skiff.core.v1.ServiceAccounts/CreateToken", Resource: "serviceaccounts", Subresource: "token", Verb: "create", Namespaced: true, Namespace: "ns", Name: "default", User: alice, Start: at}, tr, tr, nil)
			// Other resources keep the configured level.
			ri, cm := createRequest("c")
			l.Audit(ri, cm, cm, nil)
			stop()
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(raw), mark) || strings.Contains(string(raw), base64.StdEncoding.EncodeToString([]byte(mark))) {
				t.Fatalf("the audit log holds a secret:\n%s", raw)
			}
			events := readEvents(t, path)
			if len(events) != 7 {
				t.Fatalf("%d events, want 7", len(events))
			}
			for _, e := range events[:6] {
				if e.Level != string(LevelMetadata) || len(e.RequestObject) > 0 || len(e.ResponseObject) > 0 {
					t.Errorf("event %s: level %s, request %s, response %s", e.AuditID, e.Level, e.RequestObject, e.ResponseObject)
				}
			}
			if e := events[6]; e.Level != string(level) {
				t.Errorf("configmap event at level %s, want %s", e.Level, level)
			}
		})
	}
}
