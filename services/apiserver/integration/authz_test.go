package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	appsv1 "skiff.dev/proto/apps/v1"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authz"
	"skiff.dev/services/apiserver/user"
)

// Authorization end to end: a secure apiserver (TLS, client
// certificates) with --authorization-mode=Node,RBAC, clients as the users
// the tests name.

const rbacGroup = "rbac.authorization.k8s.io"

func startAuthorized(t *testing.T) *apiservertest.Server {
	t.Helper()
	return apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Authz = authz.Options{Modes: []string{authz.ModeNode, authz.ModeRBAC}}
	}))
}

// denied checks err is PermissionDenied with a message containing want.
func denied(t *testing.T, what string, err error, want string) {
	t.Helper()
	if status.Code(err) != codes.PermissionDenied && !apierrors.IsForbidden(err) {
		t.Errorf("%s: got %v, want PermissionDenied", what, err)
		return
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("%s: denial %q does not say %q", what, err.Error(), want)
	}
}

// allowed checks err is not a denial (NotFound and the like are fine:
// the request was authorized).
func allowed(t *testing.T, what string, err error) {
	t.Helper()
	if apierrors.IsForbidden(err) || status.Code(err) == codes.PermissionDenied || status.Code(err) == codes.Unauthenticated {
		t.Errorf("%s: %v", what, err)
	}
}

// eventually waits until a request is authorized: RBAC objects reach the
// authorizer through its informers, a moment after they are written.
func eventually(t *testing.T, what string, call func() error) {
	t.Helper()
	var s await.Signal
	s.Until(t, 10*time.Second, what, t.Context().Done(), func() (bool, string) {
		err := call()
		if apierrors.IsForbidden(err) || status.Code(err) == codes.PermissionDenied {
			return false, err.Error()
		}
		return true, ""
	})
}

func mustCreate[T interface{ GetMetadata() *metav1.ObjectMeta }](t *testing.T, create func(context.Context, T, ...grpc.CallOption) (T, error), obj T) T {
	t.Helper()
	got, err := create(testContext(t), obj)
	if err != nil {
		t.Fatalf("creating %s: %v", obj.GetMetadata().GetName(), err)
	}
	return got
}

func objMeta(ns, name string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Namespace: ns, Name: name}
}

func policyRule(verbs, groups, resources string, names ...string) *rbacv1.PolicyRule {
	g := strings.Split(groups, ",")
	return &rbacv1.PolicyRule{Verbs: strings.Fields(verbs), ApiGroups: g, Resources: strings.Fields(resources), ResourceNames: names}
}

func subjectUser(name string) *rbacv1.Subject {
	return &rbacv1.Subject{Kind: "User", ApiGroup: rbacGroup, Name: name}
}

func subjectGroup(name string) *rbacv1.Subject {
	return &rbacv1.Subject{Kind: "Group", ApiGroup: rbacGroup, Name: name}
}

// createNamespaces makes the namespaces a test writes in (the system ones
// may exist already).
func createNamespaces(t *testing.T, s *apiservertest.Server, names ...string) {
	t.Helper()
	for _, n := range names {
		_, err := client.Namespaces(s.Conn).Create(testContext(t), &corev1.Namespace{Metadata: objMeta("", n)})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating namespace %s: %v", n, err)
		}
	}
}

func TestAuthzUserWithoutRole(t *testing.T) {
	s := startAuthorized(t)
	bob := s.ConnAs(t, "bob")
	ctx := testContext(t)

	_, err := client.Pods(bob).List(ctx, &metav1.ListOptions{Namespace: "team-a"})
	denied(t, "list pods", err, `pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "team-a"`)
	_, err = client.Nodes(bob).Get(ctx, "", "node-1")
	denied(t, "get a node", err, `nodes "node-1" is forbidden: User "bob" cannot get resource "nodes" in API group "" at the cluster scope`)
	_, err = client.Deployments(bob).Create(ctx, &appsv1.Deployment{Metadata: objMeta("team-a", "web")})
	denied(t, "create a deployment", err, `deployments.apps "web" is forbidden: User "bob" cannot create resource "deployments" in API group "apps" in the namespace "team-a"`)

	// Every authenticated user may discover the API (system:discovery).
	_, err = discoveryv1.NewDiscoveryClient(bob).Groups(ctx, &discoveryv1.GroupsRequest{})
	allowed(t, "discovery", err)
}

