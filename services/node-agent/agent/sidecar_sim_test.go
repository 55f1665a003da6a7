package agent

import (
	"testing"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/sim"
)

// TestSidecarsOfAJobPod on the simulated runtime, as a Job's pod lives:
// restartPolicy Never, a regular init container that completes, two
// sidecars and a main container. The main container exits 0: the pod is
// Succeeded (what the job controller counts, by phase) with its sidecars
// stopped; none of them was restarted.
func TestSidecarsOfAJobPod(t *testing.T) {
	e := start(t, sim.Options{})
	e.sim.SetOnStart(func(c sim.Container) (bool, int32) { return c.Name == "setup", 0 })
	sidecar := func(name string) *corev1.Container {
		c := ctr(name, "proxy:1")
		c.RestartPolicy = proto.String("Always")
		return c
	}
	p := pod("job", ctr("main", "worker:1"))
	p.Spec.RestartPolicy = "Never"
	p.Spec.InitContainers = []*corev1.Container{sidecar("proxy"), ctr("setup", "tools:1"), sidecar("logger")}
	e.create(p)

	e.untilPod("job", "main running, Initialized", func(p *corev1.Pod) (bool, string) {
		return containerStatusOf(p, "main").GetState().GetRunning() != nil && condition(p, "Initialized") == "True", ""
	})
	main, ok := e.sim.ContainerOf("default", "job", "main")
	if !ok {
		t.Fatal("no main container in the runtime")
	}
	if err := e.sim.Exit(main.ID, 0); err != nil {
		t.Fatal(err)
	}
	got := e.untilPod("job", "Succeeded with its sidecars stopped", func(p *corev1.Pod) (bool, string) {
		return p.GetStatus().GetPhase() == "Succeeded" &&
			containerStatusOf(p, "proxy").GetState().GetTerminated() != nil &&
			containerStatusOf(p, "logger").GetState().GetTerminated() != nil, ""
	})
	for _, name := range []string{"proxy", "setup", "logger", "main"} {
		if n := containerStatusOf(got, name).GetRestartCount(); n != 0 {
			t.Errorf("%s restarted %d times", name, n)
		}
	}
	for _, c := range e.sim.Containers() {
		if c.Running() {
			t.Errorf("%s still running", c.Name)
		}
	}
	if _, err := e.pods.Delete(e.ctx, &metav1.DeleteRequest{Namespace: "default", Name: "job"}); err != nil {
		t.Fatal(err)
	}
	e.until("pod job gone", func() (bool, string) { return e.pod("job") == nil, "" })
}
