package integration

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// The pods/ephemeralcontainers subresource (Pods.UpdateEphemeralContainers),
// as Kubernetes' EphemeralContainersREST: ephemeral containers are only
// added, never set on create, changed or removed.

func debugger(name, target string) *corev1.EphemeralContainer {
	return &corev1.EphemeralContainer{Name: name, Image: "busybox:1.36", Command: []string{"sh"}, Stdin: true, Tty: true, TargetContainerName: target}
}

// invalidSays checks err is Invalid and its message has every one of want.
func invalidSays(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Errorf("%s: got %v, want Invalid", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err.Error(), w)
		}
	}
}

func TestEphemeralContainersSubresource(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	pods := corev1.NewPodsClient(s.Conn)

	withEphemeral := &corev1.Pod{Metadata: objMeta("default", "born-debugged"), Spec: podSpec()}
	withEphemeral.Spec.EphemeralContainers = []*corev1.EphemeralContainer{debugger("debugger", "web")}
	_, err := pods.Create(ctx, withEphemeral)
	invalidSays(t, "create with an ephemeral container", err, "spec.ephemeralContainers: Forbidden: cannot be set on create")

	created, err := pods.Create(ctx, &corev1.Pod{Metadata: objMeta("default", "web"), Spec: podSpec()})
	if err != nil {
		t.Fatal(err)
	}

	// Added: defaulted, generation bumped; what else the request changes is
	// not taken (only spec.ephemeralContainers counts).
	req := proto.Clone(created).(*corev1.Pod)
	req.Spec.EphemeralContainers = []*corev1.EphemeralContainer{debugger("debugger", "web")}
	req.Spec.Containers[0].Image = "nginx:9"
	req.Metadata.Labels = map[string]string{"sneaked": "in"}
	added, err := pods.UpdateEphemeralContainers(ctx, req)
	if err != nil {
		t.Fatalf("adding an ephemeral container: %v", err)
	}
	ec := added.GetSpec().GetEphemeralContainers()
	if len(ec) != 1 || ec[0].GetName() != "debugger" || ec[0].GetTargetContainerName() != "web" || !ec[0].GetTty() {
		t.Fatalf("ephemeral containers after the add: %v", ec)
	}
	if ec[0].GetImagePullPolicy() != "IfNotPresent" || ec[0].GetTerminationMessagePath() != "/dev/termination-log" || ec[0].GetTerminationMessagePolicy() != "File" {
		t.Errorf("ephemeral container not defaulted: %v", ec[0])
	}
	if got := added.GetSpec().GetContainers()[0].GetImage(); got != "nginx:1.14.2" {
		t.Errorf("the request's container image was taken: %s", got)
	}
	if _, ok := added.GetMetadata().GetLabels()["sneaked"]; ok {
		t.Error("the request's labels were taken")
	}
	if g, was := added.GetMetadata().GetGeneration(), created.GetMetadata().GetGeneration(); g != was+1 {
		t.Errorf("generation %d after the add, want %d", g, was+1)
	}
	stored, err := client.Pods(s.Conn).Get(ctx, "default", "web")
	if err != nil || len(stored.GetSpec().GetEphemeralContainers()) != 1 {
		t.Fatalf("stored pod: %v, %v", stored.GetSpec().GetEphemeralContainers(), err)
	}

	// The same list again: no write.
	again, err := pods.UpdateEphemeralContainers(ctx, added)
	if err != nil || again.GetMetadata().GetResourceVersion() != added.GetMetadata().GetResourceVersion() {
		t.Errorf("the same ephemeral containers again: rv %s (was %s), %v", again.GetMetadata().GetResourceVersion(), added.GetMetadata().GetResourceVersion(), err)
	}

	for _, tc := range []struct {
		name   string
		change func(p *corev1.Pod)
		want   []string
	}{
		{"changed", func(p *corev1.Pod) { p.Spec.EphemeralContainers[0].Image = "busybox:2" },
			[]string{`spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be changed`, "changed: image"}},
		{"removed", func(p *corev1.Pod) { p.Spec.EphemeralContainers = nil },
			[]string{`spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be removed`}},
		{"replaced", func(p *corev1.Pod) { p.Spec.EphemeralContainers = []*corev1.EphemeralContainer{debugger("other", "")} },
			[]string{`existing ephemeral containers "debugger" may not be removed`}},
		{"name of a container", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugger("web", ""))
		}, []string{`spec.ephemeralContainers[1].name: Duplicate value: "web"`}},
		{"name of another ephemeral container", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugger("two", ""), debugger("two", ""))
		}, []string{`spec.ephemeralContainers[2].name: Duplicate value: "two"`}},
		{"unknown target", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugger("d2", "db"))
		}, []string{`spec.ephemeralContainers[1].targetContainerName: Not found: "db"`}},
		{"an ephemeral target", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugger("d2", "debugger"))
		}, []string{`spec.ephemeralContainers[1].targetContainerName: Not found: "debugger"`}},
		{"subPath", func(p *corev1.Pod) {
			p.Spec.Volumes = []*corev1.Volume{{Name: "data", EmptyDir: &corev1.EmptyDirVolumeSource{}}}
			d := debugger("d2", "")
			d.VolumeMounts = []*corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "x"}}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, d)
		}, nil}, // the volume is not taken from the request: the mount names none
		{"no image", func(p *corev1.Pod) {
			d := debugger("d2", "")
			d.Image = ""
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, d)
		}, []string{`spec.ephemeralContainers[1].image: Required value`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := proto.Clone(added).(*corev1.Pod)
			tc.change(req)
			_, err := pods.UpdateEphemeralContainers(ctx, req)
			want := tc.want
			if want == nil {
				want = []string{`spec.ephemeralContainers[1].volumeMounts[0].name: Invalid value: "data"`,
					`spec.ephemeralContainers[1].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container`}
			}
			invalidSays(t, tc.name, err, want...)
		})
	}

	// A second one is added beside the first; a stale resourceVersion and
	// another uid are refused.
	req = proto.Clone(added).(*corev1.Pod)
	req.Spec.EphemeralContainers = append(req.Spec.EphemeralContainers, debugger("second", ""))
	two, err := pods.UpdateEphemeralContainers(ctx, req)
	if err != nil || len(two.GetSpec().GetEphemeralContainers()) != 2 {
		t.Fatalf("adding a second: %v, %v", two.GetSpec().GetEphemeralContainers(), err)
	}
	req.Spec.EphemeralContainers = append(req.Spec.EphemeralContainers, debugger("third", ""))
	if _, err := pods.UpdateEphemeralContainers(ctx, req); !apierrors.IsConflict(err) {
		t.Errorf("with a stale resourceVersion: %v, want Conflict", err)
	}
	req.Metadata.ResourceVersion = ""
	req.Metadata.Uid = "not-the-pods"
	if _, err := pods.UpdateEphemeralContainers(ctx, req); !apierrors.IsConflict(err) {
		t.Errorf("with another uid: %v, want Conflict", err)
	}
	req.Metadata.Name = "nope"
	req.Metadata.Uid = ""
	if _, err := pods.UpdateEphemeralContainers(ctx, req); !apierrors.IsNotFound(err) {
		t.Errorf("of a pod that does not exist: %v, want NotFound", err)
	}

	// Not through a pod update; the status still is.
	upd := proto.Clone(two).(*corev1.Pod)
	upd.Spec.EphemeralContainers = upd.Spec.EphemeralContainers[:1]
	_, err = pods.Update(ctx, upd)
	invalidSays(t, "removing one with a pod update", err, "spec: Forbidden: pod updates may not change fields", "ephemeralContainers")
	st := proto.Clone(two).(*corev1.Pod)
	st.Status.EphemeralContainerStatuses = []*corev1.ContainerStatus{{Name: "debugger", Image: "busybox:1.36",
		State: &corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	if _, err := pods.UpdateStatus(ctx, st); err != nil {
		t.Errorf("status of a pod with ephemeral containers: %v", err)
	}

	// Never in a template.
	dep := &appsv1.Deployment{Metadata: objMeta("default", "web"), Spec: &appsv1.DeploymentSpec{Selector: selector(), Template: template()}}
	dep.Spec.Template.Spec.EphemeralContainers = []*corev1.EphemeralContainer{debugger("debugger", "")}
	_, err = client.Deployments(s.Conn).Create(ctx, dep)
	invalidSays(t, "a Deployment's template", err, "spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template")
}

// TestEphemeralContainersAuthorization: update on pods/ephemeralcontainers,
// which edit (and so admin) does not grant, as in Kubernetes; a role that
// names it does.
func TestEphemeralContainersAuthorization(t *testing.T) {
	s := startAuthorized(t)
	ctx := testContext(t)
	createNamespaces(t, s, "team-a")
	pod := mustCreate(t, client.Pods(s.Conn).Create, &corev1.Pod{Metadata: objMeta("team-a", "web"), Spec: podSpec()})
	mustCreate(t, client.RoleBindings(s.Conn).Create, &rbacv1.RoleBinding{Metadata: objMeta("team-a", "dev-edits"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "ClusterRole", Name: "edit"}, Subjects: []*rbacv1.Subject{subjectUser("dev")}})
	dev := corev1.NewPodsClient(s.ConnAs(t, "dev"))
	eventually(t, "dev may get pods in team-a", func() error {
		_, err := dev.Get(ctx, &metav1.GetRequest{Namespace: "team-a", Name: "web"})
		return err
	})
	req := proto.Clone(pod).(*corev1.Pod)
	req.Spec.EphemeralContainers = []*corev1.EphemeralContainer{debugger("debugger", "web")}
	_, err := dev.UpdateEphemeralContainers(ctx, req)
	denied(t, "edit adding an ephemeral container", err,
		`pods "web" is forbidden: User "dev" cannot update resource "pods/ephemeralcontainers" in API group "" in the namespace "team-a"`)

	mustCreate(t, client.Roles(s.Conn).Create, &rbacv1.Role{Metadata: objMeta("team-a", "debug"), Rules: []*rbacv1.PolicyRule{
		policyRule("update patch", "", "pods/ephemeralcontainers"),
	}})
	mustCreate(t, client.RoleBindings(s.Conn).Create, &rbacv1.RoleBinding{Metadata: objMeta("team-a", "dev-debugs"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "Role", Name: "debug"}, Subjects: []*rbacv1.Subject{subjectUser("dev")}})
	eventually(t, "dev may add ephemeral containers", func() error {
		_, err := dev.UpdateEphemeralContainers(ctx, req)
		return err
	})
	got, err := client.Pods(s.Conn).Get(ctx, "team-a", "web")
	if err != nil || len(got.GetSpec().GetEphemeralContainers()) != 1 {
		t.Errorf("after dev's add: %v, %v", got.GetSpec().GetEphemeralContainers(), err)
	}
}
