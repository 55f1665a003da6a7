package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/crienv"
)

// The stream figures: exec and port-forward through the apiserver and the
// node agent to a container on a real containerd, each beside the same
// measured straight at the container in the same run (exec: the CRI
// streaming URL with remotecommand, as the agent speaks it; port-forward:
// a TCP connection to the pod's IP).
var (
	figExecP99        = Figure{Name: "exec.roundtrip_p99_ms", Unit: "ms", Target: AtMost(5)}
	figExecDirectP99  = Figure{Name: "exec.direct_roundtrip_p99_ms", Unit: "ms"}
	figExecRatio      = Figure{Name: "exec.vs_direct_ratio", Unit: "ratio"}
	figPortForward    = Figure{Name: "portforward.mib_per_s", Unit: "MiB/s", Target: AtLeast(200)}
	figPortForwardDir = Figure{Name: "portforward.direct_mib_per_s", Unit: "MiB/s"}
	figPortForwardRat = Figure{Name: "portforward.vs_direct_ratio", Unit: "ratio"}
	// The runtime's own port-forward (its streaming URL, spoken to
	// directly): the ceiling over portforward.mib_per_s.
	figPortForwardCRI = Figure{Name: "portforward.cri_mib_per_s", Unit: "MiB/s"}
)

const (
	streamNamespace = "stream-bench"
	// streamSamples one-byte echoes are timed after streamWarmup.
	streamSamples, streamWarmup = 500, 50
	// streamBytes are read through port-forward (and directly) per run.
	streamBytes = 256 << 20
)

func streamsScenario() *Scenario {
	return &Scenario{
		Name:    "streams",
		Summary: "a 1-byte echo through an established exec (cat) and 256 MiB read through port-forward, through the apiserver and a node agent on a real containerd (root needed), vs the same straight at the container",
		Figures: []Figure{figExecP99, figExecDirectP99, figExecRatio, figPortForward, figPortForwardDir, figPortForwardRat, figPortForwardCRI},
		Run:     runStreams,
	}
}

