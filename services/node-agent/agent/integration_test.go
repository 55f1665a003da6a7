package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/sim"
)

func nodeReady(n *corev1.Node) *corev1.NodeCondition {
	for _, c := range n.GetStatus().GetConditions() {
		if c.GetType() == "Ready" {
			return c
		}
	}
	return nil
}

func TestNodeRegistersRenewsItsLeaseAndFollowsTheRuntime(t *testing.T) {
	e := start(t, sim.Options{}, func(c *Config) {
		c.Labels = map[string]string{"zone": "a"}
		c.Taints = []*corev1.Taint{{Key: "dedicated", Value: "x", Effect: "NoSchedule"}}
		c.Capacity = map[string]string{"cpu": "3"}
		c.MaxPods = 50
		c.NodeStatusReportPeriod = time.Hour // writes only for changes
	})
	var node *corev1.Node
	e.until("node registered and Ready", func() (bool, string) {
		n, ok := e.nodes.Store().GetByName("", nodeName)
		if !ok {
			return false, "no node"
		}
		node = n
		return nodeReady(n).GetStatus() == "True", fmt.Sprintf("ready: %v", nodeReady(n))
	})
	st := node.GetStatus()
	if l := node.GetMetadata().GetLabels(); l["zone"] != "a" || l["kubernetes.io/hostname"] != nodeName || l["kubernetes.io/os"] != "linux" {
		t.Errorf("labels: %v", l)
	}
	if ts := node.GetSpec().GetTaints(); len(ts) != 1 || ts[0].GetKey() != "dedicated" {
		t.Errorf("taints: %v", ts)
	}
	if c := st.GetCapacity(); c["cpu"] != "3" || c["pods"] != "50" || !strings.HasSuffix(c["memory"], "Ki") || st.GetAllocatable()["cpu"] != "3" {
		t.Errorf("capacity %v allocatable %v", c, st.GetAllocatable())
	}
	if a := st.GetAddresses(); len(a) != 2 || a[0].GetType() != "InternalIP" || a[0].GetAddress() != "127.0.0.1" || a[1].GetAddress() != "host-1" {
		t.Errorf("addresses: %v", a)
	}
	if st.GetNodeInfo().GetContainerRuntimeVersion() != "skiff-sim://v0.1.0" || st.GetNodeInfo().GetKubeletVersion() != Version {
		t.Errorf("nodeInfo: %v", st.GetNodeInfo())
	}
	if st.GetDaemonEndpoints().GetKubeletEndpoint().GetPort() == 0 {
		t.Errorf("no agent port advertised")
	}

	// The lease is renewed.
	var first time.Time
	e.until("lease renewed twice", func() (bool, string) {
		l, ok := e.leases.Store().GetByName(NodeLeaseNamespace, nodeName)
		if !ok {
			return false, "no lease"
		}
		rt := l.GetSpec().GetRenewTime().AsTime()
		if first.IsZero() {
			first = rt
		}
		if l.GetSpec().GetHolderIdentity() != nodeName || l.GetSpec().GetLeaseDurationSeconds() != 40 ||
			len(l.GetMetadata().GetOwnerReferences()) != 1 || l.GetMetadata().GetOwnerReferences()[0].GetUid() != node.GetMetadata().GetUid() {
			return false, fmt.Sprintf("lease %v", l)
		}
		return rt.After(first), "renewTime " + rt.String()
	})

	// Ready follows the runtime's network.
	e.sim.SetCondition(runtimeapi.NetworkReady, false, "NetworkPluginNotReady", "cni plugin not initialized")
	e.until("node not ready", func() (bool, string) {
		n, _ := e.nodes.Store().GetByName("", nodeName)
		c := nodeReady(n)
		return c.GetStatus() == "False" && c.GetReason() == "KubeletNotReady" &&
			strings.Contains(c.GetMessage(), "NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized"), fmt.Sprint(c)
	})
	// Meanwhile pods wait for the network.
	e.create(pod("waits", ctr("app", "demo:v1")))
	e.untilPod("waits", "ContainerCreating", func(p *corev1.Pod) (bool, string) {
		return containerStatusOf(p, "app").GetState().GetWaiting().GetReason() == reasonContainerCreating, ""
	})
	e.sim.SetCondition(runtimeapi.NetworkReady, true, "", "")
	e.until("node ready again", func() (bool, string) {
		n, _ := e.nodes.Store().GetByName("", nodeName)
		return nodeReady(n).GetStatus() == "True", fmt.Sprint(nodeReady(n))
	})
	e.untilRunning("waits")

	// A restarted agent finds its node and keeps it.
	e.stopAgent()
	e.startAgent()
	e.until("agent ready after restart", func() (bool, string) {
		err := e.agent.Ready()
		return err == nil, fmt.Sprint(err)
	})
	n, _ := e.nodes.Store().GetByName("", nodeName)
	if n.GetMetadata().GetUid() != node.GetMetadata().GetUid() {
		t.Errorf("node recreated")
	}

	// The node lifecycle controller marks the node Unknown (its Lease was
	// late, say, while the agent restarted); the agent, healthy, sets it
	// back to Ready although its own last write said Ready already.
	err := client.RetryOnConflict(context.Background(), client.DefaultRetry, func() error {
		cur, err := client.Nodes(e.api.Conn).Get(context.Background(), "", nodeName)
		if err != nil {
			return err
		}
		for _, c := range cur.GetStatus().GetConditions() {
			if c.GetType() == "Ready" {
				c.Status, c.Reason, c.Message = "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."
			}
		}
		_, err = client.Nodes(e.api.Conn).UpdateStatus(context.Background(), cur)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	e.until("node Ready again after another writer marked it Unknown", func() (bool, string) {
		n, _ := e.nodes.Store().GetByName("", nodeName)
		return nodeReady(n).GetStatus() == "True", fmt.Sprint(nodeReady(n))
	})
}

func TestPodRunsWithStatusEnvAndVolumes(t *testing.T) {
	e := start(t, sim.Options{Subnet: "10.77.0.0/24"})
	hostDir := filepath.Join(t.TempDir(), "host")
	if _, err := client.ConfigMaps(e.api.Conn).Create(e.ctx, &corev1.ConfigMap{
		Metadata: &metav1.ObjectMeta{Name: "cfg", Namespace: "default"},
		Data:     map[string]string{"color": "blue", "size": "L", "app.conf": "x=1\n"},
	}); err != nil {
		t.Fatal(err)
	}
	app := ctr("app", "demo:v1")
	app.Command = []string{"/demo"}
	app.Args = []string{"--color=$(COLOR)", "$$(LITERAL)"}
	app.WorkingDir = "/work"
	app.Ports = []*corev1.ContainerPort{{Name: "http", ContainerPort: 8080, HostPort: 18080, Protocol: "TCP"}}
	app.Resources = &corev1.ResourceRequirements{
		Requests: map[string]string{"cpu": "250m", "memory": "64Mi"},
		Limits:   map[string]string{"cpu": "500m", "memory": "128Mi"},
	}
	app.Env = []*corev1.EnvVar{
		{Name: "GREETING", Value: "hello"},
		{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Name: "cfg", Key: "color"}}},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "GREETING2", Value: "$(GREETING) world"},
	}
	app.EnvFrom = []*corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{Name: "cfg"}}}
	app.VolumeMounts = []*corev1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "config", MountPath: "/etc/app"},
		{Name: "host", MountPath: "/host", ReadOnly: true},
	}
	p := pod("web", app, ctr("sidecar", "helper:v2"))
	p.Spec.Volumes = []*corev1.Volume{
		{Name: "scratch", EmptyDir: &corev1.EmptyDirVolumeSource{}},
		{Name: "config", ConfigMap: &corev1.ConfigMapVolumeSource{Name: "cfg", Items: []*corev1.KeyToPath{{Key: "app.conf", Path: "conf/app.conf"}}}},
		{Name: "host", HostPath: &corev1.HostPathVolumeSource{Path: hostDir, Type: "DirectoryOrCreate"}},
	}
	created := e.create(p)
	got := e.untilRunning("web")
	uid := created.GetMetadata().GetUid()

	st := got.GetStatus()
	if st.GetPodIp() != "10.77.0.2" || st.GetHostIp() != "127.0.0.1" || st.GetStartTime() == nil || st.GetQosClass() != "Burstable" {
		t.Errorf("status: %v", st)
	}
	for _, typ := range []string{"PodScheduled", "Initialized", "ContainersReady", "Ready"} {
		if condition(got, typ) != "True" {
			t.Errorf("condition %s = %q", typ, condition(got, typ))
		}
	}
	c, ok := e.sim.ContainerOf("default", "web", "app")
	if !ok {
		t.Fatal("no app container in the runtime")
	}
	cs := containerStatusOf(got, "app")
	if cs.GetContainerId() != "skiff-sim://"+c.ID || cs.GetRestartCount() != 0 || !cs.GetReady() || !cs.GetStarted() ||
		cs.GetImage() != "demo:v1" || !strings.Contains(cs.GetImageId(), "@sha256:") || cs.GetState().GetRunning().GetStartedAt() == nil {
		t.Errorf("container status %v", cs)
	}
	if c.PodUID != uid || c.Labels[labelPodUID] != uid || c.Labels[labelContainerName] != "app" {
		t.Errorf("runtime container %+v", c)
	}

	env := c.Env()
	want := map[string]string{
		"GREETING": "hello", "COLOR": "blue", "POD_NAME": "web", "POD_NS": "default", "POD_IP": "10.77.0.2",
		"NODE": nodeName, "GREETING2": "hello world", "CFG_color": "blue", "CFG_size": "L",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["CFG_app.conf"]; !ok {
		t.Errorf("envFrom skipped a valid name: %v", env)
	}
	cfg := c.Config
	if !slices.Equal(cfg.GetCommand(), []string{"/demo"}) || !slices.Equal(cfg.GetArgs(), []string{"--color=blue", "$(LITERAL)"}) || cfg.GetWorkingDir() != "/work" {
		t.Errorf("command %v args %v dir %q", cfg.GetCommand(), cfg.GetArgs(), cfg.GetWorkingDir())
	}
	r := cfg.GetLinux().GetResources()
	if r.GetCpuShares() != 256 || r.GetCpuQuota() != 50000 || r.GetCpuPeriod() != 100000 || r.GetMemoryLimitInBytes() != 128<<20 {
		t.Errorf("resources: %v", r)
	}
	mounts := map[string]*runtimeapi.Mount{}
	for _, m := range cfg.GetMounts() {
		mounts[m.GetContainerPath()] = m
	}
	if m := mounts["/scratch"]; m == nil || m.GetHostPath() != volumeDir(e.cfg.RootDir, uid, pluginEmptyDir, "scratch") || m.GetReadonly() {
		t.Errorf("emptyDir mount %v", m)
	}
	if m := mounts["/etc/app"]; m == nil || !m.GetReadonly() {
		t.Errorf("configMap mount %v", m)
	} else if b, err := os.ReadFile(filepath.Join(m.GetHostPath(), "conf/app.conf")); err != nil || string(b) != "x=1\n" {
		t.Errorf("configMap file: %q, %v", b, err)
	}
	if m := mounts["/host"]; m == nil || m.GetHostPath() != hostDir || !m.GetReadonly() {
		t.Errorf("hostPath mount %v", m)
	}
	if fi, err := os.Stat(hostDir); err != nil || !fi.IsDir() {
		t.Errorf("hostPath DirectoryOrCreate not created: %v", err)
	}
	var sb sim.Sandbox
	for _, s := range e.sim.Sandboxes() {
		sb = s
	}
	if pm := sb.Config.GetPortMappings(); len(pm) != 1 || pm[0].GetHostPort() != 18080 || pm[0].GetContainerPort() != 8080 {
		t.Errorf("port mappings %v", pm)
	}
	if sb.LogDirectory != filepath.Join(e.cfg.PodLogDir, "default_web_"+uid) || sb.Labels["app"] != "web" || sb.Config.GetHostname() != "web" {
		t.Errorf("sandbox %+v", sb)
	}
	if c.LogPath != filepath.Join(sb.LogDirectory, "app/0.log") {
		t.Errorf("log path %q", c.LogPath)
	}
}

