package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"skiff.dev/internal/await"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authz"
	"skiff.dev/services/apiserver/user"
)

// startRBAC starts a secure server with RBAC on and an admin client.
func startRBAC(t *testing.T) (*apiservertest.Server, *kube) {
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Authz = authz.Options{Modes: []string{authz.ModeRBAC}}
	}))
	return s, newKube(t, s, apiservertest.AdminUser, []string{user.Masters}, true)
}

// post sends body as JSON with extra headers.
func (k *kube) post(path, body string, header http.Header) answer {
	k.t.Helper()
	h := http.Header{"Content-Type": {"application/json"}}
	for name, vs := range header {
		h[name] = vs
	}
	return k.send(http.MethodPost, path, body, h)
}

// grantBob gives bob a Role in team-a: get and list pods, create configmaps;
// it returns once the authorizer has seen it.
func grantBob(t *testing.T, admin, bob *kube) {
	t.Helper()
	wantCode(t, "create namespace", admin.post("/api/v1/namespaces", `{"metadata":{"name":"team-a"}}`, nil), http.StatusCreated)
	wantCode(t, "create Role", admin.post("/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/roles",
		`{"metadata":{"name":"pods-and-cms"},"rules":[{"verbs":["get","list"],"apiGroups":[""],"resources":["pods"]},{"verbs":["create"],"apiGroups":[""],"resources":["configmaps"]}]}`, nil), http.StatusCreated)
	wantCode(t, "create RoleBinding", admin.post("/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings",
		`{"metadata":{"name":"bob"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"pods-and-cms"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bob"}]}`, nil), http.StatusCreated)
	var s await.Signal
	s.Until(t, 10*time.Second, "bob may list pods in team-a", t.Context().Done(), func() (bool, string) {
		a := bob.get("/api/v1/namespaces/team-a/pods")
		return a.code == http.StatusOK, string(a.body)
	})
}

const (
	ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
	sar  = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
	ssrr = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
	ssr  = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
)

func status(t *testing.T, a answer) map[string]any {
	t.Helper()
	m := a.json(t)
	st, _ := m["status"].(map[string]any)
	if st == nil {
		t.Fatalf("no status in %s", a.body)
	}
	return st
}

func TestSelfSubjectAccessReview(t *testing.T) {
	s, admin := startRBAC(t)
	bob := newKube(t, s, "bob", nil, true)
	grantBob(t, admin, bob)

	a := bob.post(ssar, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"namespace":"team-a","verb":"list","resource":"pods"}}}`, nil)
	wantCode(t, "SSAR list pods", a, http.StatusCreated)
	got := a.json(t)
	spec := got["spec"].(map[string]any)["resourceAttributes"].(map[string]any)
	if got["kind"] != "SelfSubjectAccessReview" || got["apiVersion"] != "authorization.k8s.io/v1" || spec["verb"] != "list" || spec["namespace"] != "team-a" {
		t.Errorf("SSAR answered %s", a.body)
	}
	if st := status(t, a); st["allowed"] != true {
		t.Errorf("bob may list pods in team-a, SSAR says %s", a.body)
	}

	a = bob.post(ssar, `{"spec":{"resourceAttributes":{"namespace":"team-a","verb":"delete","resource":"pods","name":"web"}}}`, nil)
	wantCode(t, "SSAR delete pod", a, http.StatusCreated)
	// RBAC gives no reason, as Kubernetes' (kubectl auth can-i says "no").
	if st := status(t, a); st["allowed"] == true || st["reason"] != nil || st["denied"] != nil {
		t.Errorf("SSAR delete: status %v, want not allowed, no reason", st)
	}
	a = bob.post(ssar, `{"spec":{"resourceAttributes":{"namespace":"team-b","verb":"list","resource":"pods"}}}`, nil)
	if st := status(t, a); st["allowed"] == true {
		t.Errorf("SSAR list pods in team-b: allowed %s", a.body)
	}
	// Non-resource: discovery is every authenticated user's.
	a = bob.post(ssar, `{"spec":{"nonResourceAttributes":{"path":"/apis","verb":"get"}}}`, nil)
	if st := status(t, a); st["allowed"] != true {
		t.Errorf("SSAR get /apis: %s", a.body)
	}
	a = bob.post(ssar, `{"spec":{"nonResourceAttributes":{"path":"/metrics","verb":"get"}}}`, nil)
	if st := status(t, a); st["allowed"] == true {
		t.Errorf("SSAR get /metrics: %s", a.body)
	}
	wantStatus(t, "SSAR GET", bob.get(ssar), http.StatusMethodNotAllowed, "MethodNotAllowed")
	wantStatus(t, "SSAR without attributes", bob.post(ssar, `{"spec":{}}`, nil), http.StatusBadRequest, "BadRequest")
}

func TestSubjectAccessReviewIsForWhoMayCreateOne(t *testing.T) {
	s, admin := startRBAC(t)
	bob := newKube(t, s, "bob", nil, true)
	grantBob(t, admin, bob)

	body := `{"spec":{"user":"bob","resourceAttributes":{"namespace":"team-a","verb":"create","resource":"configmaps"}}}`
	a := admin.post(sar, body, nil)
	wantCode(t, "admin's SAR", a, http.StatusCreated)
	if got := a.json(t); got["kind"] != "SubjectAccessReview" || got["spec"].(map[string]any)["user"] != "bob" || status(t, a)["allowed"] != true {
		t.Errorf("SAR bob create configmaps: %s", a.body)
	}
	a = admin.post(sar, `{"spec":{"user":"carol","groups":["devs"],"resourceAttributes":{"namespace":"team-a","verb":"create","resource":"configmaps"}}}`, nil)
	if st := status(t, a); st["allowed"] == true {
		t.Errorf("SAR carol: %s", a.body)
	}
	// Bob may not ask about others.
	st := wantStatus(t, "bob's SAR", bob.post(sar, body, nil), http.StatusForbidden, "Forbidden")
	if msg := st["message"].(string); !strings.Contains(msg, `User "bob" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io"`) {
		t.Errorf("bob's SAR refused with %q", msg)
	}
}