func runStreams(ctx context.Context, env *Env, rs *Results) error {
	env.logf("streams: starting a private containerd")
	ce, err := crienv.Launch(ctx, "")
	if err != nil {
		return fmt.Errorf("a containerd for the streams scenario: %w", err)
	}
	defer ce.Close()
	conns, err := env.dial(2) // the agent; the clients
	if err != nil {
		return err
	}
	defer closeAll(conns)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	a, stopAgent, err := startAgent(ctx, env, &wg, ce, conns[0])
	if err != nil {
		return err
	}
	defer stopAgent()
	if err := waitNodeReady(ctx, conns[1], a); err != nil {
		return err
	}

	// The namespace, and its default ServiceAccount (no controller makes
	// it here).
	if _, err := client.Namespaces(conns[1]).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: streamNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := client.ServiceAccounts(conns[1]).Create(ctx, &corev1.ServiceAccount{Metadata: &metav1.ObjectMeta{Namespace: streamNamespace, Name: "default"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	pods := client.Pods(conns[1])
	if _, err := pods.Create(ctx, &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: streamNamespace, Name: "echo"},
		Spec: &corev1.PodSpec{NodeName: benchNodeName, TerminationGracePeriodSeconds: proto.Int64(1), Containers: []*corev1.Container{{
			Name: "app", Image: ce.DemoImage("v1"), ImagePullPolicy: "IfNotPresent"}}},
	}); err != nil {
		return err
	}
	defer func() {
		_, _ = pods.Delete(context.WithoutCancel(ctx), &metav1.DeleteRequest{Namespace: streamNamespace, Name: "echo"})
	}()
	pod, err := waitPodRunning(ctx, conns[1], streamNamespace, "echo")
	if err != nil {
		return err
	}

	// exec: an established `cat`, one byte out and back per sample.
	env.logf("streams: exec round trips through the apiserver")
	viaAPI, err := execRoundTrips(ctx, conns[1], pod)
	if err != nil {
		return fmt.Errorf("exec through the apiserver: %w", err)
	}
	env.logf("streams: exec round trips at the CRI streaming URL")
	direct, err := directRoundTrips(ctx, runtimeapi.NewRuntimeServiceClient(ce.Conn), pod)
	if err != nil {
		return fmt.Errorf("exec at the CRI: %w", err)
	}
	p99, d99 := crienv.Percentile(viaAPI, 0.99), crienv.Percentile(direct, 0.99)
	rs.Add(figExecP99, ms(p99), fmt.Sprintf("%d samples after %d, p50 %.2f ms", len(viaAPI), streamWarmup, ms(crienv.Percentile(viaAPI, 0.5))))
	rs.Add(figExecDirectP99, ms(d99), fmt.Sprintf("p50 %.2f ms", ms(crienv.Percentile(direct, 0.5))))
	rs.Add(figExecRatio, ms(p99)/ms(d99), "p99 through the apiserver and agent / p99 at the CRI streaming URL")

	// port-forward: GET /bytes of the demo server.
	env.logf("streams: %d MiB through port-forward", streamBytes>>20)
	pf, err := portForwardRead(ctx, conns[1], pod)
	if err != nil {
		return fmt.Errorf("port-forward: %w", err)
	}
	dt, err := directRead(ctx, pod.GetStatus().GetPodIp())
	if err != nil {
		return fmt.Errorf("direct TCP: %w", err)
	}
	ct, err := criPortForwardRead(ctx, runtimeapi.NewRuntimeServiceClient(ce.Conn), pod)
	if err != nil {
		return fmt.Errorf("port-forward at the CRI: %w", err)
	}
	mib := float64(streamBytes >> 20)
	rs.Add(figPortForwardCRI, mib/ct.Seconds(), "the runtime's streaming URL, port-forward's SPDY streams spoken directly")
	rs.Add(figPortForward, mib/pf.Seconds(), fmt.Sprintf("one connection, %d MiB in %v", streamBytes>>20, pf.Round(time.Millisecond)))
	rs.Add(figPortForwardDir, mib/dt.Seconds(), "one TCP connection to the pod's IP")
	rs.Add(figPortForwardRat, dt.Seconds()/pf.Seconds(), "port-forward MiB/s / direct MiB/s")
	return nil
}

// waitPodRunning re-reads the pod until it runs with an IP.
func waitPodRunning(ctx context.Context, conn grpc.ClientConnInterface, ns, name string) (*corev1.Pod, error) {
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		p, err := client.Pods(conn).Get(ctx, ns, name)
		if err == nil && p.GetStatus().GetPhase() == "Running" && p.GetStatus().GetPodIp() != "" {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			return nil, fmt.Errorf("pod %s/%s not running after 1m: %v", ns, name, p.GetStatus())
		case <-tick.C:
		}
	}
}

// echoTimes times one-byte round trips: send writes a byte, got delivers
// each echoed read.
func echoTimes(ctx context.Context, send func([]byte) error, got <-chan int) ([]time.Duration, error) {
	var out []time.Duration
	b := []byte{'x'}
	for i := range streamWarmup + streamSamples {
		start := time.Now()
		if err := send(b); err != nil {
			return nil, err
		}
		select {
		case <-got:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
			return nil, errors.New("no echo within 10s")
		}
		if i >= streamWarmup {
			out = append(out, time.Since(start))
		}
	}
	slices.Sort(out)
	return out, nil
}

func execRoundTrips(ctx context.Context, conn grpc.ClientConnInterface, pod *corev1.Pod) ([]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := corev1.NewPodsClient(conn).Exec(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.Send(&corev1.ExecRequest{Options: &corev1.PodExecOptions{Namespace: pod.GetMetadata().GetNamespace(), Name: pod.GetMetadata().GetName(),
		Command: []string{"/demo", "cat"}, Stdin: true, Stdout: true, Stderr: true}}); err != nil {
		return nil, err
	}
	got := make(chan int, 16)
	go func() {
		for {
			m, err := s.Recv()
			if err != nil {
				return
			}
			if n := len(m.GetStdout()); n > 0 {
				got <- n
			}
		}
	}()
	out, err := echoTimes(ctx, func(b []byte) error { return s.Send(&corev1.ExecRequest{Stdin: b}) }, got)
	_ = s.Send(&corev1.ExecRequest{StdinClose: true})
	return out, err
}

// chanWriter delivers each write's length.
type chanWriter chan int

func (c chanWriter) Write(p []byte) (int, error) { c <- len(p); return len(p), nil }

func directRoundTrips(ctx context.Context, rt runtimeapi.RuntimeServiceClient, pod *corev1.Pod) ([]time.Duration, error) {
	cs, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": pod.GetMetadata().GetUid()}}})
	if err != nil {
		return nil, err
	}
	if len(cs.GetContainers()) == 0 {
		return nil, errors.New("no running container of the pod at the runtime")
	}
	resp, err := rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: cs.GetContainers()[0].GetId(), Cmd: []string{"/demo", "cat"}, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(resp.GetUrl())
	if err != nil {
		return nil, err
	}
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, u)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	got := make(chanWriter, 16)
	done := make(chan error, 1)
	go func() {
		done <- ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: pr, Stdout: got, Stderr: io.Discard})
	}()
	out, err := echoTimes(ctx, func(b []byte) error { _, err := pw.Write(b); return err }, got)
	pw.Close()
	if err == nil {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	}
	return out, err
}

