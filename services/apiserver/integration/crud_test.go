// Package integration tests the apiserver end to end: the real server
// in-process on an embedded etcd in a temp dir, reached over gRPC with the
// generic client.
package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/object"
	appsv1 "skiff.dev/proto/apps/v1"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func meta(ns, name string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}}
}

func podSpec() *corev1.PodSpec {
	return &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web", Image: "nginx:1.14.2"}}}
}

func template() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: podSpec()}
}

func selector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
}

// crudCase drives one kind through create, get, list, update, status
// update and delete, checking the generic rules on the way.
type crudCase[T object.Object, L proto.Message] struct {
	res        *client.Resource[T, L]
	namespaced bool
	obj        func(ns, name string) T
	mutate     func(T)      // a spec change: generation must grow
	setStatus  func(T) bool // false when the kind has no status
	items      func(L) []T
	// terminates: Delete only marks the object (a Namespace waits for the
	// namespace controller to empty it and remove its finalizer).
	terminates bool
}

func (c crudCase[T, L]) run(t *testing.T) {
	ctx := testContext(t)
	ns := ""
	if c.namespaced {
		ns = "crud"
	}
	created, err := c.res.Create(ctx, c.obj(ns, "one"))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	m := created.GetMetadata()
	if m.GetUid() == "" || m.GetResourceVersion() == "" || m.GetCreationTimestamp() == nil || m.GetGeneration() != 1 {
		t.Fatalf("create did not set uid/resourceVersion/creationTimestamp/generation=1: %v", m)
	}
	if created.GetApiVersion() == "" || created.GetKind() == "" {
		t.Fatalf("apiVersion/kind not set: %v", created)
	}
	if _, err := c.res.Create(ctx, c.obj(ns, "one")); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: want AlreadyExists, got %v", err)
	}
	got, err := c.res.Get(ctx, ns, "one")
	if err != nil || !proto.Equal(got, created) {
		t.Fatalf("get: %v\n got  %v\n want %v", err, got, created)
	}
	// (the server makes namespaces of its own: select the test's objects)
	list, err := c.res.List(ctx, &metav1.ListOptions{Namespace: ns, LabelSelector: "app=web"})
	if err != nil || len(c.items(list)) != 1 {
		t.Fatalf("list: %v %v", err, list)
	}

	// A spec change bumps generation; a status sent with Update is ignored.
	upd := proto.Clone(got).(T)
	c.mutate(upd)
	hasStatus := c.setStatus(upd)
	updated, err := c.res.Update(ctx, upd)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.GetMetadata().GetGeneration() != 2 {
		t.Fatalf("generation after spec change = %d, want 2", updated.GetMetadata().GetGeneration())
	}
	if hasStatus && !object.StatusEqual(updated, created) {
		t.Fatalf("Update changed the status: %v", updated)
	}
	if updated.GetMetadata().GetUid() != m.GetUid() {
		t.Fatalf("uid changed on update")
	}

	// Update with the now stale resourceVersion: conflict.
	stale := proto.Clone(got).(T)
	c.mutate(stale)
	if _, err := c.res.Update(ctx, stale); !apierrors.IsConflict(err) || status.Code(err) != codes.Aborted {
		t.Fatalf("stale update: want Conflict (ABORTED), got %v", err)
	}

	// Status only through UpdateStatus, and it does not bump generation.
	st := proto.Clone(updated).(T)
	c.setStatus(st)
	st2, err := c.res.UpdateStatus(ctx, st)
	if hasStatus {
		if err != nil {
			t.Fatalf("update status: %v", err)
		}
		if object.StatusEqual(st2, updated) || st2.GetMetadata().GetGeneration() != 2 {
			t.Fatalf("UpdateStatus: status not applied or generation changed: %v", st2)
		}
		// A spec change sent to UpdateStatus is ignored.
		c.mutate(st2)
		st3, err := c.res.UpdateStatus(ctx, st2)
		if err != nil || !object.SpecEqual(st3, updated) {
			t.Fatalf("UpdateStatus changed the spec: %v %v", err, st3)
		}
	} else if !apierrors.IsMethodNotAllowed(err) {
		t.Fatalf("UpdateStatus on a kind without status: want MethodNotAllowed, got %v", err)
	}

	// Delete with a wrong uid precondition fails; then deletes.
	if _, err := c.res.Delete(ctx, &metav1.DeleteRequest{Namespace: ns, Name: "one", Preconditions: &metav1.Preconditions{Uid: "nope"}}); !apierrors.IsConflict(err) {
		t.Fatalf("delete with wrong uid: want Conflict, got %v", err)
	}
	if _, err := c.res.Delete(ctx, &metav1.DeleteRequest{Namespace: ns, Name: "one", Preconditions: &metav1.Preconditions{Uid: m.GetUid()}}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if c.terminates {
		if got, err := c.res.Get(ctx, ns, "one"); err != nil || got.GetMetadata().GetDeletionTimestamp() == nil {
			t.Fatalf("get after delete: want the object marked for deletion, got %v, %v", got, err)
		}
		return
	}
	if _, err := c.res.Get(ctx, ns, "one"); !apierrors.IsNotFound(err) || status.Code(err) != codes.NotFound {
		t.Fatalf("get after delete: want NotFound, got %v", err)
	}
}