// TestLocalSubjectAccessReview: a namespace's own SubjectAccessReview,
// for who may create one there (as Kubernetes' admin role may); its
// resource namespace is the URL's, and it asks nothing else.
func TestLocalSubjectAccessReview(t *testing.T) {
	s, admin := startRBAC(t)
	bob := newKube(t, s, "bob", nil, true)
	grantBob(t, admin, bob)
	lsar := func(ns string) string {
		return "/apis/authorization.k8s.io/v1/namespaces/" + ns + "/localsubjectaccessreviews"
	}
	body := `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"bob","resourceAttributes":{"namespace":"team-a","verb":"list","resource":"pods"}}}`
	st := wantStatus(t, "bob's LSAR before his grant", bob.post(lsar("team-a"), body, nil), http.StatusForbidden, "Forbidden")
	if msg := st["message"].(string); !strings.Contains(msg, `cannot create resource "localsubjectaccessreviews" in API group "authorization.k8s.io" in the namespace "team-a"`) {
		t.Errorf("bob's LSAR refused with %q", msg)
	}
	wantCode(t, "create Role", admin.post("/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/roles",
		`{"metadata":{"name":"reviews"},"rules":[{"verbs":["create"],"apiGroups":["authorization.k8s.io"],"resources":["localsubjectaccessreviews"]}]}`, nil), http.StatusCreated)
	wantCode(t, "create RoleBinding", admin.post("/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings",
		`{"metadata":{"name":"bob-reviews"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"reviews"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bob"}]}`, nil), http.StatusCreated)
	var a answer
	var sig await.Signal
	sig.Until(t, 10*time.Second, "bob may create LSARs in team-a", t.Context().Done(), func() (bool, string) {
		a = bob.post(lsar("team-a"), body, nil)
		return a.code == http.StatusCreated, string(a.body)
	})
	got := a.json(t)
	if got["kind"] != "LocalSubjectAccessReview" || got["metadata"].(map[string]any)["namespace"] != "team-a" || status(t, a)["allowed"] != true {
		t.Errorf("LSAR bob list pods in team-a: %s", a.body)
	}
	a = bob.post(lsar("team-a"), `{"spec":{"user":"carol","resourceAttributes":{"namespace":"team-a","verb":"list","resource":"pods"}}}`, nil)
	if st := status(t, a); st["allowed"] == true {
		t.Errorf("LSAR carol: %s", a.body)
	}
	// Another namespace's attributes, or none but a path: invalid.
	st = wantStatus(t, "LSAR about team-b", bob.post(lsar("team-a"), `{"spec":{"user":"bob","resourceAttributes":{"namespace":"team-b","verb":"list","resource":"pods"}}}`, nil),
		http.StatusUnprocessableEntity, "Invalid")
	if msg := st["message"].(string); !strings.Contains(msg, `spec.resourceAttributes.namespace: Invalid value: "team-b": must match metadata.namespace`) {
		t.Errorf("LSAR about team-b refused with %q", msg)
	}
	wantStatus(t, "LSAR of a path", bob.post(lsar("team-a"), `{"spec":{"user":"bob","nonResourceAttributes":{"path":"/apis","verb":"get"}}}`, nil),
		http.StatusUnprocessableEntity, "Invalid")
	wantStatus(t, "LSAR whose metadata names another namespace", bob.post(lsar("team-a"), `{"metadata":{"namespace":"team-b"},"spec":{"user":"bob","resourceAttributes":{"namespace":"team-a","verb":"list","resource":"pods"}}}`, nil),
		http.StatusBadRequest, "BadRequest")
	// Not in team-b, where bob holds nothing.
	wantStatus(t, "bob's LSAR in team-b", bob.post(lsar("team-b"), strings.ReplaceAll(body, "team-a", "team-b"), nil), http.StatusForbidden, "Forbidden")
}

