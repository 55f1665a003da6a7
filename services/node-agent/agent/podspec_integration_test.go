package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	nodev1 "skiff.dev/proto/node/v1"
	"skiff.dev/services/node-agent/sim"
)

// Issue 18's pod fields through the agent on the simulated runtime (the
// real apiserver): readiness gates hold Ready until whoever owns them says
// True, runtimeClassName picks the sandbox's runtime handler (a missing
// class holds the pod with the kubelet's event), hostAliases reach the
// managed /etc/hosts, and the Node's nodeInfo is the machine's.

// TestReadinessGatesHoldReady: a pod whose containers are ready stays
// Ready=False until its gate's condition, written by another component
// through UpdateStatus, is True; the agent keeps that condition as it
// writes the status, and follows it back to False.
func TestReadinessGatesHoldReady(t *testing.T) {
	e := start(t, sim.Options{})
	p := pod("gated", ctr("app", "demo:v1"))
	p.Spec.ReadinessGates = []*corev1.PodReadinessGate{{ConditionType: "example.com/load-balancer"}}
	e.create(p)
	readyCond := func(p *corev1.Pod) *corev1.PodCondition {
		for _, c := range p.GetStatus().GetConditions() {
			if c.GetType() == "Ready" {
				return c
			}
		}
		return nil
	}
	e.untilPod("gated", "containers ready, Ready False for the missing gate", func(p *corev1.Pod) (bool, string) {
		r := readyCond(p)
		return condition(p, "ContainersReady") == "True" && r.GetStatus() == "False" && r.GetReason() == "ReadinessGatesNotReady" &&
			r.GetMessage() == `corresponding condition of pod readiness gate "example.com/load-balancer" does not exist.`, fmt.Sprint(r)
	})

	e.setCondition("gated", &corev1.PodCondition{Type: "example.com/load-balancer", Status: "False"})
	e.untilPod("gated", "Ready False for the False gate", func(p *corev1.Pod) (bool, string) {
		r := readyCond(p)
		return r.GetMessage() == `the status of pod readiness gate "example.com/load-balancer" is not "True", but False`, fmt.Sprint(r)
	})

	rv := e.setCondition("gated", &corev1.PodCondition{Type: "example.com/load-balancer", Status: "True"})
	got := e.untilPod("gated", "Ready once the gate is True", func(p *corev1.Pod) (bool, string) {
		return after(p, rv) && condition(p, "Ready") == "True", ""
	})
	if condition(got, "example.com/load-balancer") != "True" {
		t.Errorf("the agent dropped the gate's condition: %s", brief(got.GetStatus()))
	}

	e.setCondition("gated", &corev1.PodCondition{Type: "example.com/load-balancer", Status: "False"})
	e.untilPod("gated", "not Ready again once the gate is False", func(p *corev1.Pod) (bool, string) {
		return condition(p, "Ready") == "False" && readyCond(p).GetReason() == "ReadinessGatesNotReady" && condition(p, "ContainersReady") == "True", ""
	})
}

