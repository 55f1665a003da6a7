package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authz"
	"skiff.dev/services/apiserver/user"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// etcd's and grpc's background goroutines outlive a test's server briefly.
		goleak.IgnoreTopFunction("go.etcd.io/etcd/pkg/v3/schedule.(*fifo).run"),
		goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
	)
}

// kube is an HTTP client of the server as a Kubernetes client is one:
// TLS with the cluster CA, a client certificate, h2 or http/1.1.
type kube struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newKube(t *testing.T, s *apiservertest.Server, name string, groups []string, h2 bool) *kube {
	t.Helper()
	tc := &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}
	tc.RootCAs.AppendCertsFromPEM(s.Security.CA.CertPEM)
	if name != "" {
		cfg, err := s.Security.Config(name, groups...)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		tc.NextProtos = []string{"http/1.1"}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &kube{t: t, base: "https://" + s.Addr(), c: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

type answer struct {
	code   int
	header http.Header
	body   []byte
	proto  string
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer %d is not JSON: %v\n%s", a.code, err, a.body)
	}
	return m
}

func (k *kube) do(method, path, contentType, body string) answer {
	k.t.Helper()
	var h http.Header
	if contentType != "" {
		h = http.Header{"Content-Type": {contentType}}
	}
	return k.send(method, path, body, h)
}

// send makes a request with the headers given.
func (k *kube) send(method, path, body string, header http.Header) answer {
	k.t.Helper()
	req, err := http.NewRequest(method, k.base+path, strings.NewReader(body))
	if err != nil {
		k.t.Fatal(err)
	}
	for name, vs := range header {
		req.Header[name] = vs
	}
	resp, err := k.c.Do(req)
	if err != nil {
		k.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		k.t.Fatal(err)
	}
	return answer{code: resp.StatusCode, header: resp.Header, body: b, proto: resp.Proto}
}

func (k *kube) get(path string) answer { return k.do(http.MethodGet, path, "", "") }

func wantCode(t *testing.T, what string, a answer, code int) {
	t.Helper()
	if a.code != code {
		t.Fatalf("%s: answered %d, want %d:\n%s", what, a.code, code, a.body)
	}
}

// wantStatus checks a Status answer: its HTTP code, and the Status' code and reason.
func wantStatus(t *testing.T, what string, a answer, code int, reason string) map[string]any {
	t.Helper()
	wantCode(t, what, a, code)
	st := a.json(t)
	if st["kind"] != "Status" || st["apiVersion"] != "v1" || st["reason"] != reason || st["code"] != float64(code) || st["status"] != "Failure" {
		t.Fatalf("%s: Status %s, want kind Status, code %d, reason %s", what, a.body, code, reason)
	}
	return st
}

func TestOnePortServesGRPCAndHTTP(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	ctx := context.Background()
	// Skiff's own client negotiates client.GRPCProtocol: the native server.
	if _, err := client.ConfigMaps(s.Conn).Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "a", Namespace: "default"}}); err != nil {
		t.Fatalf("gRPC create: %v", err)
	}
	// Kubernetes clients, in HTTP/2 and HTTP/1.1.
	for _, h2 := range []bool{true, false} {
		k := newKube(t, s, apiservertest.AdminUser, []string{user.Masters}, h2)
		a := k.get("/version")
		wantCode(t, "GET /version", a, http.StatusOK)
		if v, _ := a.json(t)["gitVersion"].(string); !strings.HasPrefix(v, "v1.36.") {
			t.Errorf("gitVersion %q, want Kubernetes 1.36's", v)
		}
		if want := map[bool]string{true: "HTTP/2.0", false: "HTTP/1.1"}[h2]; a.proto != want {
			t.Errorf("answered in %s, want %s", a.proto, want)
		}
		a = k.get("/api/v1/namespaces/default/configmaps/a")
		wantCode(t, "GET configmap a", a, http.StatusOK)
	}
	// A gRPC client that offers only h2 (any other gRPC client) is served
	// through the HTTP server.
	cfg, err := s.Security.Config(apiservertest.AdminUser, user.Masters)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := cfg.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	tc.NextProtos = nil
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cm, err := client.ConfigMaps(conn).Get(ctx, "default", "a")
	if err != nil || cm.GetMetadata().GetName() != "a" {
		t.Fatalf("gRPC through the HTTP server: %v, %v", cm, err)
	}
}

