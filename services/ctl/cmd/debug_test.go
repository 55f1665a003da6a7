package cmd

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// skiffctl debug against the real apiserver: the ephemeral container it
// adds, its name and messages, the flags kubectl refuses. Attaching to a
// running one is end to end on a real containerd, in the node agent's
// TestContainerdEphemeralContainers.

func TestDebugAddsAnEphemeralContainer(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	pods := client.Pods(shared.Conn)
	if _, err := pods.Create(ctx, &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: c.ns, Name: "web"},
		Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "app", Image: "demo"}}}}); err != nil {
		t.Fatal(err)
	}

	out := c.ok("debug", "web", "--image=busybox:1.36", "--target=app", "--", "sh", "-c", "ps")
	m := regexp.MustCompile(`^Defaulting debug container name to (debugger-[bcdfghjklmnpqrstvwxz2456789]{5})\.\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output %q: no default name", out)
	}
	if !strings.Contains(out, `Targeting container "app". If you don't see processes from this container it may be because the container runtime doesn't support this feature.`) {
		t.Errorf("output %q: no targeting message", out)
	}
	c.ok("debug", "pod/web", "-q", "-c", "probe", "--image=busybox:1.36", "--arguments-only", "--env=B=2", "--env=A=1",
		"--profile=sysadmin", "--image-pull-policy=Never", "--", "wget", "-qO-", "localhost:8080")

	p, err := pods.Get(ctx, c.ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	ecs := p.GetSpec().GetEphemeralContainers()
	if len(ecs) != 2 {
		t.Fatalf("ephemeral containers: %v", ecs)
	}
	first, probe := ecs[0], ecs[1]
	if first.GetName() != m[1] || first.GetImage() != "busybox:1.36" || first.GetTargetContainerName() != "app" ||
		!slices.Equal(first.GetCommand(), []string{"sh", "-c", "ps"}) || first.GetStdin() || first.GetTty() {
		t.Errorf("the first: %v", first)
	}
	if caps := first.GetSecurityContext().GetCapabilities().GetAdd(); !slices.Equal(caps, []string{"SYS_PTRACE"}) {
		t.Errorf("the general profile's capabilities: %v", caps)
	}
	if first.GetImagePullPolicy() != "IfNotPresent" || first.GetTerminationMessagePolicy() != "File" {
		t.Errorf("the server's defaults: %v", first)
	}
	if probe.GetName() != "probe" || !slices.Equal(probe.GetArgs(), []string{"wget", "-qO-", "localhost:8080"}) || len(probe.GetCommand()) != 0 ||
		probe.GetImagePullPolicy() != "Never" || !probe.GetSecurityContext().GetPrivileged() {
		t.Errorf("probe: %v", probe)
	}
	var env []string
	for _, e := range probe.GetEnv() {
		env = append(env, e.GetName()+"="+e.GetValue())
	}
	if !slices.Equal(env, []string{"A=1", "B=2"}) {
		t.Errorf("probe's env: %v", env)
	}

	// A name taken (by a container, or an ephemeral one): the server says so.
	if e := c.fails("debug", "web", "-c", "app", "--image=busybox"); !strings.Contains(e, `spec.ephemeralContainers[2].name: Duplicate value: "app"`) {
		t.Errorf("-c app: %s", e)
	}
	if e := c.fails("debug", "web", "-c", "probe", "--image=busybox"); !strings.Contains(e, `existing ephemeral containers "probe" may not be changed`) &&
		!strings.Contains(e, `Duplicate value: "probe"`) {
		t.Errorf("-c probe again: %s", e)
	}
	if e := c.fails("debug", "nope", "--image=busybox"); !strings.Contains(e, `pods "nope" not found`) {
		t.Errorf("a pod that does not exist: %s", e)
	}
}

func TestDebugFlags(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"debug", "web"}, "you must specify --image when not using --copy-to."},
		{[]string{"debug", "--image=busybox"}, "NAME or filename is required for debug"},
		{[]string{"debug", "web", "--image=busybox", "-t"}, "-i/--stdin is required for containers with -t/--tty=true"},
		{[]string{"debug", "web", "--image=busybox", "--image-pull-policy=Sometimes"}, "invalid image pull policy: Sometimes"},
		{[]string{"debug", "web", "--image=busybox", "--profile=hacker"}, "unknown profile: hacker"},
		{[]string{"debug", "web", "--attach"}, "you must specify --container or create a new container using --image in order to attach."},
		{[]string{"debug", "deployment/web", "--image=busybox"}, `"deployment" not supported by debug`},
	} {
		if e := c.fails(tc.args...); !strings.Contains(e, tc.want) {
			t.Errorf("%v: %q, want %q", tc.args, e, tc.want)
		}
	}
}

func TestDebugContainerName(t *testing.T) {
	p := &corev1.Pod{Spec: &corev1.PodSpec{
		Containers:          []*corev1.Container{{Name: "debugger-aaaaa"}},
		EphemeralContainers: []*corev1.EphemeralContainer{{Name: "debugger-bbbbb"}},
	}}
	draws := []string{"aaaaa", "bbbbb", "ccccc"}
	next := func() string { s := draws[0]; draws = draws[1:]; return s }
	if got := debugContainerName(p, next); got != "debugger-ccccc" {
		t.Errorf("name %q, want debugger-ccccc (the others are taken)", got)
	}
	if s := randomSuffix(); len(s) != 5 || strings.Trim(s, "bcdfghjklmnpqrstvwxz2456789") != "" {
		t.Errorf("randomSuffix %q", s)
	}
}