const bytesRequest = "GET /bytes?n=%d HTTP/1.0\r\n\r\n"

func portForwardRead(ctx context.Context, conn grpc.ClientConnInterface, pod *corev1.Pod) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	s, err := corev1.NewPodsClient(conn).PortForward(ctx)
	if err != nil {
		return 0, err
	}
	if err := s.Send(&corev1.PortForwardRequest{Options: &corev1.PodPortForwardOptions{Namespace: pod.GetMetadata().GetNamespace(), Name: pod.GetMetadata().GetName(), Port: 8080},
		Data: fmt.Appendf(nil, bytesRequest, streamBytes)}); err != nil {
		return 0, err
	}
	// No half-close: containerd's port-forward gives the other direction
	// one second after one ends. The body is counted past the headers.
	var head []byte
	body := -1
	for body < streamBytes {
		m, err := s.Recv()
		if err != nil {
			return 0, fmt.Errorf("after %d bytes of the body: %w", max(body, 0), err)
		}
		if body >= 0 {
			body += len(m.GetData())
			continue
		}
		head = append(head, m.GetData()...)
		if i := strings.Index(string(head), "\r\n\r\n"); i >= 0 {
			body = len(head) - i - 4
		}
	}
	return time.Since(start), nil
}

func directRead(ctx context.Context, ip string) (time.Duration, error) {
	start := time.Now()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, "8080"))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, bytesRequest, streamBytes); err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, c)
	if err != nil && !strings.Contains(err.Error(), "reset") {
		return 0, err
	}
	if n < streamBytes {
		return 0, fmt.Errorf("read %d bytes, want %d and the headers", n, streamBytes)
	}
	return time.Since(start), nil
}

func criPortForwardRead(ctx context.Context, rt runtimeapi.RuntimeServiceClient, pod *corev1.Pod) (time.Duration, error) {
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": pod.GetMetadata().GetUid()}}})
	if err != nil {
		return 0, err
	}
	if len(sbs.GetItems()) == 0 {
		return 0, errors.New("no ready sandbox of the pod at the runtime")
	}
	start := time.Now()
	resp, err := rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sbs.GetItems()[0].GetId(), Port: []int32{8080}})
	if err != nil {
		return 0, err
	}
	u, err := url.Parse(resp.GetUrl())
	if err != nil {
		return 0, err
	}
	tr, up, err := spdy.RoundTripperFor(&rest.Config{})
	if err != nil {
		return 0, err
	}
	conn, _, err := spdy.NewDialer(up, &http.Client{Transport: tr}, http.MethodPost, u).Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	h := http.Header{}
	h.Set("streamType", "error")
	h.Set("port", "8080")
	h.Set("requestID", "0")
	es, err := conn.CreateStream(h)
	if err != nil {
		return 0, err
	}
	es.Close()
	h.Set("streamType", "data")
	data, err := conn.CreateStream(h)
	if err != nil {
		return 0, err
	}
	if _, err := fmt.Fprintf(data, bytesRequest, streamBytes); err != nil {
		return 0, err
	}
	n, _ := io.Copy(io.Discard, io.LimitReader(data, streamBytes))
	if n < streamBytes {
		return 0, fmt.Errorf("read %d bytes", n)
	}
	return time.Since(start), nil
}