func TestPlainTextPortServesGRPCAndHTTP(t *testing.T) {
	s := apiservertest.Start(t)
	if _, err := client.ConfigMaps(s.Conn).Create(context.Background(), &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "a", Namespace: "default"}}); err != nil {
		t.Fatalf("gRPC create: %v", err)
	}
	resp, err := http.Get("http://" + s.Addr() + "/api/v1/namespaces/default/configmaps/a")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("HTTP/1.1 GET in plain text: %d %s", resp.StatusCode, b)
	}
}

func TestHealthNeedsNoCredentials(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	k := newKube(t, s, "", nil, true)
	for _, p := range []string{"/healthz", "/livez", "/readyz", "/readyz/ping"} {
		a := k.get(p)
		if a.code != http.StatusOK || string(a.body) != "ok" {
			t.Errorf("GET %s: %d %q, want 200 ok", p, a.code, a.body)
		}
	}
	a := k.get("/readyz?verbose")
	if a.code != http.StatusOK || !strings.Contains(string(a.body), "[+]ready ok") || !strings.HasSuffix(string(a.body), "readyz check passed\n") {
		t.Errorf("GET /readyz?verbose: %d %q", a.code, a.body)
	}
	// Discovery needs an authenticated user.
	wantStatus(t, "GET /api anonymously", k.get("/api"), http.StatusUnauthorized, "Unauthorized")
}

func TestDiscoveryAndOpenAPI(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	k := newKube(t, s, "alice", nil, true) // any authenticated user
	for _, p := range []string{"/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1", "/openapi/v2", "/openapi/v3", "/openapi/v3/apis/apps/v1"} {
		a := k.get(p)
		wantCode(t, "GET "+p, a, http.StatusOK)
		a.json(t)
	}
	req, _ := http.NewRequest(http.MethodGet, k.base+"/apis", nil)
	req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
	resp, err := k.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "apidiscovery.k8s.io") {
		t.Errorf("aggregated discovery answered as %q", ct)
	}
	wantStatus(t, "GET /apis/nosuch.group", k.get("/apis/nosuch.group"), http.StatusNotFound, "NotFound")
	// A path nothing serves is not found whatever the method, as
	// kube-apiserver answers; one served for reading refuses the others.
	wantStatus(t, "POST /nosuch", k.do(http.MethodPost, "/nosuch", "application/json", "{}"), http.StatusNotFound, "NotFound")
	wantStatus(t, "DELETE /nosuch", k.do(http.MethodDelete, "/nosuch", "", ""), http.StatusNotFound, "NotFound")
	wantStatus(t, "POST /version", k.do(http.MethodPost, "/version", "application/json", "{}"), http.StatusMethodNotAllowed, "MethodNotAllowed")
}