func TestCRUDEveryKind(t *testing.T) {
	s := apiservertest.Start(t)
	t.Run("Namespace", crudCase[*corev1.Namespace, *corev1.NamespaceList]{
		res: client.Namespaces(s.Conn),
		obj: func(_, name string) *corev1.Namespace {
			return &corev1.Namespace{Metadata: meta("", name), Spec: &corev1.NamespaceSpec{}}
		},
		mutate:     func(n *corev1.Namespace) { n.Spec = &corev1.NamespaceSpec{Finalizers: []string{"kubernetes"}} },
		setStatus:  func(n *corev1.Namespace) bool { n.Status = &corev1.NamespaceStatus{Phase: "Terminating"}; return true },
		items:      func(l *corev1.NamespaceList) []*corev1.Namespace { return l.Items },
		terminates: true,
	}.run)
	t.Run("Pod", crudCase[*corev1.Pod, *corev1.PodList]{
		res:        client.Pods(s.Conn),
		namespaced: true,
		obj:        func(ns, name string) *corev1.Pod { return &corev1.Pod{Metadata: meta(ns, name), Spec: podSpec()} },
		mutate:     func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.16.1" },
		setStatus: func(p *corev1.Pod) bool {
			p.Status = &corev1.PodStatus{Phase: "Running", PodIp: "10.0.0.7"}
			return true
		},
		items: func(l *corev1.PodList) []*corev1.Pod { return l.Items },
	}.run)
	t.Run("Node", crudCase[*corev1.Node, *corev1.NodeList]{
		res: client.Nodes(s.Conn),
		obj: func(_, name string) *corev1.Node {
			return &corev1.Node{Metadata: meta("", name), Spec: &corev1.NodeSpec{}}
		},
		mutate: func(n *corev1.Node) { n.Spec.Unschedulable = true },
		setStatus: func(n *corev1.Node) bool {
			n.Status = &corev1.NodeStatus{Capacity: map[string]string{"cpu": "4"}}
			return true
		},
		items: func(l *corev1.NodeList) []*corev1.Node { return l.Items },
	}.run)
	t.Run("Event", crudCase[*corev1.Event, *corev1.EventList]{
		res:        client.Events(s.Conn),
		namespaced: true,
		obj: func(ns, name string) *corev1.Event {
			return &corev1.Event{Metadata: meta(ns, name), Reason: "Created", Message: "created",
				InvolvedObject: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web", Uid: "u1", ApiVersion: "v1"}}
		},
		mutate:    func(e *corev1.Event) { e.Count++ },
		setStatus: func(*corev1.Event) bool { return false },
		items:     func(l *corev1.EventList) []*corev1.Event { return l.Items },
	}.run)
	t.Run("ConfigMap", crudCase[*corev1.ConfigMap, *corev1.ConfigMapList]{
		res:        client.ConfigMaps(s.Conn),
		namespaced: true,
		obj: func(ns, name string) *corev1.ConfigMap {
			return &corev1.ConfigMap{Metadata: meta(ns, name), Data: map[string]string{"k": "v"}}
		},
		mutate:    func(c *corev1.ConfigMap) { c.Data = map[string]string{"k": "v2"} },
		setStatus: func(*corev1.ConfigMap) bool { return false },
		items:     func(l *corev1.ConfigMapList) []*corev1.ConfigMap { return l.Items },
	}.run)
	t.Run("Deployment", crudCase[*appsv1.Deployment, *appsv1.DeploymentList]{
		res:        client.Deployments(s.Conn),
		namespaced: true,
		obj: func(ns, name string) *appsv1.Deployment {
			return &appsv1.Deployment{Metadata: meta(ns, name), Spec: &appsv1.DeploymentSpec{Replicas: proto.Int32(2), Selector: selector(), Template: template()}}
		},
		mutate: func(d *appsv1.Deployment) { d.Spec.Replicas = proto.Int32(d.GetSpec().GetReplicas() + 1) },
		setStatus: func(d *appsv1.Deployment) bool {
			d.Status = &appsv1.DeploymentStatus{Replicas: 3, ObservedGeneration: 2}
			return true
		},
		items: func(l *appsv1.DeploymentList) []*appsv1.Deployment { return l.Items },
	}.run)
	t.Run("ReplicaSet", crudCase[*appsv1.ReplicaSet, *appsv1.ReplicaSetList]{
		res:        client.ReplicaSets(s.Conn),
		namespaced: true,
		obj: func(ns, name string) *appsv1.ReplicaSet {
			return &appsv1.ReplicaSet{Metadata: meta(ns, name), Spec: &appsv1.ReplicaSetSpec{Replicas: proto.Int32(1), Selector: selector(), Template: template()}}
		},
		mutate: func(r *appsv1.ReplicaSet) { r.Spec.Replicas = proto.Int32(r.GetSpec().GetReplicas() + 1) },
		setStatus: func(r *appsv1.ReplicaSet) bool {
			r.Status = &appsv1.ReplicaSetStatus{Replicas: 1, ReadyReplicas: 1}
			return true
		},
		items: func(l *appsv1.ReplicaSetList) []*appsv1.ReplicaSet { return l.Items },
	}.run)
	t.Run("Lease", crudCase[*coordinationv1.Lease, *coordinationv1.LeaseList]{
		res:        client.Leases(s.Conn),
		namespaced: true,
		obj: func(ns, name string) *coordinationv1.Lease {
			return &coordinationv1.Lease{Metadata: meta(ns, name), Spec: &coordinationv1.LeaseSpec{HolderIdentity: "a", LeaseDurationSeconds: proto.Int32(15)}}
		},
		mutate:    func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = "b" },
		setStatus: func(*coordinationv1.Lease) bool { return false },
		items:     func(l *coordinationv1.LeaseList) []*coordinationv1.Lease { return l.Items },
	}.run)
}