func TestInitContainersRunInOrderToCompletion(t *testing.T) {
	e := start(t, sim.Options{})
	// Init containers finish at once; init-b fails the first time.
	var failed atomic.Bool
	e.sim.SetOnStart(func(c sim.Container) (bool, int32) {
		switch c.Name {
		case "init-a":
			return true, 0
		case "init-b":
			if failed.CompareAndSwap(false, true) {
				return true, 1
			}
			return true, 0
		}
		return false, 0
	})
	p := pod("web", ctr("app", "demo:v1"))
	p.Spec.InitContainers = []*corev1.Container{ctr("init-a", "tools:v1"), ctr("init-b", "tools:v1")}
	e.create(p)
	got := e.untilRunning("web")
	var order []string
	for _, c := range e.sim.Containers() {
		order = append(order, fmt.Sprintf("%s/%d", c.Name, c.Attempt))
	}
	if want := []string{"init-a/0", "init-b/0", "init-b/1", "app/0"}; !slices.Equal(order, want) {
		t.Errorf("containers created in order %v, want %v", order, want)
	}
	if cs := containerStatusOf(got, "init-b"); cs.GetState().GetTerminated().GetExitCode() != 0 || cs.GetRestartCount() != 1 || !cs.GetReady() {
		t.Errorf("init-b status %v", cs)
	}
	if condition(got, "Initialized") != "True" {
		t.Errorf("not initialized: %s", brief(got.GetStatus()))
	}

	// Under restartPolicy Never, a failed init container fails the pod.
	e.sim.SetOnStart(func(c sim.Container) (bool, int32) { return c.Name == "init-a", 2 })
	p = pod("never", ctr("app", "demo:v1"))
	p.Spec.RestartPolicy = "Never"
	p.Spec.InitContainers = []*corev1.Container{ctr("init-a", "tools:v1")}
	e.create(p)
	got = e.untilPhase("never", "Failed")
	if cs := containerStatusOf(got, "app"); cs.GetState().GetWaiting().GetReason() != reasonPodInitializing {
		t.Errorf("app status %v", cs)
	}
	if _, ok := e.sim.ContainerOf("default", "never", "app"); ok {
		t.Error("app started after its init container failed")
	}
}