func TestCRUDInKubernetesJSON(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Authz = authz.Options{Modes: []string{authz.ModeRBAC}}
	}))
	k := newKube(t, s, apiservertest.AdminUser, []string{user.Masters}, true)
	const cms = "/api/v1/namespaces/default/configmaps"
	a := k.do(http.MethodPost, cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","creationTimestamp":null,"labels":{"app":"web"}},"data":{"k":"v"}}`)
	wantCode(t, "POST", a, http.StatusCreated)
	created := a.json(t)
	meta := created["metadata"].(map[string]any)
	if created["kind"] != "ConfigMap" || created["apiVersion"] != "v1" || meta["namespace"] != "default" || meta["uid"] == "" || meta["resourceVersion"] == "" {
		t.Fatalf("created: %s", a.body)
	}
	if _, err := time.Parse(time.RFC3339, meta["creationTimestamp"].(string)); err != nil {
		t.Errorf("creationTimestamp: %v", err)
	}
	wantStatus(t, "POST again", k.do(http.MethodPost, cms, "application/json", `{"metadata":{"name":"web"}}`), http.StatusConflict, "AlreadyExists")

	a = k.get(cms + "?labelSelector=app%3Dweb")
	wantCode(t, "LIST", a, http.StatusOK)
	list := a.json(t)
	if list["kind"] != "ConfigMapList" || len(list["items"].([]any)) != 1 {
		t.Fatalf("list: %s", a.body)
	}
	rv := meta["resourceVersion"].(string)

	// PUT with the resourceVersion read; then with the stale one.
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","resourceVersion":"` + rv + `"},"data":{"k":"v2"}}`
	a = k.do(http.MethodPut, cms+"/web", "application/json", body)
	wantCode(t, "PUT", a, http.StatusOK)
	if a.json(t)["data"].(map[string]any)["k"] != "v2" {
		t.Errorf("PUT answered %s", a.body)
	}
	wantStatus(t, "PUT stale", k.do(http.MethodPut, cms+"/web", "application/json", body), http.StatusConflict, "Conflict")
	wantStatus(t, "PUT other name", k.do(http.MethodPut, cms+"/other", "application/json", body), http.StatusBadRequest, "BadRequest")

	// Invalid objects: 422 with causes naming the field.
	st := wantStatus(t, "POST invalid", k.do(http.MethodPost, cms, "application/json", `{"metadata":{"name":"Not_A_Name"}}`), http.StatusUnprocessableEntity, "Invalid")
	causes, _ := st["details"].(map[string]any)["causes"].([]any)
	if len(causes) == 0 || causes[0].(map[string]any)["field"] != "metadata.name" {
		t.Errorf("invalid: causes %v", causes)
	}
	// Unknown fields: refused with fieldValidation=Strict.
	a = k.do(http.MethodPost, cms+"?fieldValidation=Strict", "application/json", `{"metadata":{"name":"x"},"dta":{}}`)
	wantStatus(t, "POST unknown field, Strict", a, http.StatusBadRequest, "BadRequest")
	if !strings.Contains(string(a.body), "dta") {
		t.Errorf("strict refusal does not name the field: %s", a.body)
	}

	a = k.do(http.MethodDelete, cms+"/web", "application/json", `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}`)
	wantCode(t, "DELETE", a, http.StatusOK)
	if st := a.json(t); st["kind"] != "Status" || st["status"] != "Success" || st["details"].(map[string]any)["name"] != "web" {
		t.Errorf("DELETE answered %s", a.body)
	}
	st = wantStatus(t, "GET deleted", k.get(cms+"/web"), http.StatusNotFound, "NotFound")
	if st["message"] != `configmaps "web" not found` {
		t.Errorf("not found message %q", st["message"])
	}
	wantStatus(t, "GET unknown resource", k.get("/api/v1/namespaces/default/nosuch"), http.StatusNotFound, "NotFound")

	// RBAC: a user with no role is refused, in Kubernetes' words.
	bob := newKube(t, s, "bob", nil, true)
	st = wantStatus(t, "bob lists", bob.get(cms), http.StatusForbidden, "Forbidden")
	if msg := st["message"].(string); !strings.Contains(msg, `User "bob" cannot list resource "configmaps"`) {
		t.Errorf("forbidden message %q", msg)
	}
}

