package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/labels"
	"skiff.dev/internal/object"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func (r *root) logsCmd() *cobra.Command {
	var (
		container  string
		follow     bool
		tail       int64
		timestamps bool
		previous   bool
		since      time.Duration
	)
	c := &cobra.Command{
		Use:   "logs [-f] [-c CONTAINER] (POD | TYPE/NAME)",
		Short: "Print the logs for a container in a pod",
		Long: `Print the log of a container of a pod, through the apiserver (which asks
the node agent of the pod's node). A pod of one container needs no -c.
deployment/NAME and replicaset/NAME pick one of their pods.`,
		Example: `  skiffctl logs web-7d9f8c6b5-x2x4z
  skiffctl logs -f --tail=20 deployment/web -c web
  skiffctl logs --timestamps --since=1h pod/web`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(args) == 2 {
				if container != "" {
					return errors.New("only one of -c or an inline [CONTAINER] arg is allowed")
				}
				container = args[1]
			}
			ns, err := r.namespace()
			if err != nil {
				return err
			}
			pod, err := r.logsPod(ctx, ns, args[0])
			if err != nil {
				return err
			}
			o := &corev1.PodLogOptions{Namespace: ns, Name: pod, Container: container, Follow: follow, Timestamps: timestamps, Previous: previous}
			if cmd.Flags().Changed("tail") && tail >= 0 {
				o.TailLines = proto.Int64(tail)
			}
			if since > 0 {
				o.SinceSeconds = proto.Int64(int64(since.Seconds()))
			}
			conn, err := r.connect()
			if err != nil {
				return err
			}
			stream, err := corev1.NewPodsClient(conn).Logs(ctx, o)
			if err != nil {
				return apierrors.FromError(err)
			}
			for {
				chunk, err := stream.Recv()
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					if ctx.Err() != nil {
						return nil // interrupted while following
					}
					return apierrors.FromError(err)
				}
				if _, err := r.env.Out.Write(chunk.GetData()); err != nil {
					return err
				}
			}
		},
	}
	f := c.Flags()
	f.StringVarP(&container, "container", "c", "", "the container (needed when the pod has several)")
	f.BoolVarP(&follow, "follow", "f", false, "stream the log as it grows")
	f.Int64Var(&tail, "tail", -1, "only the last lines (-1: all)")
	f.BoolVar(&timestamps, "timestamps", false, "prefix each line with its RFC 3339 time")
	f.BoolVarP(&previous, "previous", "p", false, "the log of the previous instance of the container")
	f.DurationVar(&since, "since", 0, "only lines newer than this (5s, 2m, 3h)")
	return c
}

// logsPod resolves POD, pod/NAME, or deployment|replicaset/NAME (one of
// its pods, the oldest running one, as kubectl picks) to a pod name.
func (r *root) logsPod(ctx context.Context, ns, arg string) (string, error) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok {
		return arg, nil
	}
	m, err := r.kinds(ctx)
	if err != nil {
		return "", err
	}
	k, err := m.ForResource(typ)
	if err != nil {
		return "", err
	}
	if k.Kind == "Pod" {
		return name, nil
	}
	if k.Kind != "Deployment" && k.Kind != "ReplicaSet" {
		return "", fmt.Errorf("cannot get the logs of %s: only pods, deployments and replicasets have logs", k.GroupResource())
	}
	obj, err := r.getObject(ctx, k, ns, name)
	if err != nil {
		return "", err
	}
	sel, err := selectorOf(obj)
	if err != nil {
		return "", err
	}
	conn, err := r.connect()
	if err != nil {
		return "", err
	}
	items, err := listAll(ctx, client.Pods(conn), listOptions(ns, sel, ""))
	if err != nil {
		return "", err
	}
	pods := items
	if len(pods) == 0 {
		return "", fmt.Errorf("no pods found for %s", k.Ref(name))
	}
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		ra, rb := a.GetStatus().GetPhase() == "Running", b.GetStatus().GetPhase() == "Running"
		if ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return a.GetMetadata().GetCreationTimestamp().AsTime().Compare(b.GetMetadata().GetCreationTimestamp().AsTime())
	})
	if len(pods) > 1 {
		fmt.Fprintf(r.env.Err, "Found %d pods, using pod/%s\n", len(pods), pods[0].GetMetadata().GetName())
	}
	return pods[0].GetMetadata().GetName(), nil
}

// selectorOf is the label selector of a workload's pods, as a string.
func selectorOf(obj object.Object) (string, error) {
	var sel *metav1.LabelSelector
	switch o := obj.(type) {
	case *appsv1.Deployment:
		sel = o.GetSpec().GetSelector()
	case *appsv1.ReplicaSet:
		sel = o.GetSpec().GetSelector()
	}
	s, err := labels.FromProto(sel)
	if err != nil {
		return "", err
	}
	return s.String(), nil
}