func TestCreateRules(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)

	t.Run("generateName", func(t *testing.T) {
		a, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", GenerateName: "web-"}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", GenerateName: "web-"}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(a.Metadata.Name, "web-") || len(a.Metadata.Name) != len("web-")+5 || a.Metadata.Name == b.Metadata.Name {
			t.Fatalf("generated names %q %q", a.Metadata.Name, b.Metadata.Name)
		}
	})
	t.Run("server owns uid, resourceVersion, timestamps", func(t *testing.T) {
		m := &metav1.ObjectMeta{Namespace: "default", Name: "owned", Uid: "client-uid", ResourceVersion: "999", Generation: 7}
		c, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: m})
		if err != nil {
			t.Fatal(err)
		}
		if c.Metadata.Uid == "client-uid" || c.Metadata.Generation != 1 || c.Metadata.ResourceVersion == "999" {
			t.Fatalf("client-chosen metadata kept: %v", c.Metadata)
		}
	})
	t.Run("namespace defaults to default", func(t *testing.T) {
		c, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "nsdefault"}})
		if err != nil || c.Metadata.Namespace != "default" {
			t.Fatalf("got %v, %v", c, err)
		}
	})
	t.Run("cluster-scoped kinds refuse a namespace", func(t *testing.T) {
		_, err := client.Nodes(s.Conn).Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n", Namespace: "default"}})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "cluster-scoped") {
			t.Fatalf("want BadRequest naming cluster-scoped, got %v", err)
		}
	})
	t.Run("objects over 1.5 MiB are refused", func(t *testing.T) {
		big := strings.Repeat("x", 3<<19)
		_, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "big"}, Data: map[string]string{"big": big}})
		if !apierrors.IsTooLarge(err) && !apierrors.IsInvalid(err) {
			t.Fatalf("want RequestEntityTooLarge, got %v", err)
		}
		if _, err := cms.Get(ctx, "default", "big"); !apierrors.IsNotFound(err) {
			t.Fatalf("too large object was stored: %v", err)
		}
		// Just under the limit is fine.
		ok := strings.Repeat("x", 1<<20)
		if _, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "onemib"}, Data: map[string]string{"d": ok}}); err != nil {
			t.Fatalf("1 MiB object refused: %v", err)
		}
	})
	t.Run("no-op update keeps the resourceVersion", func(t *testing.T) {
		c, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "noop"}, Data: map[string]string{"a": "b"}})
		if err != nil {
			t.Fatal(err)
		}
		u, err := cms.Update(ctx, c)
		if err != nil || u.Metadata.ResourceVersion != c.Metadata.ResourceVersion {
			t.Fatalf("no-op update wrote: %v %v -> %v", err, c.Metadata.ResourceVersion, u.GetMetadata().GetResourceVersion())
		}
	})
	t.Run("unconditional update without resourceVersion", func(t *testing.T) {
		c, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "uncond"}})
		if err != nil {
			t.Fatal(err)
		}
		c.Metadata.ResourceVersion = ""
		c.Data = map[string]string{"x": "y"}
		if _, err := cms.Update(ctx, c); err != nil {
			t.Fatalf("update without resourceVersion: %v", err)
		}
	})
	t.Run("update of a missing object", func(t *testing.T) {
		_, err := cms.Update(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "ghost"}})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("want NotFound, got %v", err)
		}
	})
}