func TestRestartPolicies(t *testing.T) {
	e := start(t, sim.Options{})
	e.sim.SetOnStart(func(c sim.Container) (bool, int32) {
		switch c.PodName {
		case "ok-never":
			return true, 0
		case "fail-never":
			return true, 3
		case "onfailure":
			if c.Attempt == 0 {
				return true, 1
			}
			return true, 0
		}
		return false, 0
	})
	for _, name := range []string{"ok-never", "fail-never"} {
		p := pod(name, ctr("app", "demo:v1"))
		p.Spec.RestartPolicy = "Never"
		e.create(p)
	}
	p := pod("onfailure", ctr("app", "demo:v1"))
	p.Spec.RestartPolicy = "OnFailure"
	e.create(p)

	got := e.untilPhase("ok-never", "Succeeded")
	if cs := containerStatusOf(got, "app"); cs.GetState().GetTerminated().GetReason() != "Completed" || cs.GetRestartCount() != 0 {
		t.Errorf("ok-never: %v", cs)
	}
	if condition(got, "Ready") != "False" {
		t.Errorf("a finished pod is ready")
	}
	got = e.untilPhase("fail-never", "Failed")
	if cs := containerStatusOf(got, "app"); cs.GetState().GetTerminated().GetExitCode() != 3 || cs.GetState().GetTerminated().GetReason() != "Error" {
		t.Errorf("fail-never: %v", cs)
	}
	got = e.untilPhase("onfailure", "Succeeded")
	if cs := containerStatusOf(got, "app"); cs.GetRestartCount() != 1 || cs.GetLastState().GetTerminated().GetExitCode() != 1 {
		t.Errorf("onfailure: %v", cs)
	}
	// Finished pods give their sandbox (and address) back.
	e.until("sandboxes of finished pods stopped", func() (bool, string) {
		for _, s := range e.sim.Sandboxes() {
			if s.Ready() {
				return false, "ready: " + s.Name
			}
		}
		return true, ""
	})
}