// TestRuntimeClassHandler: the sandbox of a pod with runtimeClassName
// runs with its class's handler; a pod naming a class that does not exist
// waits with the kubelet's FailedCreatePodSandBox event and starts once
// the class is made.
func TestRuntimeClassHandler(t *testing.T) {
	e := start(t, sim.Options{})
	classes := client.RuntimeClasses(e.api.Conn)
	if _, err := classes.Create(e.ctx, &nodev1.RuntimeClass{Metadata: &metav1.ObjectMeta{Name: "sandboxed"}, Handler: "kata"}); err != nil {
		t.Fatal(err)
	}
	withClass := func(name, class string) *corev1.Pod {
		p := pod(name, ctr("app", "demo:v1"))
		p.Spec.RuntimeClassName = proto.String(class)
		return p
	}
	e.create(withClass("kata", "sandboxed"))
	e.create(withClass("later", "not-yet"))
	e.create(pod("plain", ctr("app", "demo:v1")))
	e.untilRunning("kata")
	e.untilRunning("plain")

	handlers := map[string]string{}
	sandboxes, err := e.agent.rt.ListPodSandbox(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sandboxes {
		handlers[s.GetMetadata().GetName()] = s.GetRuntimeHandler()
	}
	if handlers["kata"] != "kata" || handlers["plain"] != "" {
		t.Errorf("sandbox runtime handlers: %v", handlers)
	}
	if _, ok := handlers["later"]; ok {
		t.Errorf("a sandbox was made for a pod whose RuntimeClass does not exist")
	}

	const want = `FailedCreatePodSandBox: Failed to create pod sandbox: runtimeclass.node.k8s.io "not-yet" not found`
	e.untilPod("later", "the missing class's event", func(p *corev1.Pod) (bool, string) {
		evs := e.eventsOf("later")
		return slices.Contains(evs, want) && p.GetStatus().GetPhase() == "Pending", fmt.Sprint(evs)
	})
	if _, err := classes.Create(e.ctx, &nodev1.RuntimeClass{Metadata: &metav1.ObjectMeta{Name: "not-yet"}, Handler: "runc"}); err != nil {
		t.Fatal(err)
	}
	e.untilRunning("later")
}

// TestHostAliasesFile: every container of a pod mounts the pod's managed
// hosts file at /etc/hosts, with its IP, hostname and aliases; a
// container that mounts its own /etc/hosts keeps it.
func TestHostAliasesFile(t *testing.T) {
	e := start(t, sim.Options{})
	own := ctr("own", "demo:v1")
	own.VolumeMounts = []*corev1.VolumeMount{{Name: "hosts", MountPath: "/etc/hosts"}}
	p := pod("aliased", ctr("app", "demo:v1"), own)
	p.Spec.Hostname, p.Spec.Subdomain = "db-0", "db"
	p.Spec.HostAliases = []*corev1.HostAlias{{Ip: "10.1.2.3", Hostnames: []string{"foo.remote", "bar.remote"}}}
	p.Spec.Volumes = []*corev1.Volume{{Name: "hosts", EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	created := e.create(p)
	got := e.untilRunning("aliased")

	path := filepath.Join(e.cfg.RootDir, "pods", created.GetMetadata().GetUid(), "etc-hosts")
	mounts := func(name string) []string {
		c, ok := e.sim.ContainerOf("default", "aliased", name)
		if !ok {
			t.Fatalf("no container %s", name)
		}
		var out []string
		for _, m := range c.Config.GetMounts() {
			out = append(out, m.GetContainerPath()+"="+m.GetHostPath())
		}
		return out
	}
	if m := mounts("app"); !slices.Contains(m, "/etc/hosts="+path) {
		t.Errorf("app's mounts %v lack the managed hosts file", m)
	}
	if m := mounts("own"); slices.Contains(m, "/etc/hosts="+path) || len(slices.DeleteFunc(m, func(s string) bool { return !strings.HasPrefix(s, "/etc/hosts=") })) != 1 {
		t.Errorf("own's mounts %v: want only its volume at /etc/hosts", m)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ip := got.GetStatus().GetPodIp()
	want := fmt.Sprintf("%s\tdb-0.db.default.svc.cluster.local\tdb-0\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo.remote\tbar.remote\n", ip)
	if !strings.HasPrefix(string(b), "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n") || !strings.HasSuffix(string(b), want) {
		t.Errorf("hosts file:\n%s\nwant it to end with\n%s", b, want)
	}
}

// TestNodeInfo: the Node's status.nodeInfo is the machine's identity as
// the kubelet reports it, read from the (injected) host files.
func TestNodeInfo(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	files := &hostFiles{
		MachineID:     []string{write("machine-id", "aaaabbbbccccddddeeeeffff00001111\n")},
		ProductUUID:   write("product_uuid", "ec2a1b2c-0000-4000-8000-000000000001\n"),
		BootID:        write("boot_id", "b0000000-0000-4000-8000-000000000002\n"),
		KernelRelease: write("osrelease", "6.1.0-test\n"),
		OSRelease:     write("os-release", "PRETTY_NAME=\"Skiff Test OS 1\"\n"),
	}
	e := start(t, sim.Options{}, func(c *Config) { c.hostFiles = files })
	e.until("the node's nodeInfo", func() (bool, string) {
		n, ok := e.nodes.Store().GetByName("", nodeName)
		if !ok {
			return false, "no node"
		}
		if err := e.agent.Ready(); err != nil {
			return false, err.Error()
		}
		ni := n.GetStatus().GetNodeInfo()
		return ni.GetMachineId() == "aaaabbbbccccddddeeeeffff00001111" && ni.GetSystemUuid() == "ec2a1b2c-0000-4000-8000-000000000001" &&
			ni.GetBootId() == "b0000000-0000-4000-8000-000000000002" && ni.GetKernelVersion() == "6.1.0-test" &&
			ni.GetOsImage() == "Skiff Test OS 1" && ni.GetContainerRuntimeVersion() == "skiff-sim://v0.1.0" &&
			ni.GetKubeletVersion() == Version && ni.GetKubeProxyVersion() == "" && ni.GetOperatingSystem() == "linux", fmt.Sprint(ni)
	})
}