func TestAuthzRoleGrantsExactlyWhatItSays(t *testing.T) {
	s := startAuthorized(t)
	ctx := testContext(t)
	createNamespaces(t, s, "team-a", "team-b")
	for _, ns := range []string{"team-a", "team-b"} {
		mustCreate(t, client.Pods(s.Conn).Create, &corev1.Pod{Metadata: objMeta(ns, "web"), Spec: podSpec()})
	}
	for _, name := range []string{"app-config", "other"} {
		mustCreate(t, client.ConfigMaps(s.Conn).Create, &corev1.ConfigMap{Metadata: objMeta("team-a", name)})
	}
	mustCreate(t, client.Roles(s.Conn).Create, &rbacv1.Role{Metadata: objMeta("team-a", "pod-reader"), Rules: []*rbacv1.PolicyRule{
		policyRule("get list watch", "", "pods"),
		policyRule("get list update", "", "configmaps", "app-config"),
	}})
	mustCreate(t, client.RoleBindings(s.Conn).Create, &rbacv1.RoleBinding{Metadata: objMeta("team-a", "bob-reads"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "Role", Name: "pod-reader"}, Subjects: []*rbacv1.Subject{subjectUser("bob")}})

	bob := client.Pods(s.ConnAs(t, "bob"))
	cms := client.ConfigMaps(s.ConnAs(t, "bob"))
	eventually(t, "bob may list pods in team-a", func() error {
		_, err := bob.List(ctx, &metav1.ListOptions{Namespace: "team-a"})
		return err
	})
	_, err := bob.Get(ctx, "team-a", "web")
	allowed(t, "get a pod in team-a", err)
	_, err = bob.Delete(ctx, &metav1.DeleteRequest{Namespace: "team-a", Name: "web"})
	denied(t, "delete a pod in team-a", err, `pods "web" is forbidden: User "bob" cannot delete resource "pods" in API group "" in the namespace "team-a"`)
	_, err = bob.Get(ctx, "team-b", "web")
	denied(t, "get a pod in team-b", err, `in the namespace "team-b"`)
	_, err = bob.List(ctx, &metav1.ListOptions{})
	denied(t, "list pods in every namespace", err, `cannot list resource "pods" in API group "" at the cluster scope`)
	w, err := bob.Watch(ctx, &metav1.ListOptions{Namespace: "team-a"})
	if err == nil {
		_, err = w.Next() // the first event (ADDED web): the watch was authorized
		w.Stop()
	}
	allowed(t, "watch pods in team-a", err)

	cm, err := cms.Get(ctx, "team-a", "app-config")
	allowed(t, "get the named ConfigMap", err)
	if err == nil {
		_, err = cms.Update(ctx, cm)
		allowed(t, "update the named ConfigMap", err)
	}
	_, err = cms.Get(ctx, "team-a", "other")
	denied(t, "get another ConfigMap", err, `configmaps "other" is forbidden`)
	_, err = cms.List(ctx, &metav1.ListOptions{Namespace: "team-a"})
	denied(t, "list ConfigMaps (resourceNames)", err, `cannot list resource "configmaps"`)
	_, err = cms.List(ctx, &metav1.ListOptions{Namespace: "team-a", FieldSelector: "metadata.name=app-config"})
	allowed(t, "list the named ConfigMap by metadata.name", err)
	_, err = cms.Create(ctx, &corev1.ConfigMap{Metadata: objMeta("team-a", "app-config-2")})
	denied(t, "create a ConfigMap", err, `cannot create resource "configmaps"`)

	// The binding goes: so does the grant.
	if _, err := client.RoleBindings(s.Conn).Delete(ctx, &metav1.DeleteRequest{Namespace: "team-a", Name: "bob-reads"}); err != nil {
		t.Fatal(err)
	}
	var sig await.Signal
	sig.Until(t, 10*time.Second, "bob's grant to go", ctx.Done(), func() (bool, string) {
		_, err := bob.List(ctx, &metav1.ListOptions{Namespace: "team-a"})
		return apierrors.IsForbidden(err), "still allowed"
	})
}