func TestSelfSubjectRulesReviewListsRoleRules(t *testing.T) {
	s, admin := startRBAC(t)
	bob := newKube(t, s, "bob", nil, true)
	grantBob(t, admin, bob)

	a := bob.post(ssrr, `{"spec":{"namespace":"team-a"}}`, nil)
	wantCode(t, "SSRR team-a", a, http.StatusCreated)
	st := status(t, a)
	rules := st["resourceRules"].([]any)
	var pods, cms, basic bool
	for _, r := range rules {
		r := r.(map[string]any)
		res := r["resources"].([]any)
		switch {
		case len(res) == 1 && res[0] == "pods" && len(r["verbs"].([]any)) == 2:
			pods = true
		case len(res) == 1 && res[0] == "configmaps" && r["verbs"].([]any)[0] == "create":
			cms = true
		case len(res) > 0 && res[0] == "selfsubjectaccessreviews":
			basic = true
		}
	}
	if !pods || !cms || !basic {
		t.Errorf("team-a rules (pods %v, configmaps %v, system:basic-user %v): %s", pods, cms, basic, a.body)
	}
	if nr := st["nonResourceRules"].([]any); len(nr) == 0 {
		t.Errorf("no non-resource rules (system:discovery): %s", a.body)
	}
	a = bob.post(ssrr, `{"spec":{"namespace":"team-b"}}`, nil)
	for _, r := range status(t, a)["resourceRules"].([]any) {
		if res := r.(map[string]any)["resources"].([]any); res[0] == "pods" {
			t.Errorf("team-b rules hold pods: %s", a.body)
		}
	}
}

func TestSelfSubjectReviewIsWhoAmI(t *testing.T) {
	s, _ := startRBAC(t)
	bob := newKube(t, s, "bob", []string{"devs"}, true)
	a := bob.post(ssr, `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`, nil)
	wantCode(t, "whoami", a, http.StatusCreated)
	got := a.json(t)
	ui := status(t, a)["userInfo"].(map[string]any)
	groups := ui["groups"].([]any)
	if got["kind"] != "SelfSubjectReview" || ui["username"] != "bob" || !containsAny(groups, "devs") || !containsAny(groups, user.AllAuthenticated) {
		t.Errorf("whoami: %s", a.body)
	}
}

