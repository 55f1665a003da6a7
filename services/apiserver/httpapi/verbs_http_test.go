package httpapi_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"skiff.dev/internal/await"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/flowcontrol"
	"skiff.dev/services/apiserver/user"
)

// bearer is a request header with a bearer token.
func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// TestBearerTokensOverHTTP: a service-account token in the Authorization
// header authenticates an HTTP request as the service account (who am I,
// and RBAC's refusal naming it); a token that is not one, or expired, is
// 401 Unauthorized as kube-apiserver answers it.
func TestBearerTokensOverHTTP(t *testing.T) {
	s, admin := startRBAC(t)
	a := admin.post("/api/v1/namespaces/default/serviceaccounts", `{"metadata":{"name":"robot"}}`, nil)
	wantCode(t, "create ServiceAccount", a, http.StatusCreated)
	uid := a.json(t)["metadata"].(map[string]any)["uid"].(string)
	anon := newKube(t, s, "", nil, true) // no client certificate
	const sa = "system:serviceaccount:default:robot"

	tok := s.Security.ServiceAccountToken(t, "default", "robot", uid, time.Hour)
	a = anon.send(http.MethodPost, ssr, `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`,
		http.Header{"Authorization": {"Bearer " + tok}, "Content-Type": {"application/json"}})
	wantCode(t, "whoami with the token", a, http.StatusCreated)
	if got := status(t, a)["userInfo"].(map[string]any)["username"]; got != sa {
		t.Errorf("whoami with the token: %v, want %s", got, sa)
	}
	st := wantStatus(t, "list with the token", anon.send(http.MethodGet, "/api/v1/namespaces/default/configmaps", "", bearer(tok)), http.StatusForbidden, "Forbidden")
	if msg := st["message"].(string); !strings.Contains(msg, `User "`+sa+`" cannot list resource "configmaps"`) {
		t.Errorf("refusal with the token: %q", msg)
	}

	for what, token := range map[string]string{
		"not a token":   "not-a-token",
		"expired token": s.Security.ServiceAccountToken(t, "default", "robot", uid, -time.Hour),
	} {
		wantStatus(t, what, anon.send(http.MethodGet, "/api/v1/namespaces/default/configmaps", "", bearer(token)), http.StatusUnauthorized, "Unauthorized")
	}
}

// TestRBACVerbsOverHTTP: each HTTP verb is authorized as the RBAC verb
// Kubernetes maps it to (PATCH patch, PUT update, DELETE on a collection
// deletecollection, GET with watch=1 watch) and a subresource as
// resource/subresource; a user allowed get and list only is refused each
// of them, in Kubernetes' words.
func TestRBACVerbsOverHTTP(t *testing.T) {
	s, admin := startRBAC(t)
	bob := newKube(t, s, "bob", nil, true)
	grantBob(t, admin, bob) // get, list pods in team-a
	const pods = "/api/v1/namespaces/team-a/pods"
	wantCode(t, "create pod", admin.post(pods, `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"demo"}]}}`, nil), http.StatusCreated)
	wantCode(t, "bob gets the pod", bob.get(pods+"/p"), http.StatusOK)

	for _, c := range []struct {
		method, path, contentType, body, verb, resource string
	}{
		{http.MethodPatch, pods + "/p", "application/merge-patch+json", `{"metadata":{"labels":{"a":"b"}}}`, "patch", "pods"},
		{http.MethodPut, pods + "/p", "application/json", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"demo"}]}}`, "update", "pods"},
		{http.MethodDelete, pods, "", "", "deletecollection", "pods"},
		{http.MethodDelete, pods + "/p", "", "", "delete", "pods"},
		{http.MethodGet, pods + "?watch=1", "", "", "watch", "pods"},
		{http.MethodGet, pods + "/p/status", "", "", "get", "pods/status"},
		{http.MethodPost, pods + "/p/eviction", "application/json", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p"}}`, "create", "pods/eviction"},
	} {
		what := c.method + " " + c.path
		st := wantStatus(t, what, bob.do(c.method, c.path, c.contentType, c.body), http.StatusForbidden, "Forbidden")
		want := fmt.Sprintf(`User "bob" cannot %s resource %q in API group "" in the namespace "team-a"`, c.verb, c.resource)
		if msg := st["message"].(string); !strings.Contains(msg, want) {
			t.Errorf("%s: %q, want it to say %s", what, msg, want)
		}
	}

	// And the other way: get on pods/status alone reads the status
	// subresource, not the pod.
	carol := newKube(t, s, "carol", nil, true)
	wantCode(t, "create Role", admin.post("/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/roles",
		`{"metadata":{"name":"status-reader"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods/status"]}]}`, nil), http.StatusCreated)
	wantCode(t, "create RoleBinding", admin.post("/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings",
		`{"metadata":{"name":"carol"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"status-reader"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"carol"}]}`, nil), http.StatusCreated)
	var sig await.Signal
	sig.Until(t, 10*time.Second, "carol may get pods/status", t.Context().Done(), func() (bool, string) {
		a := carol.get(pods + "/p/status")
		return a.code == http.StatusOK, string(a.body)
	})
	wantStatus(t, "carol gets the pod", carol.get(pods+"/p"), http.StatusForbidden, "Forbidden")
}

