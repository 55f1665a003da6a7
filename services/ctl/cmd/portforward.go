package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/labels"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// port-forward listens on 127.0.0.1 and carries each accepted connection
// in its own Pods.PortForward stream to the pod's port, through the
// apiserver and the pod's node agent.

// forwardedPort is one [LOCAL:]REMOTE of the command line (remote as
// given: a number, or for svc/NAME a Service port or its name).
type forwardedPort struct {
	local  int
	remote string
}

func parsePortSpecs(specs []string) ([]forwardedPort, error) {
	var out []forwardedPort
	for _, s := range specs {
		local, remote, ok := strings.Cut(s, ":")
		if !ok {
			local, remote = s, s
		}
		var fp forwardedPort
		if local != "" {
			n, err := strconv.Atoi(local)
			if err != nil || n < 0 || n > 65535 {
				return nil, fmt.Errorf("error parsing local port %q: it must be a number from 0 to 65535", local)
			}
			fp.local = n
		}
		if remote == "" {
			return nil, fmt.Errorf("error parsing port %q: no remote port", s)
		}
		fp.remote = remote
		out = append(out, fp)
	}
	return out, nil
}

func (r *root) portForwardCmd() *cobra.Command {
	var address string
	c := &cobra.Command{
		Use:   "port-forward (POD | pod/NAME | deploy/NAME | svc/NAME) [LOCAL_PORT:]REMOTE_PORT [...]",
		Short: "Forward one or more local ports to a pod",
		Long: `Listen on local ports and forward each connection to a port of a pod,
through the apiserver and the pod's node agent (one stream per connection).
deploy/NAME picks a running pod of the Deployment; svc/NAME a running pod
behind the Service's selector, with the Service's port mapped to its
targetPort. ":REMOTE" (or LOCAL 0) picks a free local port.`,
		Example: `  skiffctl port-forward web 8080
  skiffctl port-forward deploy/web 9000:8080
  skiffctl port-forward svc/web :80`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ports, err := parsePortSpecs(args[1:])
			if err != nil {
				return err
			}
			ns, err := r.namespace()
			if err != nil {
				return err
			}
			pod, remote, err := r.forwardTarget(ctx, ns, args[0], ports)
			if err != nil {
				return err
			}
			conn, err := r.connect()
			if err != nil {
				return err
			}
			var listeners []net.Listener
			defer func() {
				for _, l := range listeners {
					l.Close()
				}
			}()
			for i, p := range ports {
				l, err := net.Listen("tcp", net.JoinHostPort(address, strconv.Itoa(p.local)))
				if err != nil {
					return fmt.Errorf("unable to listen on port %d: %w", p.local, err)
				}
				listeners = append(listeners, l)
				fmt.Fprintf(r.env.Out, "Forwarding from %s -> %d\n", l.Addr(), remote[i])
			}
			var wg sync.WaitGroup
			for i, l := range listeners {
				wg.Add(1)
				go func() {
					defer wg.Done()
					local := l.Addr().(*net.TCPAddr).Port
					for {
						c, err := l.Accept()
						if err != nil {
							return
						}
						fmt.Fprintf(r.env.Out, "Handling connection for %d\n", local)
						go func() {
							if err := forwardConn(ctx, conn, c, &corev1.PodPortForwardOptions{Namespace: ns, Name: pod, Port: remote[i]}); err != nil && ctx.Err() == nil {
								fmt.Fprintf(r.env.Err, "error forwarding port %d to pod %s: %v\n", remote[i], pod, err)
							}
						}()
					}
				}()
			}
			<-ctx.Done()
			for _, l := range listeners {
				l.Close()
			}
			wg.Wait()
			return nil
		},
	}
	c.Flags().StringVar(&address, "address", "127.0.0.1", "the local address to listen on")
	return c
}

// forwardConn carries one local connection in one PortForward stream.
func forwardConn(ctx context.Context, conn grpc.ClientConnInterface, c net.Conn, o *corev1.PodPortForwardOptions) error {
	defer c.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := corev1.NewPodsClient(conn).PortForward(ctx)
	if err != nil {
		return apierrors.FromError(err)
	}
	if err := s.Send(&corev1.PortForwardRequest{Options: o}); err != nil && !errors.Is(err, io.EOF) {
		return apierrors.FromError(err)
	}
	// Local -> pod; the local half-close is the stream's.
	go func() {
		buf := make([]byte, stdinChunk)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if s.Send(&corev1.PortForwardRequest{Data: buf[:n]}) != nil {
					return
				}
			}
			if err != nil {
				_ = s.Send(&corev1.PortForwardRequest{CloseWrite: true})
				return
			}
		}
	}()
	// Pod -> local, to the stream's end.
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			return nil
		}
		if err != nil {
			return apierrors.FromError(err)
		}
		if _, err := c.Write(m.GetData()); err != nil {
			return err
		}
	}
}