func TestCrashLoopBackOffGrows(t *testing.T) {
	clk := workqueue.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := start(t, sim.Options{Clock: clk}, func(c *Config) { c.Clock = clk })
	e.sim.SetOnStart(func(c sim.Container) (bool, int32) { return c.Name == "crash", 1 })
	e.create(pod("loop", ctr("crash", "demo:v1")))

	backOff := func(restarts int32, delay string) {
		t.Helper()
		e.untilPod("loop", fmt.Sprintf("CrashLoopBackOff %s after %d restarts", delay, restarts), func(p *corev1.Pod) (bool, string) {
			cs := containerStatusOf(p, "crash")
			w := cs.GetState().GetWaiting()
			return cs.GetRestartCount() == restarts && w.GetReason() == reasonCrashLoopBackOff &&
				strings.HasPrefix(w.GetMessage(), "back-off "+delay+" restarting failed container=crash pod=loop_default(") &&
				cs.GetLastState().GetTerminated().GetExitCode() == 1 && p.GetStatus().GetPhase() == "Running", ""
		})
	}
	backOff(1, "10s")
	step := func(d time.Duration) {
		t.Helper()
		ctx, cancel := context.WithTimeout(e.ctx, patience)
		defer cancel()
		if err := clk.BlockUntilWaiters(ctx, 1); err != nil {
			t.Fatal("no backoff timer armed")
		}
		clk.Step(d)
	}
	step(10 * time.Second)
	backOff(2, "20s")
	step(20 * time.Second)
	backOff(3, "40s")
	if n := len(e.sim.Containers()); n > 2 {
		t.Errorf("%d containers kept, want the current and the previous", n)
	}
}