func TestWatchStreamsJSONEvents(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	k := newKube(t, s, apiservertest.AdminUser, []string{user.Masters}, true)
	const cms = "/api/v1/namespaces/default/configmaps"
	list := k.get(cms).json(t)
	rv := list["metadata"].(map[string]any)["resourceVersion"].(string)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, k.base+cms+"?watch=1&resourceVersion="+rv, nil)
	resp, err := k.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	wantCode(t, "POST", k.do(http.MethodPost, cms, "application/json", `{"metadata":{"name":"w"}}`), http.StatusCreated)
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() {
		t.Fatalf("watch ended: %v", lines.Err())
	}
	var ev struct {
		Type   string
		Object map[string]any
	}
	if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
		t.Fatalf("event %q: %v", lines.Bytes(), err)
	}
	if ev.Type != "ADDED" || ev.Object["kind"] != "ConfigMap" || ev.Object["metadata"].(map[string]any)["name"] != "w" {
		t.Fatalf("event %s", lines.Bytes())
	}

	// A watch from a revision compacted away is established and gets one
	// ERROR event: a 410 Expired Status.
	var last string
	for _, name := range []string{"n1", "n2"} {
		a := k.do(http.MethodPost, cms, "application/json", `{"metadata":{"name":"`+name+`"}}`)
		wantCode(t, "POST "+name, a, http.StatusCreated)
		last = a.json(t)["metadata"].(map[string]any)["resourceVersion"].(string)
	}
	at, _ := strconv.ParseInt(last, 10, 64)
	if _, err := s.EtcdClient().Compact(ctx, at); err != nil {
		t.Fatal(err)
	}
	a := k.get(cms + "?watch=true&resourceVersion=" + rv)
	wantCode(t, "watch from a compacted revision", a, http.StatusOK)
	if err := json.Unmarshal(bytes.TrimSpace(a.body), &ev); err != nil || ev.Type != "ERROR" || ev.Object["code"] != float64(410) || ev.Object["reason"] != "Expired" {
		t.Fatalf("watch from a compacted revision: %s (%v)", a.body, err)
	}
}

