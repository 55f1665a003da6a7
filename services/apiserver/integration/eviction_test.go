package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	policyv1 "skiff.dev/proto/policy/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/audit"
)

// The pods/eviction subresource (Pods.Evict), as Kubernetes' EvictionREST.

type evictionFixture struct {
	t    *testing.T
	s    *apiservertest.Server
	pods corev1.PodsClient
	pdbs *client.Resource[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList]
}

func newEvictionFixture(t *testing.T, s *apiservertest.Server) *evictionFixture {
	return &evictionFixture{t: t, s: s, pods: corev1.NewPodsClient(s.Conn), pdbs: client.PodDisruptionBudgets(s.Conn)}
}

// pod creates a pod labelled app=web, bound to node-1, in phase (Running
// pods are Ready).
func (f *evictionFixture) pod(name, phase string) *corev1.Pod {
	t, ctx := f.t, testContext(f.t)
	t.Helper()
	_, err := f.pods.Create(ctx, &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": "web"}}, Spec: podSpec()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.pods.Bind(ctx, &corev1.Binding{Metadata: objMeta("default", name), Target: &corev1.ObjectReference{Kind: "Node", Name: "node-1"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = phase
	if phase == "Running" {
		p.Status.Conditions = append(p.Status.Conditions, &corev1.PodCondition{Type: "Ready", Status: "True"})
	}
	if p, err = f.pods.UpdateStatus(ctx, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// pdb creates a budget selecting app=web with the status the disruption
// controller would have written (observed unless stale).
func (f *evictionFixture) pdb(name string, allowed, healthy, desired int32, stale bool) *policyv1.PodDisruptionBudget {
	t, ctx := f.t, testContext(f.t)
	t.Helper()
	b, err := f.pdbs.Create(ctx, &policyv1.PodDisruptionBudget{Metadata: objMeta("default", name), Spec: &policyv1.PodDisruptionBudgetSpec{
		MinAvailable: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: desired}},
		Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	observed := b.GetMetadata().GetGeneration()
	if stale {
		observed--
	}
	b.Status = &policyv1.PodDisruptionBudgetStatus{ObservedGeneration: observed, DisruptionsAllowed: allowed, CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: healthy}
	if b, err = f.pdbs.UpdateStatus(ctx, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func (f *evictionFixture) evict(pods corev1.PodsClient, name string) error {
	st, err := pods.Evict(testContext(f.t), &corev1.Eviction{Metadata: objMeta("default", name)})
	if err == nil && st.GetStatus() != "Success" {
		f.t.Errorf("evict %s: status %v, want Success", name, st)
	}
	return err
}

// evicted checks the pod is being deleted (graceful: it is bound) and
// carries DisruptionTarget.
func (f *evictionFixture) evicted(name string) {
	f.t.Helper()
	p, err := f.pods.Get(testContext(f.t), &metav1.GetRequest{Namespace: "default", Name: name})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		f.t.Fatal(err)
	}
	if p.GetMetadata().GetDeletionTimestamp() == nil {
		f.t.Errorf("pod %s is not being deleted", name)
	}
	found := false
	for _, c := range p.GetStatus().GetConditions() {
		if c.GetType() == "DisruptionTarget" {
			found = c.GetStatus() == "True" && c.GetReason() == "EvictionByEvictionAPI"
		}
	}
	if !found {
		f.t.Errorf("pod %s has no DisruptionTarget condition by EvictionByEvictionAPI: %v", name, p.GetStatus().GetConditions())
	}
}

func (f *evictionFixture) notEvicted(name string) {
	f.t.Helper()
	p, err := f.pods.Get(testContext(f.t), &metav1.GetRequest{Namespace: "default", Name: name})
	if err != nil {
		f.t.Fatal(err)
	}
	if p.GetMetadata().GetDeletionTimestamp() != nil {
		f.t.Errorf("pod %s is being deleted", name)
	}
}

// refused checks err is the budget's 429 with the cause message.
func refused(t *testing.T, err error, retryAfter int32, cause string) {
	t.Helper()
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("got %v, want ResourceExhausted", err)
	}
	se := apierrors.FromError(err)
	if se.Status.GetCode() != 429 || se.Status.GetMessage() != "Cannot evict pod as it would violate the pod's disruption budget." {
		t.Errorf("status %v", se.Status)
	}
	if got := se.Status.GetDetails().GetRetryAfterSeconds(); got != retryAfter {
		t.Errorf("retryAfterSeconds %d, want %d", got, retryAfter)
	}
	causes := se.Status.GetDetails().GetCauses()
	if len(causes) != 1 || causes[0].GetReason() != "DisruptionBudget" || causes[0].GetMessage() != cause {
		t.Errorf("causes %v, want DisruptionBudget %q", causes, cause)
	}
}

func TestEvictionTakesADisruptionFromTheBudget(t *testing.T) {
	f := newEvictionFixture(t, apiservertest.Start(t))
	f.pod("web-1", "Running")
	f.pod("web-2", "Running")
	f.pdb("web", 1, 2, 1, false)

	if err := f.evict(f.pods, "web-1"); err != nil {
		t.Fatal(err)
	}
	f.evicted("web-1")
	b, err := f.pdbs.Get(testContext(t), "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	st := b.GetStatus()
	if st.GetDisruptionsAllowed() != 0 || st.GetDisruptedPods()["web-1"] == nil {
		t.Errorf("budget status %v: want disruptionsAllowed 0 and web-1 disrupted", st)
	}
	if c := st.GetConditions(); len(c) != 1 || c[0].GetType() != "DisruptionAllowed" || c[0].GetStatus() != "False" || c[0].GetReason() != "InsufficientPods" {
		t.Errorf("conditions %v, want DisruptionAllowed False InsufficientPods", c)
	}

	// The budget has no disruption left: the next is refused, 429.
	refused(t, f.evict(f.pods, "web-2"), 0, "The disruption budget web needs 1 healthy pods and has 2 currently")
	f.notEvicted("web-2")
}

func TestEvictionRefusedWhileTheBudgetIsBeingProcessed(t *testing.T) {
	f := newEvictionFixture(t, apiservertest.Start(t))
	f.pod("web-1", "Running")
	f.pdb("web", 1, 2, 1, true)
	refused(t, f.evict(f.pods, "web-1"), 10, "The disruption budget web is still being processed by the server.")
	f.notEvicted("web-1")
}

func TestEvictionWithTwoBudgets(t *testing.T) {
	f := newEvictionFixture(t, apiservertest.Start(t))
	f.pod("web-1", "Running")
	f.pdb("web", 1, 2, 1, false)
	f.pdb("web-too", 1, 2, 1, false)
	err := f.evict(f.pods, "web-1")
	se := apierrors.FromError(err)
	if err == nil || se.Status.GetCode() != 500 || se.Status.GetMessage() != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." {
		t.Fatalf("got %v, want the 500 of two budgets", err)
	}
	f.notEvicted("web-1")
}

// Pods that are terminal or pending have caused their disruption already:
// they go whatever the budget says; so does an unready pod when the
// budget is met, or its policy is AlwaysAllow.
func TestEvictionOfDisruptedPodsIgnoresTheBudget(t *testing.T) {
	f := newEvictionFixture(t, apiservertest.Start(t))
	f.pod("done", "Succeeded")
	f.pod("failed", "Failed")
	f.pod("pending", "Pending")
	f.pod("web-1", "Running")
	f.pdb("web", 0, 1, 1, false)
	for _, name := range []string{"done", "failed", "pending"} {
		if err := f.evict(f.pods, name); err != nil {
			t.Errorf("evict %s: %v", name, err)
		}
		f.evicted(name)
	}
	refused(t, f.evict(f.pods, "web-1"), 0, "The disruption budget web needs 1 healthy pods and has 1 currently")

	// Unready and Running: the budget is met (1 healthy of 1), so it goes.
	unready := f.pod("unready", "Running")
	unready.Status.Conditions = []*corev1.PodCondition{{Type: "Ready", Status: "False"}}
	if _, err := f.pods.UpdateStatus(testContext(t), unready); err != nil {
		t.Fatal(err)
	}
	if err := f.evict(f.pods, "unready"); err != nil {
		t.Fatal(err)
	}
	f.evicted("unready")
	b, _ := f.pdbs.Get(testContext(t), "default", "web")
	if len(b.GetStatus().GetDisruptedPods()) != 0 {
		t.Errorf("an unready pod's eviction took a disruption: %v", b.GetStatus())
	}
}

func TestEvictionDeleteOptions(t *testing.T) {
	f := newEvictionFixture(t, apiservertest.Start(t))
	p := f.pod("web-1", "Running")
	f.pdb("web", 5, 2, 1, false)
	ctx := testContext(t)
	_, err := f.pods.Evict(ctx, &corev1.Eviction{Metadata: objMeta("default", "web-1"), DeleteOptions: &corev1.DeleteOptions{
		Preconditions: &metav1.Preconditions{Uid: "not-the-uid"},
	}})
	if !apierrors.IsConflict(err) {
		t.Fatalf("eviction with a wrong uid precondition: %v, want Conflict", err)
	}
	// A dry run changes nothing.
	if _, err := f.pods.Evict(ctx, &corev1.Eviction{Metadata: objMeta("default", "web-1"), DeleteOptions: &corev1.DeleteOptions{DryRun: []string{"All"}}}); err != nil {
		t.Fatal(err)
	}
	f.notEvicted("web-1")
	// Grace period 0: the pod goes at once.
	if _, err := f.pods.Evict(ctx, &corev1.Eviction{Metadata: objMeta("default", "web-1"), DeleteOptions: &corev1.DeleteOptions{
		GracePeriodSeconds: proto.Int64(0), Preconditions: &metav1.Preconditions{Uid: p.GetMetadata().GetUid()},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pods.Get(ctx, &metav1.GetRequest{Namespace: "default", Name: "web-1"}); !apierrors.IsNotFound(err) {
		t.Errorf("pod after an eviction with grace period 0: %v, want NotFound", err)
	}
	if _, err := f.pods.Evict(ctx, &corev1.Eviction{Metadata: objMeta("default", "web-1")}); !apierrors.IsNotFound(err) {
		t.Errorf("evicting a missing pod: %v, want NotFound", err)
	}
}

func TestEvictionNeedsCreateOnPodsEviction(t *testing.T) {
	s := startAuthorized(t)
	f := newEvictionFixture(t, s)
	f.pod("web-1", "Running")
	mustCreate(t, client.Roles(s.Conn).Create, &rbacv1.Role{Metadata: objMeta("default", "pod-reader"), Rules: []*rbacv1.PolicyRule{
		policyRule("get", "", "pods"),
	}})
	mustCreate(t, client.RoleBindings(s.Conn).Create, &rbacv1.RoleBinding{Metadata: objMeta("default", "bob-reads"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "Role", Name: "pod-reader"}, Subjects: []*rbacv1.Subject{subjectUser("bob")}})
	bob := corev1.NewPodsClient(s.ConnAs(t, "bob"))
	eventually(t, "bob may get pods", func() error {
		_, err := bob.Get(testContext(t), &metav1.GetRequest{Namespace: "default", Name: "web-1"})
		return err
	})
	err := f.evict(bob, "web-1")
	denied(t, "evict with get pods only", err, `pods "web-1" is forbidden: User "bob" cannot create resource "pods/eviction" in API group "" in the namespace "default"`)
	f.notEvicted("web-1")

	mustCreate(t, client.Roles(s.Conn).Create, &rbacv1.Role{Metadata: objMeta("default", "evictor"), Rules: []*rbacv1.PolicyRule{
		policyRule("create", "", "pods/eviction"),
	}})
	mustCreate(t, client.RoleBindings(s.Conn).Create, &rbacv1.RoleBinding{Metadata: objMeta("default", "bob-evicts"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "Role", Name: "evictor"}, Subjects: []*rbacv1.Subject{subjectUser("bob")}})
	eventually(t, "bob may evict", func() error { return f.evict(bob, "web-1") })
	f.evicted("web-1")
}

// An eviction is audited as Kubernetes': create of pods/eviction, the pod
// named, the Eviction as the request object.
func TestEvictionIsAudited(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Audit = audit.Options{Path: path, Level: audit.LevelRequest, OmitVerbs: []string{"watch"}}
	}))
	f := newEvictionFixture(t, s)
	f.pod("web-1", "Pending")
	if err := f.evict(corev1.NewPodsClient(s.ConnAs(t, "evictor", "team-a")), "web-1"); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	var sig await.Signal
	sig.Until(t, 10*time.Second, "the eviction's audit line", testContext(t).Done(), func() (bool, string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, err.Error()
		}
		for _, l := range bytes.Split(b, []byte("\n")) {
			if bytes.Contains(l, []byte(`"username":"evictor"`)) {
				line = nil
				if err := json.Unmarshal(l, &line); err != nil {
					return false, err.Error()
				}
				return true, ""
			}
		}
		return false, "no line of user evictor"
	})
	ref, _ := line["objectRef"].(map[string]any)
	if line["verb"] != "create" || ref["resource"] != "pods" || ref["subresource"] != "eviction" || ref["name"] != "web-1" || ref["namespace"] != "default" {
		t.Errorf("audit line %v: want create pods/eviction default/web-1", line)
	}
	if req, _ := json.Marshal(line["requestObject"]); !bytes.Contains(req, []byte(`"web-1"`)) {
		t.Errorf("requestObject %s does not name the pod", req)
	}
}