func TestAuthzClusterRoleBindingGrantsEverywhere(t *testing.T) {
	s := startAuthorized(t)
	ctx := testContext(t)
	mustCreate(t, client.ClusterRoles(s.Conn).Create, &rbacv1.ClusterRole{Metadata: objMeta("", "reader"), Rules: []*rbacv1.PolicyRule{
		policyRule("get list watch", "", "pods nodes"),
	}})
	mustCreate(t, client.ClusterRoleBindings(s.Conn).Create, &rbacv1.ClusterRoleBinding{Metadata: objMeta("", "ops-read"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "ClusterRole", Name: "reader"}, Subjects: []*rbacv1.Subject{subjectGroup("ops")}})
	olga := s.ConnAs(t, "olga", "ops")
	eventually(t, "group ops may list pods everywhere", func() error {
		_, err := client.Pods(olga).List(ctx, &metav1.ListOptions{})
		return err
	})
	_, err := client.Pods(olga).List(ctx, &metav1.ListOptions{Namespace: "any"})
	allowed(t, "list pods in a namespace", err)
	_, err = client.Nodes(olga).List(ctx, &metav1.ListOptions{})
	allowed(t, "list nodes", err)
	_, err = client.Nodes(olga).Delete(ctx, &metav1.DeleteRequest{Name: "n1"})
	denied(t, "delete a node", err, `User "olga" cannot delete resource "nodes"`)
	_, err = client.Pods(s.ConnAs(t, "olga")).List(ctx, &metav1.ListOptions{})
	denied(t, "the same user outside the group", err, `User "olga" cannot list resource "pods"`)
}

func TestAuthzAggregation(t *testing.T) {
	s := startAuthorized(t)
	ctx := testContext(t)
	mustCreate(t, client.ClusterRoles(s.Conn).Create, &rbacv1.ClusterRole{Metadata: objMeta("", "monitoring"),
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []*metav1.LabelSelector{{MatchLabels: map[string]string{"example.com/aggregate-to-monitoring": "true"}}}}})
	mustCreate(t, client.ClusterRoleBindings(s.Conn).Create, &rbacv1.ClusterRoleBinding{Metadata: objMeta("", "mon"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "ClusterRole", Name: "monitoring"}, Subjects: []*rbacv1.Subject{subjectUser("prometheus")}})
	// Bound to the bootstrap "view", which aggregates what is labelled for it.
	mustCreate(t, client.ClusterRoleBindings(s.Conn).Create, &rbacv1.ClusterRoleBinding{Metadata: objMeta("", "viewer"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "ClusterRole", Name: "view"}, Subjects: []*rbacv1.Subject{subjectUser("viewer")}})
	prom, viewer := s.ConnAs(t, "prometheus"), s.ConnAs(t, "viewer")
	eventually(t, "view lets viewer list pods", func() error {
		_, err := client.Pods(viewer).List(ctx, &metav1.ListOptions{})
		return err
	})
	_, err := client.Nodes(prom).List(ctx, &metav1.ListOptions{})
	denied(t, "prometheus lists nodes before any role is aggregated", err, `User "prometheus" cannot list resource "nodes"`)
	_, err = client.Leases(viewer).List(ctx, &metav1.ListOptions{})
	denied(t, "viewer lists leases (not in view)", err, `User "viewer" cannot list resource "leases" in API group "coordination.k8s.io"`)

	mustCreate(t, client.ClusterRoles(s.Conn).Create, &rbacv1.ClusterRole{
		Metadata: &metav1.ObjectMeta{Name: "nodes-and-leases", Labels: map[string]string{
			"example.com/aggregate-to-monitoring":         "true",
			"rbac.authorization.k8s.io/aggregate-to-view": "true",
		}},
		Rules: []*rbacv1.PolicyRule{policyRule("list", "", "nodes"), policyRule("list", "coordination.k8s.io", "leases")},
	})
	eventually(t, "prometheus lists nodes through aggregation", func() error {
		_, err := client.Nodes(prom).List(ctx, &metav1.ListOptions{})
		return err
	})
	eventually(t, "viewer lists leases through view's aggregation", func() error {
		_, err := client.Leases(viewer).List(ctx, &metav1.ListOptions{})
		return err
	})
	_, err = client.Nodes(prom).Get(ctx, "", "n1")
	denied(t, "prometheus gets a node (only list aggregated)", err, `cannot get resource "nodes"`)
}

