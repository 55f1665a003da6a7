package namespace_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	appsv1 "skiff.dev/proto/apps/v1"
	batchv1 "skiff.dev/proto/batch/v1"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
	policyv1 "skiff.dev/proto/policy/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/controller-manager/dynamic"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/namespace"
)

// patience bounds each wait; every step takes milliseconds.
const patience = 20 * time.Second

func start(t *testing.T) *managertest.Env {
	t.Helper()
	env := managertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) {
		// ServiceAccount off: no serviceaccounts controller runs here;
		// StorageObjectInUseProtection off: no pvc-protection controller
		// would let the claim go.
		c.Admission = admission.Options{EnablePlugins: admission.DefaultPlugins,
			DisablePlugins: []string{admission.ServiceAccountName, admission.StorageObjectInUseProtectionName}}
	}))
	c := namespace.New(env.Manager, namespace.Options{Recheck: 100 * time.Millisecond})
	env.StartInformers()
	env.GoErr(c.Run)
	return env
}

func meta(ns, name string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}}
}

// fill creates one object of every namespaced kind in ns.
func fill(t *testing.T, env *managertest.Env, ns string) {
	t.Helper()
	ctx, conn := env.Ctx, env.Conn
	tmpl := &corev1.PodTemplateSpec{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web", Image: "nginx"}}}}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	zero := int32(0)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("creating %s: %v", what, err)
		}
	}
	_, err := client.Pods(conn).Create(ctx, &corev1.Pod{Metadata: meta(ns, "web"), Spec: tmpl.Spec})
	must("pod", err)
	_, err = client.ConfigMaps(conn).Create(ctx, &corev1.ConfigMap{Metadata: meta(ns, "config"), Data: map[string]string{"k": "v"}})
	must("configmap", err)
	_, err = client.Secrets(conn).Create(ctx, &corev1.Secret{Metadata: meta(ns, "creds"), StringData: map[string]string{"password": "p"}})
	must("secret", err)
	_, err = client.Events(conn).Create(ctx, &corev1.Event{Metadata: meta(ns, "ev"), Reason: "Test", Message: "m", Type: "Normal",
		InvolvedObject: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web"}})
	must("event", err)
	_, err = client.Deployments(conn).Create(ctx, &appsv1.Deployment{Metadata: meta(ns, "deploy"),
		Spec: &appsv1.DeploymentSpec{Replicas: &zero, Selector: sel, Template: tmpl}})
	must("deployment", err)
	_, err = client.ReplicaSets(conn).Create(ctx, &appsv1.ReplicaSet{Metadata: meta(ns, "rs"),
		Spec: &appsv1.ReplicaSetSpec{Replicas: &zero, Selector: sel, Template: tmpl}})
	must("replicaset", err)
	_, err = client.Leases(conn).Create(ctx, &coordinationv1.Lease{Metadata: meta(ns, "lease")})
	must("lease", err)
	_, err = client.ServiceAccounts(conn).Create(ctx, &corev1.ServiceAccount{Metadata: meta(ns, "robot")})
	must("serviceaccount", err)
	_, err = client.LimitRanges(conn).Create(ctx, &corev1.LimitRange{Metadata: meta(ns, "limits"),
		Spec: &corev1.LimitRangeSpec{Limits: []*corev1.LimitRangeItem{{Type: "Container", Max: map[string]string{"cpu": "4"}}}}})
	must("limitrange", err)
	_, err = client.Roles(conn).Create(ctx, &rbacv1.Role{Metadata: meta(ns, "reader"),
		Rules: []*rbacv1.PolicyRule{{Verbs: []string{"get"}, ApiGroups: []string{""}, Resources: []string{"pods"}}}})
	must("role", err)
	_, err = client.RoleBindings(conn).Create(ctx, &rbacv1.RoleBinding{Metadata: meta(ns, "read"),
		Subjects: []*rbacv1.Subject{{Kind: "User", Name: "alice"}},
		RoleRef:  &rbacv1.RoleRef{Kind: "Role", Name: "reader"}})
	must("rolebinding", err)
	_, err = client.Services(conn).Create(ctx, &corev1.Service{Metadata: meta(ns, "web"),
		Spec: &corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []*corev1.ServicePort{{Port: 80}}}})
	must("service", err)
	_, err = client.EndpointSlices(conn).Create(ctx, &discoveryv1.EndpointSlice{Metadata: meta(ns, "web-manual"), AddressType: "IPv4",
		Endpoints: []*discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}}})
	must("endpointslice", err)
	_, err = client.PersistentVolumeClaims(conn).Create(ctx, &corev1.PersistentVolumeClaim{Metadata: meta(ns, "data"),
		Spec: &corev1.PersistentVolumeClaimSpec{AccessModes: []string{"ReadWriteOnce"}, StorageClassName: proto.String("manual"),
			Resources: &corev1.VolumeResourceRequirements{Requests: map[string]string{"storage": "1Gi"}}}})
	must("persistentvolumeclaim", err)
	_, err = client.DaemonSets(conn).Create(ctx, &appsv1.DaemonSet{Metadata: meta(ns, "ds"), Spec: &appsv1.DaemonSetSpec{Selector: sel, Template: tmpl}})
	must("daemonset", err)
	_, err = client.StatefulSets(conn).Create(ctx, &appsv1.StatefulSet{Metadata: meta(ns, "sts"),
		Spec: &appsv1.StatefulSetSpec{Replicas: &zero, ServiceName: "web", Selector: sel, Template: tmpl}})
	must("statefulset", err)
	_, err = client.ControllerRevisions(conn).Create(ctx, &appsv1.ControllerRevision{Metadata: meta(ns, "sts-1"), Revision: 1})
	must("controllerrevision", err)
	batchTmpl := proto.Clone(tmpl).(*corev1.PodTemplateSpec)
	batchTmpl.Metadata = nil
	batchTmpl.Spec.RestartPolicy = "Never"
	_, err = client.Jobs(conn).Create(ctx, &batchv1.Job{Metadata: meta(ns, "job"), Spec: &batchv1.JobSpec{Suspend: proto.Bool(true), Template: batchTmpl}})
	must("job", err)
	_, err = client.CronJobs(conn).Create(ctx, &batchv1.CronJob{Metadata: meta(ns, "cron"), Spec: &batchv1.CronJobSpec{Schedule: "@hourly", Suspend: proto.Bool(true),
		JobTemplate: &batchv1.JobTemplateSpec{Spec: &batchv1.JobSpec{Template: batchTmpl}}}})
	must("cronjob", err)
	_, err = client.PodDisruptionBudgets(conn).Create(ctx, &policyv1.PodDisruptionBudget{Metadata: meta(ns, "pdb"),
		Spec: &policyv1.PodDisruptionBudgetSpec{Selector: sel, MinAvailable: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 1}}}})
	must("poddisruptionbudget", err)
	// Last: a quota of leases, so that it constrains nothing created above.
	_, err = client.ResourceQuotas(conn).Create(ctx, &corev1.ResourceQuota{Metadata: meta(ns, "quota"),
		Spec: &corev1.ResourceQuotaSpec{Hard: map[string]string{"count/leases.coordination.k8s.io": "10"}}})
	must("resourcequota", err)
}