func TestLivenessProbeRestartsAndReadinessGatesReady(t *testing.T) {
	e := start(t, sim.Options{})
	var healthy, ready atomic.Bool
	healthy.Store(true)
	e.sim.SetExec(func(c sim.Container, cmd []string) sim.ExecResult {
		ok := true
		switch cmd[0] {
		case "healthy":
			ok = healthy.Load()
		case "ready":
			ok = ready.Load()
		}
		if ok {
			return sim.ExecResult{}
		}
		return sim.ExecResult{ExitCode: 1, Stdout: []byte(cmd[0] + " says no")}
	})
	app := ctr("app", "demo:v1")
	app.LivenessProbe = &corev1.Probe{Exec: &corev1.ExecAction{Command: []string{"healthy"}}, PeriodSeconds: 1, FailureThreshold: 1}
	app.ReadinessProbe = &corev1.Probe{Exec: &corev1.ExecAction{Command: []string{"ready"}}, PeriodSeconds: 1}
	e.create(pod("probed", app))

	got := e.untilPod("probed", "running, not ready", func(p *corev1.Pod) (bool, string) {
		return p.GetStatus().GetPhase() == "Running" && condition(p, "Ready") == "False" && condition(p, "ContainersReady") == "False", ""
	})
	first := containerStatusOf(got, "app").GetContainerId()
	ready.Store(true)
	e.untilRunning("probed")
	ready.Store(false)
	e.untilPod("probed", "not ready again", func(p *corev1.Pod) (bool, string) {
		return condition(p, "Ready") == "False" && !containerStatusOf(p, "app").GetReady(), ""
	})

	healthy.Store(false)
	got = e.untilPod("probed", "restarted by liveness", func(p *corev1.Pod) (bool, string) {
		cs := containerStatusOf(p, "app")
		return cs.GetRestartCount() == 1 && cs.GetState().GetRunning() != nil && cs.GetContainerId() != first, ""
	})
	if ls := containerStatusOf(got, "app").GetLastState().GetTerminated(); ls.GetContainerId() != first {
		t.Errorf("last state %v, want the killed container %s", ls, first)
	}
}

func TestMissingImageErrImagePullThenBackOff(t *testing.T) {
	clk := workqueue.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := start(t, sim.Options{Clock: clk, Missing: []string{"nope:v1"}}, func(c *Config) { c.Clock = clk })
	e.create(pod("bad", ctr("app", "nope:v1")))
	e.untilPod("bad", "ErrImagePull", func(p *corev1.Pod) (bool, string) {
		w := containerStatusOf(p, "app").GetState().GetWaiting()
		return w.GetReason() == reasonErrImagePull && strings.Contains(w.GetMessage(), `Failed to pull image "nope:v1": failed to pull and unpack image "docker.io/library/nope:v1"`) &&
			strings.HasSuffix(w.GetMessage(), "not found") && p.GetStatus().GetPhase() == "Pending", ""
	})
	ctx, cancel := context.WithTimeout(e.ctx, patience)
	defer cancel()
	if err := clk.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	e.untilPod("bad", "ImagePullBackOff", func(p *corev1.Pod) (bool, string) {
		w := containerStatusOf(p, "app").GetState().GetWaiting()
		return w.GetReason() == reasonImagePullBackOff && w.GetMessage() == `Back-off pulling image "nope:v1"`, ""
	})
	// Once the image exists and the backoff ends, the pod runs.
	e.sim.SetImageMissing("nope:v1", false)
	if err := clk.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Step(10 * time.Second)
	e.untilRunning("bad")
}

func TestImagePullPolicies(t *testing.T) {
	e := start(t, sim.Options{Images: []string{"present:v1"}})
	never := ctr("app", "absent:v1")
	never.ImagePullPolicy = "Never"
	e.create(pod("never", never))
	e.untilPod("never", "ErrImageNeverPull", func(p *corev1.Pod) (bool, string) {
		w := containerStatusOf(p, "app").GetState().GetWaiting()
		return w.GetReason() == reasonErrImageNeverPull && w.GetMessage() == `Container image "absent:v1" is not present with pull policy of Never`, ""
	})
	e.create(pod("ifnotpresent", ctr("app", "present:v1")))
	e.untilRunning("ifnotpresent")
	if n := e.sim.Calls("PullImage"); n != 0 {
		t.Errorf("%d pulls of an image present with IfNotPresent", n)
	}
	always := ctr("app", "present:v1")
	always.ImagePullPolicy = "Always"
	e.create(pod("always", always))
	e.untilRunning("always")
	if n := e.sim.Calls("PullImage"); n != 1 {
		t.Errorf("%d pulls with Always, want 1", n)
	}
}