func TestInvalidObjectsNameFieldPaths(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	cases := []struct {
		name   string
		create func() error
		fields []string
	}{
		{"deployment without selector and with negative replicas", func() error {
			_, err := client.Deployments(s.Conn).Create(ctx, &appsv1.Deployment{Metadata: meta("default", "bad"),
				Spec: &appsv1.DeploymentSpec{Replicas: proto.Int32(-1), Template: template()}})
			return err
		}, []string{"spec.replicas", "spec.selector"}},
		{"pod container without image", func() error {
			_, err := client.Pods(s.Conn).Create(ctx, &corev1.Pod{Metadata: meta("default", "bad"),
				Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web"}}}})
			return err
		}, []string{"spec.containers[0].image"}},
		{"bad name", func() error {
			_, err := client.ConfigMaps(s.Conn).Create(ctx, &corev1.ConfigMap{Metadata: meta("default", "Not_A_Name")})
			return err
		}, []string{"metadata.name"}},
		{"bad label value", func() error {
			_, err := client.ConfigMaps(s.Conn).Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "x", Labels: map[string]string{"app": "has space"}}})
			return err
		}, []string{"metadata.labels"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.create()
			se := apierrors.FromError(err)
			if !apierrors.IsInvalid(err) || status.Code(err) != codes.InvalidArgument {
				t.Fatalf("want Invalid (INVALID_ARGUMENT), got %v", err)
			}
			var got []string
			for _, cause := range se.Status.GetDetails().GetCauses() {
				got = append(got, cause.GetField())
			}
			for _, f := range c.fields {
				found := false
				for _, g := range got {
					if strings.HasPrefix(g, f) {
						found = true
					}
				}
				if !found || !strings.Contains(err.Error(), f) {
					t.Errorf("field %q not named: causes %v, message %q", f, got, err)
				}
			}
		})
	}
}

