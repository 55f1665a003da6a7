package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	nodev1 "skiff.dev/proto/node/v1"
	"skiff.dev/services/apiserver/registry"
)

// logProxy serves Pods.Logs: it finds the pod's node and streams the log
// from that node's agent (NodeAgent.Logs), so a client needs only the
// apiserver. Connections to agents are kept, one per address.
type logProxy struct {
	pods  *registry.Registry[*corev1.Pod]
	nodes *registry.Registry[*corev1.Node]

	// tls, when set, secures connections to agents: their serving
	// certificate must name their Node and be signed by the cluster CA,
	// and the apiserver shows its client certificate. nil: plain text.
	tls *tls.Config
	// dial are more options of the connections to agents (tracing).
	dial []grpc.DialOption

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn // by node name and address
}

func newLogProxy(pods *registry.Registry[*corev1.Pod], nodes *registry.Registry[*corev1.Node]) *logProxy {
	return &logProxy{pods: pods, nodes: nodes, conns: map[string]*grpc.ClientConn{}}
}

// Logs implements corev1.PodsServer.Logs.
func (p *podsServer) Logs(o *corev1.PodLogOptions, stream grpc.ServerStreamingServer[corev1.LogChunk]) error {
	return p.logs.stream(stream.Context(), o, stream.Send)
}

func (l *logProxy) stream(ctx context.Context, o *corev1.PodLogOptions, send func(*corev1.LogChunk) error) error {
	pod, err := l.pods.Get(ctx, o.GetNamespace(), o.GetName())
	if err != nil {
		return err
	}
	opts, err := resolveContainer(pod, o)
	if err != nil {
		return err
	}
	if pod.GetSpec().GetNodeName() == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s/%s is not scheduled to a node yet: it has no logs", o.GetNamespace(), o.GetName()))
	}
	agent, nodeName, err := l.agentOf(ctx, pod)
	if err != nil {
		return err
	}
	src, err := agent.Logs(ctx, opts)
	if err != nil {
		return agentError(nodeName, err)
	}
	for {
		chunk, err := src.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return agentError(nodeName, err)
		}
		if err := send(chunk); err != nil {
			return err
		}
	}
}

// agentError keeps an agent's API status (a container not found, say) and
// turns a transport failure into ServiceUnavailable naming the node.
func agentError(node string, err error) error {
	if se := apierrors.FromError(err); se.Reason() != apierrors.ReasonUnknown && se.Reason() != apierrors.ReasonServiceUnavailable {
		return se
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("node %q agent: %v", node, err))
}

// resolveContainer fills in the container of a one-container pod and checks
// a named one exists.
func resolveContainer(pod *corev1.Pod, o *corev1.PodLogOptions) (*corev1.PodLogOptions, error) {
	var names []string
	for _, c := range pod.GetSpec().GetInitContainers() {
		names = append(names, c.GetName())
	}
	var main []string
	for _, c := range pod.GetSpec().GetContainers() {
		main = append(main, c.GetName())
	}
	names = append(names, main...)
	for _, ec := range pod.GetSpec().GetEphemeralContainers() {
		names = append(names, ec.GetName())
	}
	out := corev1.PodLogOptions{
		Namespace: o.GetNamespace(), Name: o.GetName(), Container: o.GetContainer(), Follow: o.GetFollow(),
		TailLines: o.TailLines, SinceSeconds: o.SinceSeconds, Timestamps: o.GetTimestamps(), Previous: o.GetPrevious(),
	}
	if out.Container == "" {
		if len(main) != 1 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", o.GetName(), main))
		}
		out.Container = main[0]
		return &out, nil
	}
	for _, n := range names {
		if n == out.Container {
			return &out, nil
		}
	}
	return nil, apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s: choose one of %v", out.Container, o.GetName(), names))
}

// agentAddress is host:port of the node's agent: its InternalIP (else its
// Hostname) and the port it advertises.
func agentAddress(n *corev1.Node) (string, error) {
	port := n.GetStatus().GetDaemonEndpoints().GetKubeletEndpoint().GetPort()
	if port <= 0 {
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("node %q advertises no agent endpoint (status.daemonEndpoints.kubeletEndpoint.Port)", n.GetMetadata().GetName()))
	}
	var host string
	for _, typ := range []string{"InternalIP", "Hostname", "ExternalIP"} {
		for _, a := range n.GetStatus().GetAddresses() {
			if a.GetType() == typ && host == "" {
				host = a.GetAddress()
			}
		}
	}
	if host == "" {
		return "", apierrors.NewServiceUnavailable(fmt.Sprintf("node %q has no address in status.addresses", n.GetMetadata().GetName()))
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port))), nil
}

// agentOf is the NodeAgent client of the pod's node (which must be set),
// over a kept connection, and the node's name.
func (l *logProxy) agentOf(ctx context.Context, pod *corev1.Pod) (nodev1.NodeAgentClient, string, error) {
	nodeName := pod.GetSpec().GetNodeName()
	node, err := l.nodes.Get(ctx, "", nodeName)
	if err != nil {
		return nil, nodeName, apierrors.NewServiceUnavailable(fmt.Sprintf("pod %s/%s: its node %q: %v",
			pod.GetMetadata().GetNamespace(), pod.GetMetadata().GetName(), nodeName, err))
	}
	addr, err := agentAddress(node)
	if err != nil {
		return nil, nodeName, err
	}
	conn, err := l.conn(nodeName, addr)
	if err != nil {
		return nil, nodeName, apierrors.NewServiceUnavailable(fmt.Sprintf("node %q: %v", nodeName, err))
	}
	return nodev1.NewNodeAgentClient(conn), nodeName, nil
}

func (l *logProxy) conn(nodeName, addr string) (*grpc.ClientConn, error) {
	key := nodeName + "@" + addr
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.conns[key]; ok {
		return c, nil
	}
	creds := insecure.NewCredentials()
	if l.tls != nil {
		tc := l.tls.Clone()
		tc.ServerName = nodeName
		creds = credentials.NewTLS(tc)
	}
	// The API's flow-control windows: exec, cp and port-forward stream
	// bulk data from agents (gRPC's default 64 KiB held port-forward at a
	// third of the runtime's own speed).
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(creds)}, client.WindowSizes()...)
	c, err := grpc.NewClient(addr, append(opts, l.dial...)...)
	if err != nil {
		return nil, err
	}
	l.conns[key] = c
	return c, nil
}

// close closes the connections to agents.
func (l *logProxy) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for addr, c := range l.conns {
		c.Close()
		delete(l.conns, addr)
	}
}
