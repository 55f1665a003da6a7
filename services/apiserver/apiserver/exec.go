package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/ephemeral"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/apiserver/server"
)

// Pods.Exec, Pods.Attach and Pods.PortForward: the chain has authorized
// the first request (create on pods/exec, pods/attach, pods/portforward,
// with its namespace and name) before the handler reads it. The handler
// checks the pod and container as Kubernetes' streamLocation does, opens
// the same stream on the pod's node agent (the connection Pods.Logs
// uses), answers the client's header (which frees the request's fairness
// seat: the stream is long-running), then relays both ways until either
// side ends, passing the later messages on as they arrived, undecoded.
// Stream data is never logged or audited.

// Exec implements corev1.PodsServer.Exec.
func (p *podsServer) Exec(stream grpc.BidiStreamingServer[corev1.ExecRequest, corev1.ExecResponse]) error {
	return p.logs.execLike(stream, "exec")
}

// Attach implements corev1.PodsServer.Attach.
func (p *podsServer) Attach(stream grpc.BidiStreamingServer[corev1.ExecRequest, corev1.ExecResponse]) error {
	return p.logs.execLike(stream, "attach")
}

func (l *logProxy) execLike(stream grpc.BidiStreamingServer[corev1.ExecRequest, corev1.ExecResponse], op string) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	o := first.GetOptions()
	if o == nil {
		return apierrors.NewBadRequest("the first request of a stream must carry its options")
	}
	if o.GetNamespace() == "" {
		// As the chain authorized it.
		o.Namespace = "default"
	}
	if op == "exec" && len(o.GetCommand()) == 0 {
		return apierrors.NewBadRequest("you must specify at least one command for the container")
	}
	if !o.GetStdin() && !o.GetStdout() && !o.GetStderr() {
		return apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr")
	}
	pod, err := l.pods.Get(ctx, o.GetNamespace(), o.GetName())
	if err != nil {
		return err
	}
	container, err := streamContainer(pod, o.GetContainer())
	if err != nil {
		return err
	}
	if ph := pod.GetStatus().GetPhase(); ph == "Succeeded" || ph == "Failed" {
		if op == "attach" {
			return apierrors.NewBadRequest(fmt.Sprintf("cannot attach a container in a completed pod; current phase is %s", ph))
		}
		return apierrors.NewBadRequest(fmt.Sprintf("cannot exec into a container in a completed pod; current phase is %s", ph))
	}
	if pod.GetSpec().GetNodeName() == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", o.GetName()))
	}
	agent, node, err := l.agentOf(ctx, pod)
	if err != nil {
		return err
	}
	var dst grpc.BidiStreamingClient[corev1.ExecRequest, corev1.ExecResponse]
	if op == "attach" {
		dst, err = agent.Attach(ctx, relayCodec)
	} else {
		dst, err = agent.Exec(ctx, relayCodec)
	}
	if err != nil {
		return agentError(node, err)
	}
	opts := &corev1.PodExecOptions{Namespace: o.GetNamespace(), Name: o.GetName(), Container: container, Command: o.GetCommand(),
		Stdin: o.GetStdin(), Stdout: o.GetStdout(), Stderr: o.GetStderr(), Tty: o.GetTty()}
	if err := dst.Send(&corev1.ExecRequest{Options: opts, Stdin: first.GetStdin(), StdinClose: first.GetStdinClose(), Resize: first.GetResize()}); err != nil {
		return relayError(node, dst, err)
	}
	return relay(ctx, stream, dst, node)
}

// PortForward implements corev1.PodsServer.PortForward.
func (p *podsServer) PortForward(stream grpc.BidiStreamingServer[corev1.PortForwardRequest, corev1.PortForwardResponse]) error {
	l := p.logs
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	o := first.GetOptions()
	if o == nil {
		return apierrors.NewBadRequest("the first request of a stream must carry its options")
	}
	if o.GetPort() <= 0 || o.GetPort() > 65535 {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid port %d: it must be between 1 and 65535", o.GetPort()))
	}
	if o.GetNamespace() == "" {
		o.Namespace = "default" // as the chain authorized it
	}
	pod, err := l.pods.Get(ctx, o.GetNamespace(), o.GetName())
	if err != nil {
		return err
	}
	if ph := pod.GetStatus().GetPhase(); ph != "Running" {
		return apierrors.NewBadRequest(fmt.Sprintf("unable to forward port because pod is not running. Current status=%s", ph))
	}
	if pod.GetSpec().GetNodeName() == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", o.GetName()))
	}
	agent, node, err := l.agentOf(ctx, pod)
	if err != nil {
		return err
	}
	dst, err := agent.PortForward(ctx, relayCodec)
	if err != nil {
		return agentError(node, err)
	}
	if err := dst.Send(&corev1.PortForwardRequest{Options: &corev1.PodPortForwardOptions{Namespace: o.GetNamespace(), Name: o.GetName(), Port: o.GetPort()},
		Data: first.GetData(), CloseWrite: first.GetCloseWrite()}); err != nil {
		return relayError(node, dst, err)
	}
	return relay(ctx, stream, dst, node)
}

// streamContainer is the container a stream names, or the pod's only one.
func streamContainer(pod *corev1.Pod, name string) (string, error) {
	podName := pod.GetMetadata().GetName()
	var main []string
	for _, c := range pod.GetSpec().GetContainers() {
		main = append(main, c.GetName())
	}
	if name == "" {
		switch len(main) {
		case 1:
			return main[0], nil
		case 0:
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", podName))
		default:
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", podName, strings.Join(main, " ")))
		}
	}
	for _, c := range append(pod.GetSpec().GetInitContainers(), pod.GetSpec().GetContainers()...) {
		if c.GetName() == name {
			return name, nil
		}
	}
	if ephemeral.Find(pod.GetSpec(), name) != nil {
		return name, nil // skiffctl debug attaches to one
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, podName))
}

// relayCodec is the agent streams' codec: the first request is encoded,
// the rest passes through as the client sent it (server.Relayed).
var relayCodec = grpc.ForceCodecV2(server.NewCodec())

// relay passes the client's requests to the agent and the agent's
// responses to the client, undecoded (both sides' messages are the same
// types), until the agent's side ends (its status is the call's) or the
// client goes away. The client's header is sent first: the stream is
// established, and long-running.
func relay(ctx context.Context, client grpc.ServerStream, agent grpc.ClientStream, node string) error {
	if err := client.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	go func() {
		for {
			var m server.Relayed
			if err := client.RecvMsg(&m); err != nil {
				// The client's end of sending (io.EOF) is the agent's;
				// a broken client cancels ctx, which ends the agent call.
				if errors.Is(err, io.EOF) {
					_ = agent.CloseSend()
				}
				return
			}
			if err := agent.SendMsg(&m); err != nil {
				m.Free()
				return // the agent's RecvMsg below reports why
			}
		}
	}()
	for {
		var m server.Relayed
		err := agent.RecvMsg(&m)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return agentError(node, err)
		}
		if err := client.SendMsg(&m); err != nil {
			m.Free()
			return err
		}
	}
}

// relayError is the status of an agent stream whose Send failed: its
// Recv tells why.
func relayError[Req, Resp any](node string, agent grpc.BidiStreamingClient[Req, Resp], err error) error {
	if !errors.Is(err, io.EOF) {
		return agentError(node, err)
	}
	for {
		if _, err := agent.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return agentError(node, err)
		}
	}
}
