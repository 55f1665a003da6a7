package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
)

// cordonCmd is cordon (on) or uncordon.
func (r *root) cordonCmd(on bool) *cobra.Command {
	name, verb, short := "cordon", "cordoned", "Mark nodes as unschedulable"
	if !on {
		name, verb, short = "uncordon", "uncordoned", "Mark nodes as schedulable"
	}
	var selector string
	c := &cobra.Command{
		Use:   name + " NODE...",
		Short: short,
		Example: fmt.Sprintf(`  skiffctl %s node-1
  skiffctl %s -l pool=blue`, name, name),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			conn, err := r.connect()
			if err != nil {
				return err
			}
			nodes := client.Nodes(conn)
			names := args
			if selector != "" {
				items, err := listAll(ctx, nodes, listOptions("", selector, ""))
				if err != nil {
					return err
				}
				for _, n := range items {
					names = append(names, n.GetMetadata().GetName())
				}
			}
			if len(names) == 0 {
				return usageError(cmd, "USAGE: %s NODE [flags]", name)
			}
			for _, n := range names {
				changed := false
				err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
					node, err := nodes.Get(ctx, "", n)
					if err != nil {
						return err
					}
					if node.GetSpec().GetUnschedulable() == on {
						changed = false
						return nil
					}
					if node.Spec == nil {
						node.Spec = &corev1.NodeSpec{}
					}
					node.Spec.Unschedulable = on
					_, err = nodes.Update(ctx, node)
					changed = err == nil
					return err
				})
				if err != nil {
					return err
				}
				if changed {
					fmt.Fprintf(r.env.Out, "node/%s %s\n", n, verb)
				} else {
					fmt.Fprintf(r.env.Out, "node/%s already %s\n", n, verb)
				}
			}
			return nil
		},
	}
	c.Flags().StringVarP(&selector, "selector", "l", "", "label selector of the nodes")
	return c
}