func containsAny(l []any, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func TestImpersonation(t *testing.T) {
	s, admin := startRBAC(t)
	bob := newKube(t, s, "bob", nil, true)
	grantBob(t, admin, bob)
	alice := newKube(t, s, "alice", nil, true)

	// The admin acts as bob: bob's rights, bob's name.
	as := func(name string, groups ...string) http.Header {
		h := http.Header{"Impersonate-User": {name}}
		if len(groups) > 0 {
			h["Impersonate-Group"] = groups
		}
		return h
	}
	a := admin.post(ssr, `{}`, as("bob", "devs", "ops"))
	wantCode(t, "whoami as bob", a, http.StatusCreated)
	ui := status(t, a)["userInfo"].(map[string]any)
	groups := ui["groups"].([]any)
	if ui["username"] != "bob" || len(groups) != 3 || !containsAny(groups, "devs") || !containsAny(groups, "ops") || !containsAny(groups, user.AllAuthenticated) {
		t.Errorf("whoami as bob with groups devs, ops: %s", a.body)
	}
	h := as("bob")
	h.Set("Impersonate-Uid", "u-1")
	h.Set("Impersonate-Extra-Scopes", "view")
	h.Add("Impersonate-Extra-Scopes", "edit")
	a = admin.post(ssr, `{}`, h)
	ui = status(t, a)["userInfo"].(map[string]any)
	if scopes, _ := ui["extra"].(map[string]any)["scopes"].([]any); ui["username"] != "bob" || ui["uid"] != "u-1" || len(scopes) != 2 || scopes[0] != "view" || scopes[1] != "edit" {
		t.Errorf("whoami as bob with uid and extra scopes: %s", a.body)
	}
	a = admin.post("/api/v1/namespaces/team-a/configmaps", `{"metadata":{"name":"by-bob"}}`, as("bob"))
	wantCode(t, "create as bob", a, http.StatusCreated)
	st := wantStatus(t, "delete as bob", admin.send(http.MethodDelete, "/api/v1/namespaces/team-a/configmaps/by-bob", "", as("bob")), http.StatusForbidden, "Forbidden")
	if msg := st["message"].(string); !strings.Contains(msg, `User "bob" cannot delete resource "configmaps"`) {
		t.Errorf("delete as bob refused with %q, want bob named", msg)
	}

	// Alice may not impersonate, in Kubernetes' words.
	st = wantStatus(t, "alice as bob", alice.send(http.MethodGet, "/api/v1/namespaces/team-a/pods", "", as("bob")), http.StatusForbidden, "Forbidden")
	want := `users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`
	if st["message"] != want {
		t.Errorf("alice as bob: %q, want %q", st["message"], want)
	}
	// Once allowed to impersonate bob (and no group), she acts as bob.
	wantCode(t, "create ClusterRole", admin.post("/apis/rbac.authorization.k8s.io/v1/clusterroles",
		`{"metadata":{"name":"impersonate-bob"},"rules":[{"verbs":["impersonate"],"apiGroups":[""],"resources":["users"],"resourceNames":["bob"]}]}`, nil), http.StatusCreated)
	wantCode(t, "create ClusterRoleBinding", admin.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
		`{"metadata":{"name":"alice-as-bob"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"impersonate-bob"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"alice"}]}`, nil), http.StatusCreated)
	var sig await.Signal
	sig.Until(t, 10*time.Second, "alice may act as bob", t.Context().Done(), func() (bool, string) {
		a := alice.send(http.MethodGet, "/api/v1/namespaces/team-a/pods", "", as("bob"))
		return a.code == http.StatusOK, string(a.body)
	})
	st = wantStatus(t, "alice as bob in group devs", alice.send(http.MethodGet, "/api/v1/namespaces/team-a/pods", "", as("bob", "devs")), http.StatusForbidden, "Forbidden")
	if want := `groups "devs" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope`; st["message"] != want {
		t.Errorf("alice as bob in devs: %q, want %q", st["message"], want)
	}
	h = as("bob")
	h.Set("Impersonate-Uid", "u-1")
	st = wantStatus(t, "alice as bob with a uid", alice.send(http.MethodGet, "/api/v1/namespaces/team-a/pods", "", h), http.StatusForbidden, "Forbidden")
	if want := `uids.authentication.k8s.io "u-1" is forbidden: User "alice" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope`; st["message"] != want {
		t.Errorf("alice as bob with a uid: %q, want %q", st["message"], want)
	}
	wantStatus(t, "alice as carol", alice.send(http.MethodGet, "/api/v1/namespaces/team-a/pods", "", as("carol")), http.StatusForbidden, "Forbidden")
	wantStatus(t, "group without user", admin.send(http.MethodGet, "/api/v1/namespaces/team-a/pods", "", http.Header{"Impersonate-Group": {"devs"}}), http.StatusBadRequest, "BadRequest")
}

// TestAccessReviewGivesTheModesReason: a refusal's reason is what the
// deciding modes say, as Kubernetes' (here the node authorizer's).
func TestAccessReviewGivesTheModesReason(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Authz = authz.Options{Modes: []string{authz.ModeNode, authz.ModeRBAC}}
	}))
	admin := newKube(t, s, apiservertest.AdminUser, []string{user.Masters}, true)
	a := admin.post(sar, `{"spec":{"user":"system:node:n1","groups":["system:nodes"],"resourceAttributes":{"verb":"update","resource":"nodes","name":"n2"}}}`, nil)
	wantCode(t, "SAR node n1 updates node n2", a, http.StatusCreated)
	want := `node "n1" can only create, change and delete its own Node`
	if st := status(t, a); st["allowed"] == true || st["reason"] != want {
		t.Errorf("SAR node n1 updates n2: %s, want reason %q", a.body, want)
	}
}
