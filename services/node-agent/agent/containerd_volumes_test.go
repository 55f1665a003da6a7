package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/crienv"
)

// The persistent volume story on a real containerd: a pod whose claim is
// not bound yet waits (FailedMount); bound to a local-path volume, its
// init container writes a file into the volume, which the runtime
// bind-mounts from the node's local volume root; the pod is deleted, and
// a new pod with the same claim on the same node reads the file through a
// read-only mount it cannot write to; deleting the volume removes its
// directory. Skipped where containerd cannot run (unless CI=true).
func TestContainerdPersistentVolume(t *testing.T) {
	ce := crienv.Start(t)
	root := filepath.Join(t.TempDir(), "volumes")
	e := newEnv(t, ce.Conn, nil, func(c *Config) {
		c.PodLogDir = ce.PodLogDir
		c.RelistPeriod = 200 * time.Millisecond
		c.LocalVolumeRoot = root
	})
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()

	claim := e.createClaim("data")
	writer := demoPod("writer", func() *corev1.Container {
		c := demo(ce, "app")
		c.VolumeMounts = []*corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		return c
	}())
	writer.Spec.InitContainers = []*corev1.Container{{Name: "init", Image: ce.DemoImage("v1"), ImagePullPolicy: "IfNotPresent",
		Command:      []string{"/demo", "write", "/data/greeting", "hello", "from", "writer"},
		VolumeMounts: []*corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}
	writer.Spec.Volumes = []*corev1.Volume{claimVolume("data", "data", false)}
	e.create(writer)

	e.until("FailedMount while the claim is not bound", func() (bool, string) {
		evs := e.eventsOf("writer")
		return slices.ContainsFunc(evs, func(s string) bool {
			return strings.HasPrefix(s, "FailedMount: ") && strings.HasSuffix(s, "error processing PVC default/data: PVC is not bound")
		}), strings.Join(evs, "; ")
	})
	pv := e.provision(claim, nodeName)
	dir := pv.GetSpec().GetLocal().GetPath()

	ip := e.untilRunning("writer").GetStatus().GetPodIp()
	untilBody(ctx, t, fmt.Sprintf("http://%s:8080/file?path=/data/greeting", ip), "the writer's file through its mount",
		func(code int, b string) bool { return code == 200 && b == "hello from writer\n" })
	if b, err := os.ReadFile(filepath.Join(dir, "greeting")); err != nil || string(b) != "hello from writer\n" {
		t.Errorf("the file on the node, in %s: %q %v", dir, b, err)
	}

	if _, err := e.pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "writer"}); err != nil {
		t.Fatal(err)
	}
	e.until("pod writer gone", func() (bool, string) { return e.pod("writer") == nil, "" })

	reader := demoPod("reader", func() *corev1.Container {
		c := demo(ce, "app")
		c.VolumeMounts = []*corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		return c
	}())
	reader.Spec.Volumes = []*corev1.Volume{claimVolume("data", "data", true)}
	e.create(reader)
	got := e.untilRunning("reader")
	untilBody(ctx, t, fmt.Sprintf("http://%s:8080/file?path=/data/greeting", got.GetStatus().GetPodIp()), "the reader reads the writer's file",
		func(code int, b string) bool { return code == 200 && b == "hello from writer\n" })

	t.Run("a read-only claim cannot be written", func(t *testing.T) {
		id := strings.TrimPrefix(containerStatusOf(got, "app").GetContainerId(), "containerd://")
		r, err := ce.Runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"/demo", "write", "/data/other", "x"}, Timeout: 10})
		if err != nil {
			t.Fatal(err)
		}
		if r.GetExitCode() == 0 {
			t.Errorf("wrote into a read-only volume: %s", r.GetStdout())
		}
		if _, err := os.Stat(filepath.Join(dir, "other")); err == nil {
			t.Error("the file written through a read-only mount is on the node")
		}
	})

	if _, err := e.pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "reader"}); err != nil {
		t.Fatal(err)
	}
	e.until("pod reader gone", func() (bool, string) { return e.pod("reader") == nil, "" })
	if _, err := client.PersistentVolumes(e.api.Conn).Delete(ctx, &metav1.DeleteRequest{Name: pv.GetMetadata().GetName()}); err != nil {
		t.Fatal(err)
	}
	e.untilVolumeCleaned(pv)
}