func TestFinalizersKeepObjectUntilRemoved(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	m := &metav1.ObjectMeta{Namespace: "default", Name: "fin", Finalizers: []string{"example.com/protect"}}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: m}); err != nil {
		t.Fatal(err)
	}
	marked, err := cms.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "fin"})
	if err != nil {
		t.Fatal(err)
	}
	if marked.Metadata.DeletionTimestamp == nil {
		t.Fatalf("delete of an object with finalizers did not set deletionTimestamp: %v", marked.Metadata)
	}
	got, err := cms.Get(ctx, "default", "fin")
	if err != nil || got.Metadata.DeletionTimestamp == nil {
		t.Fatalf("object with finalizers gone or unmarked: %v %v", got, err)
	}
	// A new finalizer cannot be added while deleting.
	got.Metadata.Finalizers = append(got.Metadata.Finalizers, "example.com/late")
	got, err = cms.Update(ctx, got)
	if err != nil || len(got.Metadata.Finalizers) != 1 {
		t.Fatalf("finalizer added during deletion: %v %v", got.GetMetadata().GetFinalizers(), err)
	}
	// Removing the last finalizer deletes the object.
	got.Metadata.Finalizers = nil
	if _, err := cms.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "default", "fin"); !apierrors.IsNotFound(err) {
		t.Fatalf("want NotFound after the last finalizer went, got %v", err)
	}
}

func TestDeletePropagationFinalizers(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	deps := client.Deployments(s.Conn)
	for policy, fin := range map[string]string{"Foreground": "foregroundDeletion", "Orphan": "orphan"} {
		name := strings.ToLower(policy)
		if _, err := deps.Create(ctx, &appsv1.Deployment{Metadata: meta("default", name), Spec: &appsv1.DeploymentSpec{Selector: selector(), Template: template()}}); err != nil {
			t.Fatal(err)
		}
		d, err := deps.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: name, PropagationPolicy: policy})
		if err != nil || d.Metadata.DeletionTimestamp == nil || len(d.Metadata.Finalizers) != 1 || d.Metadata.Finalizers[0] != fin {
			t.Fatalf("%s delete: want deletionTimestamp and finalizer %q, got %v %v", policy, fin, d.GetMetadata(), err)
		}
	}
	_, err := deps.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "x", PropagationPolicy: "Sideways"})
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("unknown propagation policy: want BadRequest, got %v", err)
	}
}

