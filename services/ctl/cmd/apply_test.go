package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
)

// resourceVersions reads the resourceVersion of every object in c's namespace.
func resourceVersions(t *testing.T, c *cli) map[string]string {
	t.Helper()
	return resourceVersionsOn(t, shared.Conn, c.ns)
}

// resourceVersionsOn reads the resourceVersion of every pod, config map
// and deployment in namespace ns of the server at conn.
func resourceVersionsOn(t *testing.T, conn grpc.ClientConnInterface, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	pods, err := client.Pods(conn).List(ctx, listOptions(ns, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.GetItems() {
		out["pod/"+p.GetMetadata().GetName()] = p.GetMetadata().GetResourceVersion()
	}
	cms, err := client.ConfigMaps(conn).List(ctx, listOptions(ns, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.GetItems() {
		out["configmap/"+cm.GetMetadata().GetName()] = cm.GetMetadata().GetResourceVersion()
	}
	ds, err := client.Deployments(conn).List(ctx, listOptions(ns, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.GetItems() {
		out["deployment.apps/"+d.GetMetadata().GetName()] = d.GetMetadata().GetResourceVersion()
	}
	return out
}

func TestApplySeedDeploymentTwiceWritesOnce(t *testing.T) {
	c := newCLI(t)
	if got := c.ok("apply", "-f", manifestPath("nginx-deployment.yaml")); got != "deployment.apps/nginx-deployment created\n" {
		t.Errorf("first apply: %q", got)
	}
	before := resourceVersions(t, c)
	if got := c.ok("apply", "-f", manifestPath("nginx-deployment.yaml")); got != "deployment.apps/nginx-deployment unchanged\n" {
		t.Errorf("second apply: %q", got)
	}
	if after := resourceVersions(t, c); after["deployment.apps/nginx-deployment"] != before["deployment.apps/nginx-deployment"] {
		t.Errorf("the second apply wrote: resourceVersion %s -> %s", before["deployment.apps/nginx-deployment"], after["deployment.apps/nginx-deployment"])
	}
	d, err := client.Deployments(shared.Conn).Get(context.Background(), c.ns, "nginx-deployment")
	if err != nil {
		t.Fatal(err)
	}
	if d.GetSpec().GetReplicas() != 2 || d.GetSpec().GetTemplate().GetSpec().GetContainers()[0].GetImage() != "nginx:1.14.2" {
		t.Errorf("stored spec: %v", d.GetSpec())
	}
}

func TestApplyDocumentationManifestsUnchanged(t *testing.T) {
	c := newCLI(t)
	out := c.ok("apply", "-f", manifestPath("docs"))
	want := []string{
		"configmap/special-config created",
		"pod/frontend created",
		"pod/liveness-exec created",
		"pod/goproxy created",
		"pod/with-node-affinity created",
		"pod/dapi-envars-fieldref created",
		"deployment.apps/web created",
		"configmap/game-config created",
	}
	if got := strings.Split(strings.TrimSpace(out), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("apply:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
	before := resourceVersions(t, c)
	again := c.ok("apply", "-f", manifestPath("docs"))
	if strings.Count(again, " unchanged\n") != len(want) {
		t.Errorf("second apply:\n%s", again)
	}
	if after := resourceVersions(t, c); len(after) != len(want) || !equalMaps(before, after) {
		t.Errorf("the second apply wrote:\nbefore %v\nafter  %v", before, after)
	}
	// What was stored is what the manifests say, quantities and all.
	ctx := context.Background()
	p, err := client.Pods(shared.Conn).Get(ctx, c.ns, "frontend")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.GetSpec().GetContainers()[1].GetResources().GetLimits()["cpu"]; got != "1" {
		t.Errorf("cpu: 1 stored as %q", got)
	}
	if got := p.GetSpec().GetContainers()[1].GetResources().GetRequests()["cpu"]; got != "0.25" {
		t.Errorf("cpu: 0.25 stored as %q", got)
	}
	d, err := client.Deployments(shared.Conn).Get(ctx, c.ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	ru := d.GetSpec().GetStrategy().GetRollingUpdate()
	if ru.GetMaxSurge().GetStrVal() != "25%" || ru.GetMaxUnavailable().GetIntVal() != 1 {
		t.Errorf("rolling update stored as %v", ru)
	}
	// -o yaml prints it in Kubernetes' shape.
	golden(t, "get-deployment-web.yaml", scrub(c, c.ok("get", "deployment", "web", "-o", "yaml")))
	golden(t, "get-pod-goproxy.json", scrub(c, c.ok("get", "pod/goproxy", "-o", "json")))
}

// An apiserver whose clock has sub-second digits stores timestamps as
// Kubernetes does (whole seconds), so the live object read back equals what
// the manifest and its last-applied configuration say: applying the same
// manifests again is "unchanged" and sends no update at all.
func TestApplyUnchangedOnServerWithSubSecondClock(t *testing.T) {
	precise := time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)
	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Now = func() time.Time { return precise }
	}))
	c := newCLIFor(t, s.Addr(), "default", precise.Add(5*time.Minute))
	first := c.ok("apply", "-f", manifestPath("docs"))
	n := strings.Count(first, " created\n")
	if n == 0 {
		t.Fatalf("first apply created nothing:\n%s", first)
	}
	before := resourceVersionsOn(t, s.Conn, "default")
	puts := requestsWithVerb(t, s.Registry, "PUT")
	again := c.ok("apply", "-f", manifestPath("docs"))
	if got := strings.Count(again, " unchanged\n"); got != n {
		t.Errorf("second apply: want %d unchanged, got:\n%s", n, again)
	}
	if after := resourceVersionsOn(t, s.Conn, "default"); !equalMaps(before, after) {
		t.Errorf("the second apply wrote:\nbefore %v\nafter  %v", before, after)
	}
	if got := requestsWithVerb(t, s.Registry, "PUT") - puts; got != 0 {
		t.Errorf("the second apply sent %v updates, want none", got)
	}
}

// requestsWithVerb sums the apiserver's apiserver_request_total of verb.
func requestsWithVerb(t *testing.T, g prometheus.Gatherer, verb string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "apiserver_request_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "verb" && l.GetValue() == verb {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestApplyInvalidDocumentAppliesNothing(t *testing.T) {
	c := newCLI(t)
	r := c.run("apply", "--dry-run=client", "-f", manifestPath("invalid-multi.yaml"))
	if r.code == 0 || r.out != "" {
		t.Fatalf("exit %d, stdout %q; want a failure with nothing applied", r.code, r.out)
	}
	golden(t, "apply-invalid-multi.stderr", r.err)
	if rvs := resourceVersions(t, c); len(rvs) != 0 {
		t.Errorf("objects were created: %v", rvs)
	}
	golden(t, "apply-seed-unrepaired.stderr", c.fails("apply", "-f", manifestPath("seed-unrepaired.yaml")))
	// --validate=false sends unknown fields' documents, and the server's own
	// validation still refuses what is invalid.
	c.stdin = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lenient}\nflavour: vanilla\n"
	if got := c.ok("apply", "--validate=false", "-f", "-"); got != "configmap/lenient created\n" {
		t.Errorf("apply --validate=false: %q", got)
	}
}

func TestApplyThreeWayMerge(t *testing.T) {
	c := newCLI(t)
	v1 := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  labels: {app: app, stage: beta}
spec:
  replicas: 2
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers:
      - name: app
        image: app:1
        env:
        - {name: MODE, value: fast}
        - {name: DEBUG, value: "1"}
`
	c.stdin = v1
	c.ok("apply", "-f", "-")
	// Another writer changes the object meanwhile.
	c.ok("annotate", "deployment", "app", "owner=ops")
	c.ok("scale", "deployment", "app", "--replicas=5")
	v2 := strings.NewReplacer("app:1", "app:2", ", stage: beta", "", `        - {name: DEBUG, value: "1"}`+"\n", "", "  replicas: 2\n", "").Replace(v1)
	c.stdin = v2
	if got := c.ok("apply", "-f", "-"); got != "deployment.apps/app configured\n" {
		t.Errorf("apply v2: %q", got)
	}
	d, err := client.Deployments(shared.Conn).Get(context.Background(), c.ns, "app")
	if err != nil {
		t.Fatal(err)
	}
	ctr := d.GetSpec().GetTemplate().GetSpec().GetContainers()[0]
	checks := []struct {
		what string
		ok   bool
	}{
		{"the image changed", ctr.GetImage() == "app:2"},
		{"the env var removed from the configuration is gone", len(ctr.GetEnv()) == 1 && ctr.GetEnv()[0].GetName() == "MODE"},
		{"the label removed from the configuration is gone", d.GetMetadata().GetLabels()["stage"] == ""},
		{"the other writer's annotation stays", d.GetMetadata().GetAnnotations()["owner"] == "ops"},
		{"replicas, no longer configured, is removed (back to its default)", d.GetSpec().GetReplicas() == 1},
		{"server defaults stay", ctr.GetImagePullPolicy() == "IfNotPresent"},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("%s: %v", ch.what, d)
		}
	}
	// --dry-run=client changes nothing; server dry run is refused plainly.
	c.stdin = v1
	if got := c.ok("apply", "--dry-run=client", "-f", "-"); got != "deployment.apps/app configured (dry run)\n" {
		t.Errorf("dry run: %q", got)
	}
	if d2, _ := client.Deployments(shared.Conn).Get(context.Background(), c.ns, "app"); d2.GetMetadata().GetResourceVersion() != d.GetMetadata().GetResourceVersion() {
		t.Error("--dry-run=client wrote")
	}
	c.stdin = v1
	if got := c.fails("apply", "--dry-run=server", "-f", "-"); got != "error: server-side dry run is not supported by this apiserver yet (use --dry-run=client)\n" {
		t.Errorf("--dry-run=server: %q", got)
	}
}

func TestCreateGetDelete(t *testing.T) {
	c := newCLI(t)
	if got := c.ok("create", "-f", manifestPath("docs/01-configmap.yaml")); got != "configmap/special-config created\n" {
		t.Errorf("create: %q", got)
	}
	golden(t, "create-already-exists.stderr", scrub(c, c.fails("create", "-f", manifestPath("docs/01-configmap.yaml"))))
	c.stdin = "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: gen-}\ndata: {a: b}\n"
	if got := c.ok("create", "-f", "-", "-o", "name"); !strings.HasPrefix(got, "configmap/gen-") {
		t.Errorf("create with generateName: %q", got)
	}
	if got := c.ok("get", "configmaps", "-o", "name"); !strings.Contains(got, "configmap/special-config\n") {
		t.Errorf("get -o name: %q", got)
	}
	if got := c.ok("delete", "-f", manifestPath("docs/01-configmap.yaml")); got != "configmap \"special-config\" deleted\n" {
		t.Errorf("delete: %q", got)
	}
	golden(t, "get-not-found.stderr", scrub(c, c.fails("get", "configmap", "special-config")))
	golden(t, "delete-not-found.stderr", scrub(c, c.fails("delete", "cm", "special-config")))
	c.ok("delete", "configmap", "special-config", "--ignore-not-found")
	c.ok("delete", "configmaps", "--all")
	r := c.run("get", "cm")
	if r.code != 0 || r.out != "" || r.err != "No resources found in "+c.ns+" namespace.\n" {
		t.Errorf("get of nothing: %+v", r)
	}
}

func TestApplyOlderAPIVersion(t *testing.T) {
	c := newCLI(t)
	beta := `apiVersion: apps/v1beta1
kind: Deployment
metadata: {name: legacy}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: legacy}}
    spec: {containers: [{name: web, image: nginx}]}
`
	c.stdin = beta
	if got := c.ok("apply", "-f", "-"); got != "deployment.apps/legacy created\n" {
		t.Errorf("apply apps/v1beta1: %q", got)
	}
	before := resourceVersions(t, c)
	c.stdin = beta
	if got := c.ok("apply", "-f", "-"); got != "deployment.apps/legacy unchanged\n" {
		t.Errorf("apply apps/v1beta1 again: %q", got)
	}
	if after := resourceVersions(t, c); !equalMaps(before, after) {
		t.Errorf("the second apply wrote: %v -> %v", before, after)
	}
	if got := c.ok("get", "deployments.v1beta1.apps", "legacy", "-o", "yaml"); !strings.HasPrefix(got, "apiVersion: apps/v1beta1\n") || !strings.Contains(got, "revisionHistoryLimit: 2") {
		t.Errorf("get at apps/v1beta1:\n%s", got)
	}
	if got := c.ok("get", "deployment", "legacy", "-o", "yaml"); !strings.HasPrefix(got, "apiVersion: apps/v1\n") {
		t.Errorf("get at the preferred version:\n%s", got)
	}
}

func TestApplyOverCreated(t *testing.T) {
	c := newCLI(t)
	c.ok("create", "-f", manifestPath("docs/01-configmap.yaml"))
	r := c.run("apply", "-f", manifestPath("docs/01-configmap.yaml"))
	if r.code != 0 || r.out != "configmap/special-config configured\n" || !strings.HasPrefix(r.err, "Warning: resource configmaps/special-config is missing the kubectl.kubernetes.io/last-applied-configuration annotation") {
		t.Errorf("apply over a created object: %+v", r)
	}
	if r := c.run("apply", "-f", manifestPath("docs/01-configmap.yaml")); r.out != "configmap/special-config unchanged\n" || r.err != "" {
		t.Errorf("apply again: %+v", r)
	}
}

// TestApplyRBACAndPolicy applies Kubernetes' own manifest shapes of the
// security kinds: apiGroups, roleRef, nonResourceURLs, limit ranges'
// defaultRequest and quotas map onto the API.
func TestApplyRBACAndPolicy(t *testing.T) {
	c := newCLI(t)
	c.stdin = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader}
rules:
- apiGroups: [""]
  resources: ["pods", "pods/log"]
  verbs: ["get", "watch", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: read-pods}
subjects:
- kind: User
  name: jane
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: Role
  name: pod-reader
  apiGroup: rbac.authorization.k8s.io
---
apiVersion: v1
kind: LimitRange
metadata: {name: cpu-defaults}
spec:
  limits:
  - type: Container
    default: {cpu: 500m}
    defaultRequest: {cpu: 250m}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: pods-10}
spec:
  hard: {pods: "10"}
`
	want := "role.rbac.authorization.k8s.io/pod-reader created\nrolebinding.rbac.authorization.k8s.io/read-pods created\n" +
		"limitrange/cpu-defaults created\nresourcequota/pods-10 created\n"
	if got := c.ok("apply", "-f", "-"); got != want {
		t.Errorf("apply:\n%s\nwant:\n%s", got, want)
	}
	ctx := context.Background()
	rb, err := client.RoleBindings(shared.Conn).Get(ctx, c.ns, "read-pods")
	if err != nil {
		t.Fatal(err)
	}
	if rb.GetRoleRef().GetName() != "pod-reader" || rb.GetSubjects()[0].GetName() != "jane" {
		t.Errorf("stored binding: %v", rb)
	}
	lr, err := client.LimitRanges(shared.Conn).Get(ctx, c.ns, "cpu-defaults")
	if err != nil {
		t.Fatal(err)
	}
	if got := lr.GetSpec().GetLimits()[0].GetDefaultRequest()["cpu"]; got != "250m" {
		t.Errorf("defaultRequest cpu = %q, want 250m", got)
	}
	if got := c.ok("get", "rolebindings", "-o", "wide"); !strings.Contains(got, "Role/pod-reader") || !strings.Contains(got, "jane") {
		t.Errorf("get rolebindings -o wide:\n%s", got)
	}
	// A binding to a kind that cannot be bound is refused client-side, naming the field.
	c.stdin = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: bad}\nroleRef: {kind: Role, name: x, apiGroup: rbac.authorization.k8s.io}\n"
	if got := c.fails("apply", "-f", "-"); !strings.Contains(got, "roleRef.kind") {
		t.Errorf("bad binding error: %q", got)
	}
}