func TestDeletionStopsAndRemovesEverything(t *testing.T) {
	e := start(t, sim.Options{})
	p := pod("doomed", ctr("app", "demo:v1"), ctr("side", "demo:v1"))
	p.Spec.Volumes = []*corev1.Volume{{Name: "scratch", EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	p.Spec.Containers[0].VolumeMounts = []*corev1.VolumeMount{{Name: "scratch", MountPath: "/s"}}
	created := e.create(p)
	e.untilRunning("doomed")
	uid := created.GetMetadata().GetUid()
	if _, err := os.Stat(podDir(e.cfg.RootDir, uid)); err != nil {
		t.Fatalf("pod dir: %v", err)
	}
	if _, err := e.pods.Delete(e.ctx, &metav1.DeleteRequest{Namespace: "default", Name: "doomed", GracePeriodSeconds: proto.Int64(5)}); err != nil {
		t.Fatal(err)
	}
	e.until("pod gone from the API and the runtime", func() (bool, string) {
		if p := e.pod("doomed"); p != nil {
			return false, "pod still there: " + brief(p.GetStatus())
		}
		if n, m := len(e.sim.Sandboxes()), len(e.sim.Containers()); n+m > 0 {
			return false, fmt.Sprintf("%d sandboxes, %d containers left", n, m)
		}
		return true, ""
	})
	for _, dir := range []string{podDir(e.cfg.RootDir, uid), filepath.Join(e.cfg.PodLogDir, "default_doomed_"+uid)} {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", dir, err)
		}
	}
	if n := e.sim.Calls("StopContainer"); n != 2 {
		t.Errorf("%d StopContainer calls, want 2", n)
	}
}

func TestRestartedAgentAdoptsRunningPodsAndCleansUpDeletedOnes(t *testing.T) {
	e := start(t, sim.Options{})
	e.create(pod("keep", ctr("app", "demo:v1")))
	e.create(pod("gone", ctr("app", "demo:v1")))
	before := e.untilRunning("keep")
	e.untilRunning("gone")
	id := containerStatusOf(before, "app").GetContainerId()

	e.stopAgent()
	// Deleted for good while the agent is away.
	if _, err := e.pods.Delete(e.ctx, &metav1.DeleteRequest{Namespace: "default", Name: "gone", GracePeriodSeconds: proto.Int64(0)}); err != nil {
		t.Fatal(err)
	}
	e.until("pod gone", func() (bool, string) { return e.pod("gone") == nil, "" })
	creates := e.sim.Calls("CreateContainer")
	e.startAgent()
	e.until("the deleted pod's containers removed", func() (bool, string) {
		_, ok := e.sim.ContainerOf("default", "gone", "app")
		return !ok, ""
	})
	e.until("the kept pod synced by the new agent", func() (bool, string) {
		return e.agent.synced(before.GetMetadata().GetUid()), ""
	})
	after := e.untilRunning("keep")
	cs := containerStatusOf(after, "app")
	if cs.GetContainerId() != id || cs.GetRestartCount() != 0 {
		t.Errorf("after the restart: %v, want container %s with 0 restarts", cs, id)
	}
	if n := e.sim.Calls("CreateContainer"); n != creates {
		t.Errorf("the restarted agent created %d containers", n-creates)
	}
}

func TestPodReplacedUnderTheSameName(t *testing.T) {
	e := start(t, sim.Options{})
	first := e.create(pod("same", ctr("app", "demo:v1")))
	e.untilRunning("same")
	if _, err := e.pods.Delete(e.ctx, &metav1.DeleteRequest{Namespace: "default", Name: "same", GracePeriodSeconds: proto.Int64(0)}); err != nil {
		t.Fatal(err)
	}
	e.until("first pod gone", func() (bool, string) { return e.pod("same") == nil, "" })
	second := e.create(pod("same", ctr("app", "demo:v1")))
	e.untilPod("same", "second pod running", func(p *corev1.Pod) (bool, string) {
		return p.GetMetadata().GetUid() == second.GetMetadata().GetUid() && p.GetStatus().GetPhase() == "Running", ""
	})
	e.until("only the second pod's sandbox left", func() (bool, string) {
		for _, s := range e.sim.Sandboxes() {
			if s.UID == first.GetMetadata().GetUid() {
				return false, "first pod's sandbox still there"
			}
		}
		return true, ""
	})
}

// readLogs reads a whole Pods.Logs stream through the apiserver.
func readLogs(ctx context.Context, e *env, o *corev1.PodLogOptions) (string, error) {
	s, err := corev1.NewPodsClient(e.api.Conn).Logs(ctx, o)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for {
		c, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), apierrors.FromError(err)
		}
		b.Write(c.GetData())
	}
}