func TestPodGracefulDeleteAndBind(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	pods := client.Pods(s.Conn)
	podsSvc := corev1.NewPodsClient(s.Conn)
	p, err := pods.Create(ctx, &corev1.Pod{Metadata: meta("default", "web"), Spec: podSpec()})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.GetPhase() != "Pending" {
		t.Errorf("phase defaulted to %q, want Pending", p.Status.GetPhase())
	}
	// Bind with a wrong uid is refused; with the right one it binds.
	_, err = podsSvc.Bind(ctx, &corev1.Binding{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web", Uid: "other"}, Target: &corev1.ObjectReference{Kind: "Node", Name: "n1"}})
	if !apierrors.IsConflict(apierrors.FromError(err)) {
		t.Fatalf("bind with wrong uid: want Conflict, got %v", err)
	}
	bound, err := podsSvc.Bind(ctx, &corev1.Binding{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web", Uid: p.Metadata.Uid}, Target: &corev1.ObjectReference{Kind: "Node", Name: "n1"}})
	if err != nil || bound.Spec.NodeName != "n1" {
		t.Fatalf("bind: %v %v", bound, err)
	}
	scheduled := false
	for _, c := range bound.Status.Conditions {
		scheduled = scheduled || (c.Type == "PodScheduled" && c.Status == "True")
	}
	if !scheduled {
		t.Errorf("bound pod has no PodScheduled=True condition: %v", bound.Status.Conditions)
	}
	_, err = podsSvc.Bind(ctx, &corev1.Binding{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"}, Target: &corev1.ObjectReference{Name: "n2"}})
	if e := apierrors.FromError(err); !apierrors.IsConflict(e) || !strings.Contains(e.Error(), "already assigned") {
		t.Fatalf("second bind: want Conflict 'already assigned', got %v", err)
	}
	// A pod with scheduling gates is not bound (its nodeName may not be set
	// until they are cleared).
	gatedSpec := podSpec()
	gatedSpec.SchedulingGates = []*corev1.PodSchedulingGate{{Name: "example.com/wait"}}
	if _, err := pods.Create(ctx, &corev1.Pod{Metadata: meta("default", "gated"), Spec: gatedSpec}); err != nil {
		t.Fatal(err)
	}
	_, err = podsSvc.Bind(ctx, &corev1.Binding{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "gated"}, Target: &corev1.ObjectReference{Name: "n1"}})
	if e := apierrors.FromError(err); !apierrors.IsInvalid(e) || !strings.Contains(e.Error(), "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared") {
		t.Fatalf("bind of a gated pod: want Invalid 'cannot be set until all schedulingGates have been cleared', got %v", err)
	}
	// A bound pod is only marked on delete; the node agent's delete with grace 0 removes it.
	marked, err := pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "web"})
	if err != nil || marked.Metadata.DeletionTimestamp == nil || marked.Metadata.GetDeletionGracePeriodSeconds() != 30 {
		t.Fatalf("graceful delete: want deletionTimestamp and grace 30, got %v %v", marked.GetMetadata(), err)
	}
	if _, err := pods.Get(ctx, "default", "web"); err != nil {
		t.Fatalf("pod gone before its grace period: %v", err)
	}
	if _, err := pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "web", GracePeriodSeconds: proto.Int64(0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "default", "web"); !apierrors.IsNotFound(err) {
		t.Fatalf("want NotFound after delete with grace 0, got %v", err)
	}
	// An unbound pod goes at once.
	if _, err := pods.Create(ctx, &corev1.Pod{Metadata: meta("default", "unbound"), Spec: podSpec()}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "unbound"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "default", "unbound"); !apierrors.IsNotFound(err) {
		t.Fatalf("unbound pod still there: %v", err)
	}
}

func TestScaleSubresource(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	deps := appsv1.NewDeploymentsClient(s.Conn)
	d, err := client.Deployments(s.Conn).Create(ctx, &appsv1.Deployment{Metadata: meta("default", "web"), Spec: &appsv1.DeploymentSpec{Replicas: proto.Int32(3), Selector: selector(), Template: template()}})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := deps.GetScale(ctx, &metav1.GetRequest{Namespace: "default", Name: "web"})
	if err != nil || sc.Spec.Replicas != 3 || sc.Status.Selector != "app=web" {
		t.Fatalf("get scale: %v %v", sc, err)
	}
	sc.Spec.Replicas = 10
	sc2, err := deps.UpdateScale(ctx, sc)
	if err != nil || sc2.Spec.Replicas != 10 {
		t.Fatalf("update scale: %v %v", sc2, err)
	}
	got, _ := client.Deployments(s.Conn).Get(ctx, "default", "web")
	if got.Spec.GetReplicas() != 10 || got.Metadata.Generation != d.Metadata.Generation+1 {
		t.Fatalf("scale did not change spec.replicas/generation: %v", got)
	}
	sc.Spec.Replicas = 1 // sc carries the old resourceVersion
	if _, err := deps.UpdateScale(ctx, sc); !apierrors.IsConflict(apierrors.FromError(err)) {
		t.Fatalf("stale scale: want Conflict, got %v", err)
	}
	rsScale, err := appsv1.NewReplicaSetsClient(s.Conn).GetScale(ctx, &metav1.GetRequest{Namespace: "default", Name: "none"})
	if !apierrors.IsNotFound(apierrors.FromError(err)) {
		t.Fatalf("scale of a missing replicaset: want NotFound, got %v %v", rsScale, err)
	}
}

func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "counter"}, Data: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 10
	errc := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func() {
			for i := 0; i < each; i++ {
				for { // read-modify-write with retry on conflict
					cur, err := cms.Get(ctx, "default", "counter")
					if err != nil {
						errc <- err
						return
					}
					if cur.Data == nil {
						cur.Data = map[string]string{}
					}
					cur.Data[fmt.Sprintf("w%d-%d", w, i)] = "x"
					if _, err = cms.Update(ctx, cur); err == nil {
						break
					} else if !apierrors.IsConflict(err) {
						errc <- err
						return
					}
				}
			}
			errc <- nil
		}()
	}
	for w := 0; w < writers; w++ {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	got, _ := cms.Get(ctx, "default", "counter")
	if len(got.Data) != writers*each {
		t.Fatalf("lost updates: %d keys, want %d", len(got.Data), writers*each)
	}
}
