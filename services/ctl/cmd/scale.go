package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"skiff.dev/internal/apierrors"
	appsv1 "skiff.dev/proto/apps/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func (r *root) scaleCmd() *cobra.Command {
	var (
		replicas, current int32
		resourceVersion   string
		ff                fileFlags
		selector          string
		all               bool
	)
	c := &cobra.Command{
		Use:   "scale --replicas=COUNT (-f FILENAME | TYPE NAME | TYPE/NAME)",
		Short: "Set a new size for a deployment or replica set",
		Long: `Set a new size for a deployment or replica set, through its scale
subresource. --current-replicas and --resource-version are preconditions.`,
		Example: `  skiffctl scale --replicas=3 deployment/web
  skiffctl scale --current-replicas=2 --replicas=3 deployment web`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("replicas") || replicas < 0 {
				return errors.New("the --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0")
			}
			refs, err := r.collect(cmd.Context(), args, &ff, selector, all, false)
			if err != nil {
				return err
			}
			conn, err := r.connect()
			if err != nil {
				return err
			}
			for _, ref := range refs {
				var get func() (*appsv1.Scale, error)
				var update func(*appsv1.Scale) (*appsv1.Scale, error)
				ctx := cmd.Context()
				req := &metav1.GetRequest{Namespace: ref.namespace, Name: ref.name}
				switch {
				case ref.kind.Kind == "Deployment" && ref.kind.Version == "v1":
					dc := appsv1.NewDeploymentsClient(conn)
					get = func() (*appsv1.Scale, error) { return dc.GetScale(ctx, req) }
					update = func(s *appsv1.Scale) (*appsv1.Scale, error) { return dc.UpdateScale(ctx, s) }
				case ref.kind.Kind == "ReplicaSet":
					rc := appsv1.NewReplicaSetsClient(conn)
					get = func() (*appsv1.Scale, error) { return rc.GetScale(ctx, req) }
					update = func(s *appsv1.Scale) (*appsv1.Scale, error) { return rc.UpdateScale(ctx, s) }
				default:
					return fmt.Errorf("cannot scale %s: only deployments and replicasets have a scale subresource", ref.kind.GroupResource())
				}
				s, err := get()
				if err != nil {
					return apierrors.FromError(err)
				}
				if cmd.Flags().Changed("current-replicas") && s.GetSpec().GetReplicas() != current {
					return fmt.Errorf("expected replicas to be %d, was %d", current, s.GetSpec().GetReplicas())
				}
				s.Spec = &appsv1.ScaleSpec{Replicas: replicas}
				if resourceVersion != "" {
					s.Metadata.ResourceVersion = resourceVersion
				} else if !cmd.Flags().Changed("current-replicas") {
					s.Metadata.ResourceVersion = ""
				}
				if _, err := update(s); err != nil {
					return apierrors.FromError(err)
				}
				fmt.Fprintf(r.env.Out, "%s scaled\n", ref.kind.Ref(ref.name))
			}
			return nil
		},
	}
	f := c.Flags()
	f.Int32Var(&replicas, "replicas", 0, "the new number of replicas (required)")
	f.Int32Var(&current, "current-replicas", -1, "precondition: the current number of replicas")
	f.StringVar(&resourceVersion, "resource-version", "", "precondition: the current resourceVersion")
	f.StringSliceVarP(&ff.files, "filename", "f", nil, "scale the objects of these manifests")
	f.StringVarP(&selector, "selector", "l", "", "label selector")
	f.BoolVar(&all, "all", false, "scale every object of the type in the namespace")
	return c
}