func TestLogsThroughTheAPIServer(t *testing.T) {
	e := start(t, sim.Options{})
	e.create(pod("talk", ctr("app", "demo:v1")))
	e.untilRunning("talk")
	c, _ := e.sim.ContainerOf("default", "talk", "app")
	for _, l := range []string{"one", "two", "three"} {
		if err := e.sim.WriteLog(c.ID, "stdout", l); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(e.ctx, patience)
	defer cancel()
	out, err := readLogs(ctx, e, &corev1.PodLogOptions{Namespace: "default", Name: "talk"})
	if err != nil || out != "one\ntwo\nthree\n" {
		t.Fatalf("logs = %q, %v", out, err)
	}
	out, err = readLogs(ctx, e, &corev1.PodLogOptions{Namespace: "default", Name: "talk", TailLines: proto.Int64(1), Timestamps: true})
	if err != nil || !strings.HasSuffix(out, "Z three\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("tail with timestamps = %q, %v", out, err)
	}
	if _, err := readLogs(ctx, e, &corev1.PodLogOptions{Namespace: "default", Name: "talk", Previous: true}); !apierrors.IsBadRequest(err) ||
		!strings.Contains(err.Error(), `previous terminated container "app" in pod "talk" not found`) {
		t.Fatalf("previous of a first container: %v", err)
	}

	// Follow: lines written later arrive; the stream ends with the container.
	s, err := corev1.NewPodsClient(e.api.Conn).Logs(ctx, &corev1.PodLogOptions{Namespace: "default", Name: "talk", Follow: true, TailLines: proto.Int64(1)})
	if err != nil {
		t.Fatal(err)
	}
	if chunk, err := s.Recv(); err != nil || string(chunk.GetData()) != "three\n" {
		t.Fatalf("first followed chunk = %q, %v", chunk.GetData(), err)
	}
	if err := e.sim.WriteLog(c.ID, "stderr", "four"); err != nil {
		t.Fatal(err)
	}
	chunk, err := s.Recv()
	if err != nil || string(chunk.GetData()) != "four\n" {
		t.Fatalf("followed chunk = %q, %v", chunk.GetData(), err)
	}
	if err := e.sim.WriteLog(c.ID, "stdout", "last words"); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.Exit(c.ID, 0); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	for {
		chunk, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("follow ended with %v", err)
		}
		rest.Write(chunk.GetData())
	}
	if rest.String() != "last words\n" {
		t.Errorf("after follow: %q", rest.String())
	}
	// The restarted container's predecessor is "previous".
	e.untilPod("talk", "restarted", func(p *corev1.Pod) (bool, string) {
		cs := containerStatusOf(p, "app")
		return cs.GetRestartCount() == 1 && cs.GetState().GetRunning() != nil, ""
	})
	out, err = readLogs(ctx, e, &corev1.PodLogOptions{Namespace: "default", Name: "talk", Previous: true})
	if err != nil || out != "one\ntwo\nthree\nfour\nlast words\n" {
		t.Fatalf("previous logs = %q, %v", out, err)
	}
}