// content names what is in ns, by discovery (every namespaced kind).
func content(t *testing.T, env *managertest.Env, ns string) (kinds []string, left []string) {
	t.Helper()
	dyn := dynamic.New(env.Conn)
	resources, err := dyn.Resources(env.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resources {
		if !r.Namespaced {
			continue
		}
		kinds = append(kinds, r.GroupResource())
		objs, err := dyn.List(env.Ctx, r, ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			left = append(left, r.GroupResource()+"/"+o.GetMetadata().GetName())
		}
	}
	return kinds, left
}

func TestDeletingANamespaceDeletesItsContent(t *testing.T) {
	env := start(t)
	ctx := env.Ctx
	nss := client.Namespaces(env.Conn)
	if _, err := nss.Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: "doomed"}}); err != nil {
		t.Fatal(err)
	}
	fill(t, env, "doomed")
	// One object of every namespaced kind the apiserver serves: a kind
	// added to the apiserver must be added to fill, so that this test
	// shows the controller deletes it too.
	kinds, objs := content(t, env, "doomed")
	t.Logf("namespaced kinds: %v", kinds)
	for _, k := range kinds {
		if !slices.ContainsFunc(objs, func(o string) bool { return strings.HasPrefix(o, k+"/") }) {
			t.Errorf("fill creates no %s: add one", k)
		}
	}
	// A bystander in another namespace.
	if _, err := client.ConfigMaps(env.Conn).Create(ctx, &corev1.ConfigMap{Metadata: meta("default", "bystander")}); err != nil {
		t.Fatal(err)
	}
	// An object with a finalizer holds the namespace until it goes.
	held := &corev1.ConfigMap{Metadata: meta("doomed", "held")}
	held.Metadata.Finalizers = []string{"example.com/hold"}
	if _, err := client.ConfigMaps(env.Conn).Create(ctx, held); err != nil {
		t.Fatal(err)
	}

	if _, err := nss.Delete(ctx, &metav1.DeleteRequest{Name: "doomed"}); err != nil {
		t.Fatal(err)
	}
	env.Await(patience, "everything but the held configmap deleted", func() (bool, string) {
		_, left := content(t, env, "doomed")
		return slices.Equal(left, []string{"configmaps/held"}), managertest.Explain("left: %v", left)
	})
	ns, err := nss.Get(ctx, "", "doomed")
	if err != nil || ns.GetStatus().GetPhase() != "Terminating" || !slices.Contains(ns.GetSpec().GetFinalizers(), namespace.Finalizer) {
		t.Fatalf("while content is left the namespace stays Terminating with its finalizer: %v %v", ns, err)
	}
	// Release the held configmap: then the namespace goes.
	cm, err := client.ConfigMaps(env.Conn).Get(ctx, "doomed", "held")
	if err != nil {
		t.Fatal(err)
	}
	cm.Metadata.Finalizers = nil
	if _, err := client.ConfigMaps(env.Conn).Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	env.Await(patience, "the namespace to be gone", func() (bool, string) {
		_, err := nss.Get(ctx, "", "doomed")
		return apierrors.IsNotFound(err), managertest.Explain("get: %v", err)
	})
	if _, left := content(t, env, "doomed"); len(left) != 0 {
		t.Errorf("left in the deleted namespace: %v", left)
	}
	if _, err := client.ConfigMaps(env.Conn).Get(ctx, "default", "bystander"); err != nil {
		t.Errorf("the bystander in another namespace: %v", err)
	}
	// The name can be used again.
	if _, err := nss.Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: "doomed"}}); err != nil {
		t.Fatalf("recreating the namespace: %v", err)
	}
}