func TestAuthzBootstrapRolesForTheControlPlane(t *testing.T) {
	s := startAuthorized(t)
	ctx := testContext(t)
	createNamespaces(t, s, "kube-system", "team-a")
	node := mustCreate(t, client.Nodes(s.Conn).Create, &corev1.Node{Metadata: objMeta("", "node-1")})
	p := mustCreate(t, client.Pods(s.Conn).Create, &corev1.Pod{Metadata: objMeta("team-a", "web"), Spec: podSpec()})
	mustCreate(t, client.ConfigMaps(s.Conn).Create, &corev1.ConfigMap{Metadata: objMeta("team-a", "cfg")})

	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:discovery", "system:public-info-viewer", "system:kube-scheduler", "system:kube-controller-manager"} {
		cr, err := client.ClusterRoles(s.Conn).Get(ctx, "", name)
		if err != nil {
			t.Errorf("bootstrap ClusterRole %s: %v", name, err)
			continue
		}
		if cr.GetMetadata().GetAnnotations()[authz.AnnotationAutoupdate] != "true" {
			t.Errorf("ClusterRole %s: annotations %v, want autoupdate true", name, cr.GetMetadata().GetAnnotations())
		}
	}

	t.Run("scheduler", func(t *testing.T) {
		sched := s.ConnAs(t, user.Scheduler)
		pods := client.Pods(sched)
		_, err := pods.List(ctx, &metav1.ListOptions{})
		allowed(t, "list pods", err)
		_, err = client.Nodes(sched).List(ctx, &metav1.ListOptions{})
		allowed(t, "list nodes", err)
		_, err = corev1.NewPodsClient(sched).Bind(ctx, &corev1.Binding{Metadata: objMeta("team-a", "web"), Target: &corev1.ObjectReference{Kind: "Node", Name: "node-1"}})
		allowed(t, "bind a pod", err)
		cur, err := pods.Get(ctx, "team-a", "web")
		allowed(t, "get a pod", err)
		if err == nil {
			_, err = pods.UpdateStatus(ctx, cur)
			allowed(t, "update a pod's status", err)
		}
		_, err = client.Events(sched).Create(ctx, &corev1.Event{Metadata: objMeta("team-a", "web.1"), InvolvedObject: &corev1.ObjectReference{Kind: "Pod", Namespace: "team-a", Name: "web"}, Reason: "Scheduled"})
		allowed(t, "create an event", err)
		lease, err := client.Leases(sched).Create(ctx, &coordinationv1.Lease{Metadata: objMeta("kube-system", "skiff-scheduler")})
		allowed(t, "create its leader Lease", err)
		if err == nil {
			_, err = client.Leases(sched).Update(ctx, lease)
			allowed(t, "renew its leader Lease", err)
		}

		_, err = pods.Create(ctx, &corev1.Pod{Metadata: objMeta("team-a", "sneaky"), Spec: podSpec()})
		denied(t, "create a pod", err, `User "system:kube-scheduler" cannot create resource "pods"`)
		if cur != nil {
			// It may delete pods (preemption's victims), not change them.
			_, err = pods.Update(ctx, cur)
			denied(t, "update a pod", err, `cannot update resource "pods"`)
		}
		mustCreate(t, client.Pods(s.Conn).Create, &corev1.Pod{Metadata: objMeta("team-a", "victim"), Spec: podSpec()})
		_, err = pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "team-a", Name: "victim"})
		allowed(t, "delete a pod (a preemption victim)", err)
		_, err = client.Nodes(sched).Delete(ctx, &metav1.DeleteRequest{Name: "node-1"})
		denied(t, "delete a node", err, `cannot delete resource "nodes"`)
		_, err = client.ConfigMaps(sched).Get(ctx, "team-a", "cfg")
		denied(t, "read a ConfigMap", err, `cannot get resource "configmaps"`)
		_, err = client.ClusterRoles(sched).List(ctx, &metav1.ListOptions{})
		denied(t, "list ClusterRoles", err, `cannot list resource "clusterroles"`)
	})

	t.Run("controller-manager", func(t *testing.T) {
		cm := s.ConnAs(t, user.ControllerManager)
		_, err := client.Deployments(cm).List(ctx, &metav1.ListOptions{})
		allowed(t, "list deployments", err)
		_, err = client.ReplicaSets(cm).Create(ctx, &appsv1.ReplicaSet{Metadata: objMeta("team-a", "web-1"), Spec: &appsv1.ReplicaSetSpec{Selector: selector(), Template: template()}})
		allowed(t, "create a ReplicaSet", err)
		_, err = client.Pods(cm).Create(ctx, &corev1.Pod{Metadata: objMeta("team-a", "web-2"), Spec: podSpec()})
		allowed(t, "create a pod", err)
		n, err := client.Nodes(cm).Get(ctx, "", node.GetMetadata().GetName())
		allowed(t, "get a node", err)
		if err == nil {
			n.Spec = &corev1.NodeSpec{PodCidr: "10.244.1.0/24"}
			_, err = client.Nodes(cm).Update(ctx, n)
			allowed(t, "set a node's podCIDR", err)
		}
		_, err = client.Pods(cm).Delete(ctx, &metav1.DeleteRequest{Namespace: "team-a", Name: p.GetMetadata().GetName()})
		allowed(t, "delete a pod", err)
		_, err = client.Leases(cm).Create(ctx, &coordinationv1.Lease{Metadata: objMeta("kube-system", "skiff-controller-manager")})
		allowed(t, "create its leader Lease", err)
		_, err = client.RoleBindings(cm).Delete(ctx, &metav1.DeleteRequest{Namespace: "team-a", Name: "gone-with-the-namespace"})
		allowed(t, "delete a RoleBinding (namespace deletion)", err)

		_, err = client.Nodes(cm).Create(ctx, &corev1.Node{Metadata: objMeta("", "node-2")})
		denied(t, "create a node", err, `User "system:kube-controller-manager" cannot create resource "nodes"`)
		_, err = client.ClusterRoles(cm).Create(ctx, &rbacv1.ClusterRole{Metadata: objMeta("", "mine")})
		denied(t, "create a ClusterRole", err, `cannot create resource "clusterroles"`)
		_, err = client.ClusterRoleBindings(cm).Delete(ctx, &metav1.DeleteRequest{Name: "cluster-admin"})
		denied(t, "delete a ClusterRoleBinding", err, `cannot delete resource "clusterrolebindings"`)
	})
}