// forwardTarget resolves the pod and the remote port numbers: a pod name,
// pod/NAME, deploy(ment)/NAME or replicaset/NAME (a running pod), or
// svc/NAME (a running pod behind the selector; Service ports mapped to
// target ports, named ones through the pod's container ports).
func (r *root) forwardTarget(ctx context.Context, ns, arg string, ports []forwardedPort) (string, []int32, error) {
	typ, name, _ := strings.Cut(arg, "/")
	if typ == "svc" || typ == "service" || typ == "services" {
		return r.serviceTarget(ctx, ns, name, ports)
	}
	pod, err := r.logsPod(ctx, ns, arg)
	if err != nil {
		return "", nil, err
	}
	var remote []int32
	var obj *corev1.Pod // read for the first named port
	for _, p := range ports {
		n, err := strconv.Atoi(p.remote)
		if err == nil {
			if n <= 0 || n > 65535 {
				return "", nil, fmt.Errorf("error parsing remote port %q: it must be a number from 1 to 65535", p.remote)
			}
			remote = append(remote, int32(n))
			continue
		}
		// A name: the pod's container port of that name, as kubectl.
		if obj == nil {
			conn, err := r.connect()
			if err != nil {
				return "", nil, err
			}
			if obj, err = client.Pods(conn).Get(ctx, ns, pod); err != nil {
				return "", nil, apierrors.FromError(err)
			}
		}
		cp := containerPort(obj, p.remote)
		if cp == 0 {
			//lint:ignore ST1005 kubectl's words
			return "", nil, fmt.Errorf("Pod '%s' does not have a named port '%s'", pod, p.remote)
		}
		remote = append(remote, cp)
	}
	return pod, remote, nil
}

// containerPort is the number of pod's container port named name, 0 if
// it has none.
func containerPort(pod *corev1.Pod, name string) int32 {
	for _, c := range pod.GetSpec().GetContainers() {
		for _, cp := range c.GetPorts() {
			if cp.GetName() == name {
				return cp.GetContainerPort()
			}
		}
	}
	return 0
}

func (r *root) serviceTarget(ctx context.Context, ns, name string, ports []forwardedPort) (string, []int32, error) {
	conn, err := r.connect()
	if err != nil {
		return "", nil, err
	}
	svc, err := client.Services(conn).Get(ctx, ns, name)
	if err != nil {
		return "", nil, apierrors.FromError(err)
	}
	if len(svc.GetSpec().GetSelector()) == 0 {
		return "", nil, fmt.Errorf("invalid service '%s': Service is defined without a selector", name)
	}
	sel, err := labels.FromProto(&metav1.LabelSelector{MatchLabels: svc.GetSpec().GetSelector()})
	if err != nil {
		return "", nil, err
	}
	pods, err := listAll(ctx, client.Pods(conn), listOptions(ns, sel.String(), ""))
	if err != nil {
		return "", nil, err
	}
	var pod *corev1.Pod
	for _, p := range pods {
		if p.GetStatus().GetPhase() == "Running" && p.GetMetadata().GetDeletionTimestamp() == nil {
			pod = p
			break
		}
	}
	if pod == nil {
		return "", nil, fmt.Errorf("no running pods found for service/%s", name)
	}
	var remote []int32
	for _, fp := range ports {
		var sp *corev1.ServicePort
		for _, p := range svc.GetSpec().GetPorts() {
			if p.GetName() == fp.remote || strconv.Itoa(int(p.GetPort())) == fp.remote {
				sp = p
			}
		}
		if sp == nil {
			return "", nil, fmt.Errorf("service %s does not have a service port %s", name, fp.remote)
		}
		target := sp.GetPort()
		switch {
		case sp.GetTargetPort().GetIntVal() != 0:
			target = sp.GetTargetPort().GetIntVal()
		case sp.GetTargetPort().GetStrVal() != "":
			if target = containerPort(pod, sp.GetTargetPort().GetStrVal()); target == 0 {
				return "", nil, fmt.Errorf("pod %s has no container port named %q (service %s's targetPort)", pod.GetMetadata().GetName(), sp.GetTargetPort().GetStrVal(), name)
			}
		}
		remote = append(remote, target)
	}
	return pod.GetMetadata().GetName(), remote, nil
}