// TestPodSubresourcesOverHTTP: binding (201, then 409 once bound), status
// (GET and PUT) and eviction (201 with a Success Status, the pod then
// deleted) over HTTP.
func TestPodSubresourcesOverHTTP(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	k := newKube(t, s, apiservertest.AdminUser, []string{user.Masters}, true)
	const pod = "/api/v1/namespaces/default/pods/p"
	wantCode(t, "create pod", k.do(http.MethodPost, "/api/v1/namespaces/default/pods", "application/json",
		`{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"demo"}]}}`), http.StatusCreated)

	binding := `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"},"target":{"apiVersion":"v1","kind":"Node","name":"n1"}}`
	wantCode(t, "bind", k.do(http.MethodPost, pod+"/binding", "application/json", binding), http.StatusCreated)
	if got := k.get(pod).json(t)["spec"].(map[string]any)["nodeName"]; got != "n1" {
		t.Fatalf("after the binding: nodeName %v, want n1", got)
	}
	wantStatus(t, "bind again", k.do(http.MethodPost, pod+"/binding", "application/json", binding), http.StatusConflict, "Conflict")

	a := k.get(pod + "/status")
	wantCode(t, "GET status", a, http.StatusOK)
	obj := a.json(t)
	if obj["kind"] != "Pod" {
		t.Fatalf("GET status: %s", a.body)
	}
	meta := obj["metadata"].(map[string]any)
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default","resourceVersion":%q},"status":{"phase":"Running","podIP":"10.244.0.9"}}`, meta["resourceVersion"])
	a = k.do(http.MethodPut, pod+"/status", "application/json", body)
	wantCode(t, "PUT status", a, http.StatusOK)
	if st := k.get(pod).json(t)["status"].(map[string]any); st["phase"] != "Running" || st["podIP"] != "10.244.0.9" {
		t.Errorf("after PUT status: %v", st)
	}

	a = k.do(http.MethodPost, pod+"/eviction", "application/json", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p","namespace":"default"}}`)
	wantCode(t, "evict", a, http.StatusCreated)
	if st := a.json(t); st["kind"] != "Status" || st["status"] != "Success" {
		t.Errorf("eviction answered %s", a.body)
	}
	if a = k.get(pod); a.code != http.StatusNotFound {
		if a.json(t)["metadata"].(map[string]any)["deletionTimestamp"] == nil {
			t.Errorf("after the eviction the pod is neither gone nor deleted: %s", a.body)
		}
	}
}

// TestListContinueOverHTTP: a List with limit answers a continue token;
// following the tokens lists every object once, in order, and the last
// page has none.
func TestListContinueOverHTTP(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	k := newKube(t, s, apiservertest.AdminUser, []string{user.Masters}, true)
	const cms = "/api/v1/namespaces/default/configmaps"
	var want []string
	for i := range 5 {
		name := fmt.Sprintf("cm-%d", i)
		want = append(want, name)
		wantCode(t, "create "+name, k.do(http.MethodPost, cms, "application/json", `{"metadata":{"name":"`+name+`"}}`), http.StatusCreated)
	}
	var got []string
	next, pages := "", 0
	for {
		path := cms + "?limit=2"
		if next != "" {
			path += "&continue=" + next
		}
		a := k.get(path)
		wantCode(t, "LIST "+path, a, http.StatusOK)
		list := a.json(t)
		for _, it := range list["items"].([]any) {
			got = append(got, it.(map[string]any)["metadata"].(map[string]any)["name"].(string))
		}
		pages++
		meta := list["metadata"].(map[string]any)
		if next, _ = meta["continue"].(string); next == "" {
			break
		}
		if pages > len(want) {
			t.Fatalf("more pages than objects: %v", got)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") || pages != 3 {
		t.Errorf("listed %v in %d pages, want %v in 3", got, pages, want)
	}
}

// TestTooManyRequestsOverHTTP: a request flow control refuses is 429
// TooManyRequests with a Retry-After header in seconds, as kube-apiserver
// answers it (client-go waits that long and retries).
func TestTooManyRequestsOverHTTP(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		// One request, then one per 5 s, which no request waits for.
		c.FlowControl = flowcontrol.Options{UserQPS: 0.2, UserBurst: 1, MaxWait: 100 * time.Millisecond}
	}))
	k := newKube(t, s, "bob", []string{user.Masters}, true)
	const cms = "/api/v1/namespaces/default/configmaps"
	wantCode(t, "the first list", k.get(cms), http.StatusOK)
	a := k.get(cms)
	st := wantStatus(t, "the second list at once", a, http.StatusTooManyRequests, "TooManyRequests")
	after, err := strconv.Atoi(a.header.Get("Retry-After"))
	if err != nil || after < 1 {
		t.Errorf("Retry-After %q, want whole seconds", a.header.Get("Retry-After"))
	}
	if d, _ := st["details"].(map[string]any); d == nil || d["retryAfterSeconds"] != float64(after) {
		t.Errorf("Status details %v, want retryAfterSeconds %d", st["details"], after)
	}
}