// TestWatchListAndExactLists: sendInitialEvents (client-go's watch-list)
// and resourceVersionMatch, as Kubernetes serves them.
func TestWatchListAndExactLists(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	k := newKube(t, s, apiservertest.AdminUser, []string{user.Masters}, true)
	const cms = "/api/v1/namespaces/default/configmaps"
	a := k.do(http.MethodPost, cms, "application/json", `{"metadata":{"name":"one"},"data":{"v":"1"}}`)
	wantCode(t, "POST", a, http.StatusCreated)
	rv1 := a.json(t)["metadata"].(map[string]any)["resourceVersion"].(string)
	wantCode(t, "PUT", k.do(http.MethodPut, cms+"/one", "application/json", `{"metadata":{"name":"one"},"data":{"v":"2"}}`), http.StatusOK)

	// Exact: the state at rv1; NotOlderThan: at least rv1 (the current one).
	for match, want := range map[string]string{"Exact": "1", "NotOlderThan": "2"} {
		a := k.get(cms + "?resourceVersionMatch=" + match + "&resourceVersion=" + rv1)
		wantCode(t, "LIST "+match, a, http.StatusOK)
		items := a.json(t)["items"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["data"].(map[string]any)["v"] != want {
			t.Errorf("LIST resourceVersionMatch=%s: %s, want v=%s", match, a.body, want)
		}
	}
	for q, msg := range map[string]string{
		"resourceVersionMatch=Exact":                              "resourceVersionMatch is forbidden unless resourceVersion is provided",
		"resourceVersionMatch=Exact&resourceVersion=0":            `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`,
		"sendInitialEvents=true":                                  "sendInitialEvents is forbidden for list",
		"watch=1&resourceVersionMatch=NotOlderThan":               "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
		"watch=1&sendInitialEvents=true&allowWatchBookmarks=true": "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
	} {
		st := wantStatus(t, "LIST "+q, k.get(cms+"?"+q), http.StatusUnprocessableEntity, "Invalid")
		if !strings.Contains(st["message"].(string), msg) {
			t.Errorf("LIST %s: %q, want it to say %q", q, st["message"], msg)
		}
	}

	// The watch-list: the current state as ADDED, then the bookmark that
	// ends it, annotated.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, k.base+cms+"?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan", nil)
	resp, err := k.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	var events []string
	for lines.Scan() {
		var ev struct {
			Type   string
			Object struct {
				Metadata struct {
					Name        string
					Annotations map[string]string
				}
			}
		}
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		events = append(events, ev.Type+" "+ev.Object.Metadata.Name)
		if ev.Type == "BOOKMARK" {
			if ev.Object.Metadata.Annotations["k8s.io/initial-events-end"] != "true" {
				t.Fatalf("bookmark without the initial-events-end annotation: %s", lines.Bytes())
			}
			break
		}
	}
	if strings.Join(events, ",") != "ADDED one,BOOKMARK " {
		t.Fatalf("watch-list events %v, want the object then the end bookmark", events)
	}
}

func TestDeleteCollection(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	k := newKube(t, s, apiservertest.AdminUser, []string{user.Masters}, false)
	const cms = "/api/v1/namespaces/default/configmaps"
	for name, app := range map[string]string{"a": "web", "b": "web", "c": "db"} {
		wantCode(t, "POST "+name, k.do(http.MethodPost, cms, "application/json", `{"metadata":{"name":"`+name+`","labels":{"app":"`+app+`"}}}`), http.StatusCreated)
	}
	a := k.do(http.MethodDelete, cms+"?labelSelector=app%3Dweb", "", "")
	wantCode(t, "DELETE collection", a, http.StatusOK)
	if l := a.json(t); l["kind"] != "ConfigMapList" || len(l["items"].([]any)) != 2 {
		t.Fatalf("DELETE collection answered %s", a.body)
	}
	left := k.get(cms).json(t)["items"].([]any)
	if len(left) != 1 || left[0].(map[string]any)["metadata"].(map[string]any)["name"] != "c" {
		t.Fatalf("left after DELETE collection: %v", left)
	}
}

func (k *kube) patch(path, typ, body string) answer {
	k.t.Helper()
	return k.do(http.MethodPatch, path, typ, body)
}

func TestPatchOfEveryType(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	k := newKube(t, s, apiservertest.AdminUser, []string{user.Masters}, true)
	const deploys = "/apis/apps/v1/namespaces/default/deployments"
	a := k.do(http.MethodPost, deploys, "application/json", `{"metadata":{"name":"web","labels":{"app":"web"}},"spec":{"replicas":1,
		"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
		"spec":{"containers":[{"name":"web","image":"web:1","env":[{"name":"A","value":"1"}]},{"name":"side","image":"side:1"}]}}}}`)
	wantCode(t, "POST", a, http.StatusCreated)
	mf := a.json(t)["metadata"].(map[string]any)["managedFields"].([]any)
	if len(mf) != 1 || mf[0].(map[string]any)["manager"] != "Go-http-client" || mf[0].(map[string]any)["operation"] != "Update" {
		t.Errorf("managedFields after a create: %v", mf)
	}

	spec := func(a answer) map[string]any {
		return a.json(t)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	}
	// Strategic merge: containers merged by name, env by name.
	a = k.patch(deploys+"/web", "application/strategic-merge-patch+json", `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:2","env":[{"name":"B","value":"2"}]}]}}}}`)
	wantCode(t, "strategic merge patch", a, http.StatusOK)
	cs := spec(a)["containers"].([]any)
	if len(cs) != 2 || cs[0].(map[string]any)["image"] != "web:2" || len(cs[0].(map[string]any)["env"].([]any)) != 2 {
		t.Errorf("strategic merge patch: containers %v", cs)
	}
	// Merge patch: lists replaced.
	a = k.patch(deploys+"/web", "application/merge-patch+json", `{"metadata":{"labels":{"tier":"front"}},"spec":{"replicas":3}}`)
	wantCode(t, "merge patch", a, http.StatusOK)
	if d := a.json(t); d["spec"].(map[string]any)["replicas"] != float64(3) || d["metadata"].(map[string]any)["labels"].(map[string]any)["tier"] != "front" {
		t.Errorf("merge patch: %s", a.body)
	}
	// JSON patch, and a test that fails: 422.
	a = k.patch(deploys+"/web", "application/json-patch+json", `[{"op":"replace","path":"/spec/replicas","value":2}]`)
	wantCode(t, "JSON patch", a, http.StatusOK)
	wantStatus(t, "JSON patch test failing", k.patch(deploys+"/web", "application/json-patch+json", `[{"op":"test","path":"/spec/replicas","value":5}]`), http.StatusUnprocessableEntity, "Invalid")
	// A patch that makes the object invalid: 422 from validation.
	wantStatus(t, "patch to an invalid object", k.patch(deploys+"/web", "application/merge-patch+json", `{"spec":{"replicas":-1}}`), http.StatusUnprocessableEntity, "Invalid")
	// Another content type: 415.
	a = k.patch(deploys+"/web", "text/plain", `{}`)
	if a.code != http.StatusUnsupportedMediaType {
		t.Errorf("patch as text/plain: %d %s", a.code, a.body)
	}
	// The scale subresource, as kubectl scale patches it.
	a = k.patch(deploys+"/web/scale", "application/merge-patch+json", `{"spec":{"replicas":4}}`)
	wantCode(t, "scale patch", a, http.StatusOK)
	if got := k.get(deploys + "/web").json(t)["spec"].(map[string]any)["replicas"]; got != float64(4) {
		t.Errorf("replicas after the scale patch: %v", got)
	}
}

func TestServerSideApply(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	k := newKube(t, s, apiservertest.AdminUser, []string{user.Masters}, true)
	const cm = "/api/v1/namespaces/default/configmaps/cfg"
	const apply = "application/apply-patch+yaml"
	wantStatus(t, "apply without fieldManager", k.patch(cm, apply, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n"), http.StatusUnprocessableEntity, "Invalid")

	a := k.patch(cm+"?fieldManager=alice", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: '1', b: '2'}\n")
	wantCode(t, "apply that creates", a, http.StatusCreated)
	// bob changes a field alice owns: a conflict naming it and her.
	a = k.patch(cm+"?fieldManager=bob", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: 'x'}\n")
	st := wantStatus(t, "conflicting apply", a, http.StatusConflict, "Conflict")
	if msg := st["message"].(string); !strings.Contains(msg, `conflict with "alice"`) || !strings.Contains(msg, ".data.a") {
		t.Errorf("conflict message %q", msg)
	}
	// With force bob takes it over.
	a = k.patch(cm+"?fieldManager=bob&force=true", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: 'x'}\n")
	wantCode(t, "forced apply", a, http.StatusOK)
	// alice applies again without a: her b stays, a is bob's.
	a = k.patch(cm+"?fieldManager=alice", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {b: '2'}\n")
	wantCode(t, "alice's second apply", a, http.StatusOK)
	data := a.json(t)["data"].(map[string]any)
	if data["a"] != "x" || data["b"] != "2" {
		t.Errorf("data after the applies: %v", data)
	}
	managers := map[string]bool{}
	for _, e := range a.json(t)["metadata"].(map[string]any)["managedFields"].([]any) {
		managers[e.(map[string]any)["manager"].(string)] = true
	}
	if !managers["alice"] || !managers["bob"] {
		t.Errorf("managers %v", managers)
	}
}

// TestDryRun: dryRun=All writes go through defaults, admission and
// validation and answer what would be stored, and nothing is.
func TestDryRun(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	k := newKube(t, s, apiservertest.AdminUser, []string{user.Masters}, true)
	const cms = "/api/v1/namespaces/default/configmaps"
	a := k.do(http.MethodPost, cms+"?dryRun=All", "application/json", `{"metadata":{"name":"dry"},"data":{"k":"v"}}`)
	wantCode(t, "dry-run POST", a, http.StatusCreated)
	if meta := a.json(t)["metadata"].(map[string]any); meta["uid"] == nil || meta["creationTimestamp"] == nil {
		t.Errorf("dry-run create answered %s", a.body)
	}
	wantStatus(t, "GET after a dry-run create", k.get(cms+"/dry"), http.StatusNotFound, "NotFound")
	wantStatus(t, "dry-run POST of an invalid object", k.do(http.MethodPost, cms+"?dryRun=All", "application/json", `{"metadata":{"name":"Bad_Name"}}`), http.StatusUnprocessableEntity, "Invalid")
	wantStatus(t, "dryRun=Some", k.do(http.MethodPost, cms+"?dryRun=Some", "application/json", `{"metadata":{"name":"x"}}`), http.StatusUnprocessableEntity, "Invalid")

	wantCode(t, "POST", k.do(http.MethodPost, cms, "application/json", `{"metadata":{"name":"real"},"data":{"k":"v"}}`), http.StatusCreated)
	a = k.do(http.MethodPut, cms+"/real?dryRun=All", "application/json", `{"metadata":{"name":"real"},"data":{"k":"changed"}}`)
	wantCode(t, "dry-run PUT", a, http.StatusOK)
	if a.json(t)["data"].(map[string]any)["k"] != "changed" {
		t.Errorf("dry-run update answered %s", a.body)
	}
	a = k.patch(cms+"/real?dryRun=All", "application/merge-patch+json", `{"data":{"k":"patched"}}`)
	wantCode(t, "dry-run PATCH", a, http.StatusOK)
	if a.json(t)["data"].(map[string]any)["k"] != "patched" {
		t.Errorf("dry-run patch answered %s", a.body)
	}
	if got := k.get(cms + "/real").json(t)["data"].(map[string]any)["k"]; got != "v" {
		t.Errorf("after dry-run writes the object holds %v", got)
	}
	wantCode(t, "dry-run DELETE", k.do(http.MethodDelete, cms+"/real?dryRun=All", "", ""), http.StatusOK)
	wantCode(t, "GET after a dry-run delete", k.get(cms+"/real"), http.StatusOK)
}

// TestFieldValidation: Warn (the default) drops an unknown field with a
// Warning header in Kubernetes' words, Ignore silently, Strict refuses.
func TestFieldValidation(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	k := newKube(t, s, apiservertest.AdminUser, []string{user.Masters}, true)
	const cms = "/api/v1/namespaces/default/configmaps"
	a := k.do(http.MethodPost, cms, "application/json", `{"metadata":{"name":"warn"},"dta":{}}`)
	wantCode(t, "POST, Warn", a, http.StatusCreated)
	if got := a.header.Get("Warning"); got != `299 - "unknown field \"dta\""` {
		t.Errorf("Warning %q", got)
	}
	a = k.do(http.MethodPost, cms+"?fieldValidation=Ignore", "application/json", `{"metadata":{"name":"ignore"},"dta":{}}`)
	wantCode(t, "POST, Ignore", a, http.StatusCreated)
	if got := a.header.Get("Warning"); got != "" {
		t.Errorf("Ignore warned %q", got)
	}
	st := wantStatus(t, "POST, Strict", k.do(http.MethodPost, cms+"?fieldValidation=Strict", "application/json", `{"metadata":{"name":"strict","name":"again"}}`), http.StatusBadRequest, "BadRequest")
	if st["message"] != `strict decoding error: duplicate field "metadata.name"` {
		t.Errorf("strict refusal %q", st["message"])
	}
	wantStatus(t, "fieldValidation=Loose", k.do(http.MethodPost, cms+"?fieldValidation=Loose", "application/json", `{}`), http.StatusBadRequest, "BadRequest")
	// A field Kubernetes has and Skiff lacks is refused whatever the validation.
	a = k.do(http.MethodPost, "/api/v1/namespaces/default/pods?fieldValidation=Ignore", "application/json",
		`{"metadata":{"name":"p"},"spec":{"hostUsers":false,"containers":[{"name":"c","image":"i"}]}}`)
	if a.code != http.StatusBadRequest || !strings.Contains(string(a.body), "spec.hostUsers") {
		t.Errorf("a field Skiff lacks: %d %s", a.code, a.body)
	}
}
