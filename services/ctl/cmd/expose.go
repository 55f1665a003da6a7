package cmd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/object"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// exposeOptions are expose's flags.
type exposeOptions struct {
	name, typ, protocol, selector, clusterIP, targetPort string
	port                                                 int32
	labels                                               map[string]string
}

func (r *root) exposeCmd() *cobra.Command {
	var o exposeOptions
	c := &cobra.Command{
		Use:   "expose (TYPE NAME | TYPE/NAME) [--port=port] [--target-port=number-or-name] [--type=type] [--name=name]",
		Short: "Take a deployment, replica set, pod or service and expose it as a new Service",
		Long: `Expose a deployment, replica set, pod or service as a new Service, as
kubectl expose does: the Service selects the pods by the resource's
selector (a pod's labels), and its ports are --port (else the ports of the
pods' containers, else the exposed Service's) to --target-port (default:
the same port).`,
		Example: `  skiffctl expose deployment/web --port=80 --target-port=8080
  skiffctl expose deployment web --port=80 --type=NodePort --name=web-public`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			refs, err := r.collect(ctx, args, nil, "", false, false)
			if err != nil {
				return err
			}
			if len(refs) != 1 {
				return errors.New("expose takes one resource")
			}
			ref := refs[0]
			conn, err := r.connect()
			if err != nil {
				return err
			}
			obj, err := ref.kind.Client(conn).Get(ctx, ref.namespace, ref.name)
			if err != nil {
				return apierrors.FromError(err)
			}
			svc, err := o.service(obj)
			if err != nil {
				return fmt.Errorf("cannot expose %s: %w", ref.kind.Ref(ref.name), err)
			}
			if _, err := client.Services(conn).Create(ctx, svc); err != nil {
				return apierrors.FromError(err)
			}
			fmt.Fprintf(r.env.Out, "service/%s exposed\n", svc.GetMetadata().GetName())
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.name, "name", "", "the name of the new Service (default: the exposed resource's)")
	f.Int32Var(&o.port, "port", 0, "the port the Service serves on (default: the ports of the exposed resource)")
	f.StringVar(&o.targetPort, "target-port", "", "the port (number or name) on the pods the Service sends to (default: --port)")
	f.StringVar(&o.typ, "type", "", "the Service's type: ClusterIP (default), NodePort, LoadBalancer or ExternalName")
	f.StringVar(&o.protocol, "protocol", "", "the ports' protocol: TCP (default), UDP or SCTP")
	f.StringVarP(&o.selector, "selector", "l", "", "the label selector of the Service (key=value,...; default: the exposed resource's)")
	f.StringVar(&o.clusterIP, "cluster-ip", "", `the cluster IP to ask for ("None" for a headless Service; default: allocated)`)
	f.StringToStringVar(&o.labels, "labels", nil, "labels of the Service (default: the exposed resource's)")
	return c
}

// service builds the Service exposing obj.
func (o *exposeOptions) service(obj object.Object) (*corev1.Service, error) {
	m := obj.GetMetadata()
	var (
		selector map[string]string
		ports    []*corev1.ServicePort
		labels   = m.GetLabels()
	)
	switch x := obj.(type) {
	case *appsv1.Deployment:
		sel, err := matchLabelsOnly(x.GetSpec().GetSelector())
		if err != nil {
			return nil, err
		}
		selector, ports = sel, containerPorts(x.GetSpec().GetTemplate().GetSpec())
	case *appsv1.ReplicaSet:
		sel, err := matchLabelsOnly(x.GetSpec().GetSelector())
		if err != nil {
			return nil, err
		}
		selector, ports = sel, containerPorts(x.GetSpec().GetTemplate().GetSpec())
	case *corev1.Pod:
		selector, ports = x.GetMetadata().GetLabels(), containerPorts(x.GetSpec())
	case *corev1.Service:
		selector = x.GetSpec().GetSelector()
		for _, p := range x.GetSpec().GetPorts() {
			ports = append(ports, &corev1.ServicePort{Name: p.GetName(), Port: p.GetPort(), Protocol: p.GetProtocol(), TargetPort: p.GetTargetPort()})
		}
	default:
		return nil, errors.New("only deployments, replica sets, pods and services can be exposed")
	}
	if o.selector != "" {
		sel, err := parseEqualitySelector(o.selector)
		if err != nil {
			return nil, err
		}
		selector = sel
	}
	if len(selector) == 0 {
		return nil, errors.New("it has no selector (give one with --selector)")
	}
	if o.port != 0 {
		ports = []*corev1.ServicePort{{Port: o.port}}
	}
	if len(ports) == 0 {
		return nil, errors.New("it has no ports to expose (give one with --port)")
	}
	for i, p := range ports {
		if len(ports) > 1 && p.Name == "" {
			p.Name = "port-" + strconv.Itoa(i+1)
		}
		if o.protocol != "" {
			p.Protocol = o.protocol
		}
		if o.targetPort != "" {
			p.TargetPort = intOrStringFlag(o.targetPort)
		}
	}
	if o.labels != nil {
		labels = o.labels
	}
	name := o.name
	if name == "" {
		name = m.GetName()
	}
	return &corev1.Service{
		Metadata: &metav1.ObjectMeta{Namespace: m.GetNamespace(), Name: name, Labels: labels},
		Spec:     &corev1.ServiceSpec{Type: o.typ, Selector: selector, Ports: ports, ClusterIp: o.clusterIP},
	}, nil
}

// matchLabelsOnly is a workload's selector as a Service's: its
// matchLabels (a Service cannot select with expressions).
func matchLabelsOnly(sel *metav1.LabelSelector) (map[string]string, error) {
	if len(sel.GetMatchExpressions()) > 0 {
		return nil, errors.New("its selector has matchExpressions, which a Service cannot express (give one with --selector)")
	}
	return sel.GetMatchLabels(), nil
}

// containerPorts are the Service ports of a pod's container ports: each
// container port, named after it when it has a name.
func containerPorts(spec *corev1.PodSpec) []*corev1.ServicePort {
	var out []*corev1.ServicePort
	for _, c := range spec.GetContainers() {
		for _, p := range c.GetPorts() {
			out = append(out, &corev1.ServicePort{Name: p.GetName(), Port: p.GetContainerPort(), Protocol: p.GetProtocol()})
		}
	}
	return out
}

// parseEqualitySelector reads key=value[,key=value].
func parseEqualitySelector(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--selector %q: want key=value[,key=value...] (a Service selects by equality only)", s)
		}
		out[k] = v
	}
	return out, nil
}

func intOrStringFlag(s string) *metav1.IntOrString {
	if n, err := strconv.Atoi(s); err == nil {
		return &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: int32(n)}}
	}
	return &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: s}}
}