func TestHTTPProbesHostNetworkAndStartupProbe(t *testing.T) {
	// The pods' IPs are simulated: the agent's probes dial this test's
	// server instead of 10.66.0.x:8080.
	var ready atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ready" && !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	e := start(t, sim.Options{Subnet: "10.66.0.0/24"}, func(c *Config) {
		c.CrashLoopBackOff = 100 * time.Millisecond
		c.ProbeDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if strings.HasPrefix(addr, "10.66.0.") || strings.HasPrefix(addr, "127.0.0.1:8080") {
				addr = srv.Listener.Addr().String()
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}
	})
	app := ctr("app", "demo:v1")
	app.Ports = []*corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	app.ReadinessProbe = &corev1.Probe{HttpGet: &corev1.HTTPGetAction{Path: "/ready", Port: &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: "http"}}}, PeriodSeconds: 1}
	app.LivenessProbe = &corev1.Probe{TcpSocket: &corev1.TCPSocketAction{Port: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 8080}}}, PeriodSeconds: 1}
	e.create(pod("http", app))
	hostApp := proto.Clone(app).(*corev1.Container)
	host := pod("host", hostApp)
	host.Spec.HostNetwork = true
	e.create(host)

	for _, name := range []string{"http", "host"} {
		e.untilPod(name, "running, not ready", func(p *corev1.Pod) (bool, string) {
			return p.GetStatus().GetPhase() == "Running" && condition(p, "Ready") == "False", ""
		})
	}
	ready.Store(true)
	e.untilRunning("http")
	got := e.untilRunning("host")
	if got.GetStatus().GetPodIp() != "127.0.0.1" {
		t.Errorf("host network pod IP %q, want the node's", got.GetStatus().GetPodIp())
	}
	for _, s := range e.sim.Sandboxes() {
		if s.Name == "host" && (s.IP != "" || s.Config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() != runtimeapi.NamespaceMode_NODE) {
			t.Errorf("host network sandbox %+v", s)
		}
	}

	// A startup probe that fails restarts the container; liveness waits
	// for it.
	var started atomic.Bool
	e.sim.SetExec(func(c sim.Container, cmd []string) sim.ExecResult {
		if cmd[0] == "started" && !started.Load() {
			return sim.ExecResult{ExitCode: 1}
		}
		return sim.ExecResult{}
	})
	slow := ctr("app", "demo:v1")
	slow.StartupProbe = &corev1.Probe{Exec: &corev1.ExecAction{Command: []string{"started"}}, PeriodSeconds: 1, FailureThreshold: 1}
	slow.LivenessProbe = &corev1.Probe{Exec: &corev1.ExecAction{Command: []string{"alive"}}, PeriodSeconds: 1}
	e.create(pod("slow", slow))
	e.untilPod("slow", "restarted by its startup probe", func(p *corev1.Pod) (bool, string) {
		cs := containerStatusOf(p, "app")
		return cs.GetRestartCount() >= 1 && !cs.GetStarted(), ""
	})
	started.Store(true)
	e.untilPod("slow", "started and ready", func(p *corev1.Pod) (bool, string) {
		cs := containerStatusOf(p, "app")
		return cs.GetStarted() && cs.GetReady() && condition(p, "Ready") == "True", ""
	})
}

// setCondition writes, as another component would (the node lifecycle
// controller, a disruption), the condition c into pod default/name's
// status in the API, replacing one of the same type. It returns the
// resourceVersion written.
func (e *env) setCondition(name string, c *corev1.PodCondition) int64 {
	e.t.Helper()
	var written int64
	err := client.RetryOnConflict(e.ctx, client.DefaultRetry, func() error {
		p, err := e.pods.Get(e.ctx, "default", name)
		if err != nil {
			return err
		}
		st := p.GetStatus()
		kept := st.Conditions[:0]
		for _, o := range st.GetConditions() {
			if o.GetType() != c.GetType() {
				kept = append(kept, o)
			}
		}
		st.Conditions = append(kept, c)
		out, err := e.pods.UpdateStatus(e.ctx, p)
		if err == nil {
			written, err = strconv.ParseInt(out.GetMetadata().GetResourceVersion(), 10, 64)
		}
		return err
	})
	if err != nil {
		e.t.Fatalf("writing condition %s of pod %s: %v", c.GetType(), name, err)
	}
	return written
}

// after is true for a pod written after resourceVersion rv.
func after(p *corev1.Pod, rv int64) bool {
	n, _ := strconv.ParseInt(p.GetMetadata().GetResourceVersion(), 10, 64)
	return n > rv
}

// The agent owns its pods' status: when another component changes it in
// the API (the node lifecycle controller marks the pods of a node it saw
// go silent not ready), the agent writes back what it observes, without
// being restarted, and keeps the conditions it does not own.
func TestAgentWritesBackItsPodsStatusChangedByOthers(t *testing.T) {
	e := start(t, sim.Options{})
	e.create(pod("web", ctr("app", "demo:v1")))
	running := e.untilRunning("web")
	e.until("the agent recorded the pod's status", func() (bool, string) {
		return e.agent.synced(running.GetMetadata().GetUid()), ""
	})

	rv := e.setCondition("web", &corev1.PodCondition{Type: "DisruptionTarget", Status: "True", Reason: "TestDisruption"})
	e.untilPod("web", "the other component's condition seen", func(p *corev1.Pod) (bool, string) {
		return after(p, rv-1) && condition(p, "Ready") == "True" && condition(p, "DisruptionTarget") == "True", ""
	})
	rv = e.setCondition("web", &corev1.PodCondition{
		Type: "Ready", Status: "False", Reason: "NodeNotReady", Message: "Node is not ready",
		LastTransitionTime: timestamppb.Now(),
	})
	e.untilPod("web", "Ready again, written back by the agent", func(p *corev1.Pod) (bool, string) {
		return after(p, rv) && condition(p, "Ready") == "True" && condition(p, "DisruptionTarget") == "True", ""
	})
	if cs := containerStatusOf(e.pod("web"), "app"); cs.GetRestartCount() != 0 || cs.GetContainerId() != containerStatusOf(running, "app").GetContainerId() {
		t.Errorf("the container changed: %v", cs)
	}
}