func TestAuthzBootstrapReconcile(t *testing.T) {
	s := startAuthorized(t)
	ctx := testContext(t)
	crs, crbs := client.ClusterRoles(s.Conn), client.ClusterRoleBindings(s.Conn)

	// A user trims a bootstrap role and adds a rule of their own; another
	// role is marked not to be updated; a binding points elsewhere.
	sched, err := crs.Get(ctx, "", "system:kube-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	want := len(sched.Rules)
	sched.Rules = append(sched.Rules[1:], policyRule("get", "", "configmaps"))
	if _, err := crs.Update(ctx, sched); err != nil {
		t.Fatal(err)
	}
	view, err := crs.Get(ctx, "", "view")
	if err != nil {
		t.Fatal(err)
	}
	view.Metadata.Annotations[authz.AnnotationAutoupdate] = "false"
	view.Rules = view.Rules[:1]
	if _, err := crs.Update(ctx, view); err != nil {
		t.Fatal(err)
	}
	if _, err := crbs.Delete(ctx, &metav1.DeleteRequest{Name: "system:discovery"}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, crbs.Create, &rbacv1.ClusterRoleBinding{Metadata: objMeta("", "system:discovery"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "ClusterRole", Name: "view"}, Subjects: []*rbacv1.Subject{subjectUser("someone")}})

	if err := authz.Bootstrap(ctx, s.Conn, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	sched, _ = crs.Get(ctx, "", "system:kube-scheduler")
	if len(sched.Rules) != want+1 {
		t.Errorf("scheduler role has %d rules, want the %d bootstrap rules and the user's one: %v", len(sched.Rules), want, sched.Rules)
	}
	if last := sched.Rules[len(sched.Rules)-1]; strings.Join(last.GetResources(), ",") == "configmaps" {
		// The missing rule was appended after the user's.
	} else if !hasRule(sched, "configmaps") {
		t.Errorf("the user's rule is gone: %v", sched.Rules)
	}
	view, _ = crs.Get(ctx, "", "view")
	if len(view.Rules) != 1 {
		t.Errorf("view (autoupdate false) was changed: %v", view.Rules)
	}
	crb, err := crbs.Get(ctx, "", "system:discovery")
	if err != nil || crb.GetRoleRef().GetName() != "system:discovery" || len(crb.GetSubjects()) != 1 || crb.GetSubjects()[0].GetName() != user.AllAuthenticated {
		t.Errorf("system:discovery binding not replaced: %v %v", crb, err)
	}
	// Running it again changes nothing.
	before, _ := crs.Get(ctx, "", "system:kube-scheduler")
	if err := authz.Bootstrap(ctx, s.Conn, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	after, _ := crs.Get(ctx, "", "system:kube-scheduler")
	if before.GetMetadata().GetResourceVersion() != after.GetMetadata().GetResourceVersion() {
		t.Error("a second bootstrap rewrote an up-to-date role")
	}
}

func hasRule(cr *rbacv1.ClusterRole, resource string) bool {
	for _, r := range cr.GetRules() {
		for _, res := range r.GetResources() {
			if res == resource {
				return true
			}
		}
	}
	return false
}

func TestAuthzNodes(t *testing.T) {
	s := startAuthorized(t)
	ctx := testContext(t)
	createNamespaces(t, s, "team-a", authz.NodeLeaseNamespace)
	a := s.ConnAs(t, "system:node:node-a", user.NodesGroup)
	b := s.ConnAs(t, "system:node:node-b", user.NodesGroup)

	// Each agent registers its Node and Lease.
	for conn, name := range map[*grpc.ClientConn]string{a: "node-a", b: "node-b"} {
		_, err := client.Nodes(conn).Create(ctx, &corev1.Node{Metadata: objMeta("", name)})
		allowed(t, name+" registers its Node", err)
		_, err = client.Leases(conn).Create(ctx, &coordinationv1.Lease{Metadata: objMeta(authz.NodeLeaseNamespace, name)})
		allowed(t, name+" creates its Lease", err)
	}
	_, err := client.Nodes(a).Create(ctx, &corev1.Node{Metadata: objMeta("", "node-c")})
	denied(t, "node-a registers another Node", err, `node "node-a" can only create, change and delete its own Node`)

	mustCreate(t, client.ConfigMaps(s.Conn).Create, &corev1.ConfigMap{Metadata: objMeta("team-a", "cfg-a")})
	mustCreate(t, client.ConfigMaps(s.Conn).Create, &corev1.ConfigMap{Metadata: objMeta("team-a", "cfg-b")})
	boundTo := func(name, node, cm string) *corev1.Pod {
		spec := podSpec()
		spec.NodeName = node
		spec.Volumes = []*corev1.Volume{{Name: "cfg", ConfigMap: &corev1.ConfigMapVolumeSource{Name: cm}}}
		spec.Containers[0].VolumeMounts = []*corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}
		return mustCreate(t, client.Pods(s.Conn).Create, &corev1.Pod{Metadata: objMeta("team-a", name), Spec: spec})
	}
	boundTo("pod-a", "node-a", "cfg-a")
	boundTo("pod-b", "node-b", "cfg-b")

	podsA := client.Pods(a)
	t.Run("reads", func(t *testing.T) {
		mine, err := podsA.Get(ctx, "team-a", "pod-a")
		allowed(t, "node-a gets its pod", err)
		_ = mine
		_, err = podsA.Get(ctx, "team-a", "pod-b")
		denied(t, "node-a gets node-b's pod", err, `pods "pod-b" is forbidden: User "system:node:node-a" cannot get resource "pods" in API group "" in the namespace "team-a": node "node-a" can only read pods bound to it`)
		_, err = podsA.List(ctx, &metav1.ListOptions{})
		denied(t, "node-a lists every pod", err, `node "node-a" can only list and watch pods with the field selector spec.nodeName=node-a`)
		_, err = podsA.List(ctx, &metav1.ListOptions{FieldSelector: "spec.nodeName=node-b"})
		denied(t, "node-a lists node-b's pods", err, "spec.nodeName=node-a")
		l, err := podsA.List(ctx, &metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
		allowed(t, "node-a lists its pods", err)
		if err == nil && (len(l.GetItems()) != 1 || l.GetItems()[0].GetMetadata().GetName() != "pod-a") {
			t.Errorf("node-a's pods: %v", l.GetItems())
		}
		w, err := podsA.Watch(ctx, &metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
		if err == nil {
			_, err = w.Next()
			w.Stop()
		}
		allowed(t, "node-a watches its pods", err)
		_, err = client.Nodes(a).List(ctx, &metav1.ListOptions{})
		allowed(t, "node-a lists nodes (routes)", err)
		_, err = client.ConfigMaps(a).Get(ctx, "team-a", "cfg-a")
		allowed(t, "node-a reads its pod's ConfigMap", err)
		_, err = client.ConfigMaps(a).Get(ctx, "team-a", "cfg-b")
		denied(t, "node-a reads node-b's pod's ConfigMap", err, `node 'node-a' cannot get configmap team-a/cfg-b: no relationship found between node 'node-a' and this object`)
	})

	t.Run("writes", func(t *testing.T) {
		mine, err := podsA.Get(ctx, "team-a", "pod-a")
		if err != nil {
			t.Fatal(err)
		}
		mine.Status = &corev1.PodStatus{Phase: "Running"}
		_, err = podsA.UpdateStatus(ctx, mine)
		allowed(t, "node-a updates its pod's status", err)
		theirs, err := client.Pods(s.Conn).Get(ctx, "team-a", "pod-b")
		if err != nil {
			t.Fatal(err)
		}
		theirs.Status = &corev1.PodStatus{Phase: "Failed"}
		_, err = podsA.UpdateStatus(ctx, theirs)
		denied(t, "node-a updates node-b's pod's status", err, `cannot update resource "pods/status" in API group "" in the namespace "team-a": node "node-a" can only change pods bound to it`)
		_, err = podsA.Delete(ctx, &metav1.DeleteRequest{Namespace: "team-a", Name: "pod-b"})
		denied(t, "node-a deletes node-b's pod", err, "can only change pods bound to it")

		nodeB, err := client.Nodes(s.Conn).Get(ctx, "", "node-b")
		if err != nil {
			t.Fatal(err)
		}
		nodeB.Status = &corev1.NodeStatus{Conditions: []*corev1.NodeCondition{{Type: "Ready", Status: "False"}}}
		_, err = client.Nodes(a).UpdateStatus(ctx, nodeB)
		denied(t, "node-a writes node-b's status", err, `nodes "node-b" is forbidden: User "system:node:node-a" cannot update resource "nodes/status"`)
		nodeA, err := client.Nodes(a).Get(ctx, "", "node-a")
		allowed(t, "node-a reads its Node", err)
		if err == nil {
			nodeA.Status = &corev1.NodeStatus{Conditions: []*corev1.NodeCondition{{Type: "Ready", Status: "True"}}}
			_, err = client.Nodes(a).UpdateStatus(ctx, nodeA)
			allowed(t, "node-a writes its status", err)
		}

		leaseB, err := client.Leases(s.Conn).Get(ctx, authz.NodeLeaseNamespace, "node-b")
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.Leases(a).Update(ctx, leaseB)
		denied(t, "node-a renews node-b's Lease", err, `node "node-a" can only use its own Lease kube-node-lease/node-a`)
		_, err = client.Leases(a).Get(ctx, authz.NodeLeaseNamespace, "node-b")
		denied(t, "node-a reads node-b's Lease", err, "its own Lease")

		_, err = client.Events(a).Create(ctx, &corev1.Event{Metadata: objMeta("team-a", "pod-a.1"), InvolvedObject: &corev1.ObjectReference{Kind: "Pod", Namespace: "team-a", Name: "pod-a"}, Reason: "Started"})
		allowed(t, "node-a records an event", err)

		_, err = podsA.Delete(ctx, &metav1.DeleteRequest{Namespace: "team-a", Name: "pod-a"})
		allowed(t, "node-a deletes its pod", err)
	})

	t.Run("a pod bound after its creation", func(t *testing.T) {
		// The node authorizer watches bound pods only: a pod enters its
		// view when the scheduler binds it.
		mustCreate(t, client.ConfigMaps(s.Conn).Create, &corev1.ConfigMap{Metadata: objMeta("team-a", "cfg-late")})
		late := boundTo("pod-late", "", "cfg-late")
		_, err := client.ConfigMaps(a).Get(ctx, "team-a", "cfg-late")
		denied(t, "node-a reads the ConfigMap of a pod not bound yet", err, "no relationship found between node 'node-a' and this object")
		_, err = corev1.NewPodsClient(s.Conn).Bind(ctx, &corev1.Binding{
			Metadata: objMeta("team-a", "pod-late"),
			Target:   &corev1.ObjectReference{Kind: "Node", Name: "node-a"},
		})
		if err != nil {
			t.Fatal(err)
		}
		// Once node-a's own watch shows the pod, the authorizer's (on the
		// same watch cache) has it too, or is about to.
		w, err := podsA.Watch(ctx, &metav1.ListOptions{FieldSelector: "spec.nodeName=node-a", ResourceVersion: late.GetMetadata().GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		for {
			ev, err := w.Next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.Object.GetMetadata().GetName() == "pod-late" {
				break
			}
		}
		w.Stop()
		reads := func() float64 { return metricValue(t, s, "apiserver_authorization_node_reads_total", nil) }
		deadline := time.Now().Add(5 * time.Second)
		for {
			before := reads()
			_, err = client.ConfigMaps(a).Get(ctx, "team-a", "cfg-late")
			allowed(t, "node-a reads the ConfigMap of its pod once bound", err)
			if reads() == before {
				break // decided from the informer, no fallback read
			}
			if time.Now().After(deadline) {
				t.Fatal("the node authorizer's informer never showed pod-late bound to node-a: every read fell back to storage")
			}
		}
	})

	t.Run("nothing else", func(t *testing.T) {
		_, err := client.Deployments(a).List(ctx, &metav1.ListOptions{Namespace: "team-a"})
		denied(t, "node-a lists deployments", err, `User "system:node:node-a" cannot list resource "deployments"`)
		_, err = podsA.Create(ctx, &corev1.Pod{Metadata: objMeta("team-a", "mine"), Spec: podSpec()})
		denied(t, "node-a creates a pod", err, "can only read pods bound to it, write their status and delete them")
		// A user named like a node but outside system:nodes is no node.
		_, err = client.Pods(s.ConnAs(t, "system:node:node-a")).Get(ctx, "team-a", "pod-a")
		denied(t, "a node name outside system:nodes", err, `User "system:node:node-a" cannot get resource "pods"`)
	})
}
