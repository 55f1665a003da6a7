package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/node-agent/network"
	"skiff.dev/services/node-agent/sim"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/pkg/v3/traceutil.(*Trace).Log"),
	)
}

func TestParseFlags(t *testing.T) {
	o, err := ParseFlags([]string{
		"--node-name", "n1", "--labels", "zone=a,disk=ssd", "--register-with-taints", "dedicated=gpu:NoSchedule,spot:NoExecute",
		"--capacity", "cpu=2,memory=4Gi", "--max-pods", "30", "--crashloop-backoff", "1s",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.NodeName != "n1" || o.Labels["zone"] != "a" || o.Labels["disk"] != "ssd" || o.Capacity["memory"] != "4Gi" || o.MaxPods != 30 || o.CrashLoopBackOff != time.Second {
		t.Errorf("options %+v", o)
	}
	if len(o.Taints) != 2 || o.Taints[0].GetKey() != "dedicated" || o.Taints[0].GetValue() != "gpu" || o.Taints[1].GetKey() != "spot" || o.Taints[1].GetEffect() != "NoExecute" {
		t.Errorf("taints %v", o.Taints)
	}
	if o.RuntimeEndpoint != "unix:///run/containerd/containerd.sock" || o.Listen != "0.0.0.0:10250" {
		t.Errorf("defaults %q %q", o.RuntimeEndpoint, o.Listen)
	}
	if o.ManagePodNetwork || o.CNIConfDir != "/etc/cni/net.d" || o.ClusterCIDR.String() != "10.244.0.0/16" ||
		o.PodNetworkBackend != network.BackendRoutes || o.VXLAN != (network.VXLAN{VNI: 1, Port: 8472}) {
		t.Errorf("pod network defaults: manage %v, conf dir %q, cluster CIDR %v, backend %q, vxlan %+v",
			o.ManagePodNetwork, o.CNIConfDir, o.ClusterCIDR, o.PodNetworkBackend, o.VXLAN)
	}
	o, err = ParseFlags([]string{"--node-name", "n1", "--manage-pod-network", "--cni-conf-dir", "/tmp/net.d", "--cluster-cidr", "10.32.0.0/12",
		"--pod-network-backend", "vxlan", "--vxlan-vni", "42", "--vxlan-port", "4789"}, io.Discard)
	if err != nil || !o.ManagePodNetwork || o.CNIConfDir != "/tmp/net.d" || o.ClusterCIDR.String() != "10.32.0.0/12" ||
		o.PodNetworkBackend != network.BackendVXLAN || o.VXLAN != (network.VXLAN{VNI: 42, Port: 4789}) {
		t.Errorf("pod network flags: %+v, %v", o, err)
	}
	for args, want := range map[string]string{
		"--cluster-cidr=10.244.0.0":     `--cluster-cidr "10.244.0.0": not a CIDR`,
		"--cluster-cidr=10.244.1.0/16":  "did you mean 10.244.0.0/16?",
		"--pod-network-backend=host-gw": `--pod-network-backend: pod network backend "host-gw": want routes or vxlan`,
		"--vxlan-vni=16777216":          "--vxlan-vni 16777216: want 1 to 16777215",
		"--vxlan-port=0":                "--vxlan-port 0: want 1 to 65535",
	} {
		if _, err := ParseFlags([]string{"--node-name", "n1", args}, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", args, err, want)
		}
	}
	for _, bad := range [][]string{
		{"--register-with-taints", "a=b"},
		{"--register-with-taints", "a=b:Sometimes"},
		{"--labels", "novalue"},
		{"extra"},
	} {
		if _, err := ParseFlags(bad, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseFlags([]string{"--help"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
}

// startRuntime starts a simulated CRI runtime, closed when t ends.
func startRuntime(t *testing.T) *sim.Server {
	t.Helper()
	rt, err := sim.Start(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// startProgram runs the program as node-a on rt with args (the apiserver
// and its credentials, say) until ctx ends, waiting for it at the test's
// end, and returns its addresses once it listens.
func startProgram(t *testing.T, ctx context.Context, rt *sim.Server, args ...string) Addrs {
	t.Helper()
	dir := t.TempDir()
	o, err := ParseFlags(append([]string{
		"--node-name", "node-a", "--container-runtime-endpoint", rt.Endpoint(),
		"--listen", "127.0.0.1:0", "--node-ip", "127.0.0.1",
		"--root-dir", filepath.Join(dir, "root"), "--pod-log-dir", filepath.Join(dir, "logs"),
		"--relist-period", "100ms", "--node-status-update-frequency", "100ms",
		// Not the host's packet filter, nor a DNS server on 169.254.20.10.
		"--proxy-mode", "none", "--cluster-dns", "",
	}, args...), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	addrs := make(chan Addrs, 1)
	done := make(chan error, 1)
	go func() { done <- Run(runCtx, o, zap.NewNop(), func(a Addrs) { addrs <- a }) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case a := <-addrs:
		return a
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
		return Addrs{}
	}
}

// runWebPod creates pod default/web (one container, app) on node-a and
// waits until it runs.
func runWebPod(t *testing.T, ctx context.Context, conn grpc.ClientConnInterface) {
	t.Helper()
	pods := client.Pods(conn)
	w, err := pods.Watch(ctx, &metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := pods.Create(ctx, &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:     &corev1.PodSpec{NodeName: "node-a", Containers: []*corev1.Container{{Name: "app", Image: "demo:v1"}}},
	}); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		if ev.Object.GetStatus().GetPhase() == "Running" {
			return
		}
	}
}

// TestProgram runs the whole program over an apiserver and a simulated
// runtime: the node registers, a pod runs, its log streams through the
// apiserver, and the metrics and health endpoints answer.
func TestProgram(t *testing.T) {
	api := apiservertest.Start(t)
	rt := startRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := startProgram(t, ctx, rt, "--server", api.Addr(), "--insecure", "--metrics-listen", "127.0.0.1:0")
	runWebPod(t, ctx, api.Conn)
	n, err := client.Nodes(api.Conn).Get(ctx, "", "node-a")
	if err != nil || n.GetStatus().GetDaemonEndpoints().GetKubeletEndpoint().GetPort() == 0 {
		t.Fatalf("node %v, %v", n, err)
	}
	if want := a.GRPC[strings.LastIndexByte(a.GRPC, ':')+1:]; fmt.Sprint(n.GetStatus().GetDaemonEndpoints().GetKubeletEndpoint().GetPort()) != want {
		t.Errorf("advertised port %d, serving %s", n.GetStatus().GetDaemonEndpoints().GetKubeletEndpoint().GetPort(), a.GRPC)
	}

	c, _ := rt.ContainerOf("default", "web", "app")
	if err := rt.WriteLog(c.ID, "stdout", "hello from web"); err != nil {
		t.Fatal(err)
	}
	s, err := corev1.NewPodsClient(api.Conn).Logs(ctx, &corev1.PodLogOptions{Namespace: "default", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	chunk, err := s.Recv()
	if err != nil || string(chunk.GetData()) != "hello from web\n" {
		t.Fatalf("logs: %q, %v", chunk.GetData(), err)
	}

	body := func(path string) (int, string) {
		resp, err := http.Get("http://" + a.Metrics + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, b := body(path); code != 200 {
			t.Errorf("%s: %d %s", path, code, b)
		}
	}
	// The gauges follow the relist (every 100ms) and the counters the pod's
	// start: scrape until every line shows, or report the missing ones.
	wants := []string{
		"kubelet_pod_start_duration_seconds_count 1",
		`kubelet_runtime_operations_total{operation_type="run_podsandbox"} 1`,
		`kubelet_runtime_operations_duration_seconds_count{operation_type="start_container"} 1`,
		"kubelet_pleg_relist_duration_seconds_count",
		"kubelet_running_pods 1",
		`kubelet_running_containers{container_state="running"} 1`,
		`kubelet_started_containers_total{container_type="container"} 1`,
		// The log stream above, at the agent's NodeAgent service.
		`grpc_server_started_total{grpc_method="Logs",grpc_service="skiff.node.v1.NodeAgent",grpc_type="server_stream"} 1`,
	}
	missing := func(metrics string) []string {
		var out []string
		for _, want := range wants {
			if !strings.Contains(metrics, want) {
				out = append(out, want)
			}
		}
		return out
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		_, metrics := body("/metrics")
		lacks := missing(metrics)
		if len(lacks) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("/metrics lacks %q:\n%s", lacks, metrics)
		case <-tick.C:
		}
	}
}
