package cmd

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/object"
)

// labelChanges parses KEY=VALUE and KEY- arguments.
func labelChanges(args []string) (set map[string]string, remove []string, err error) {
	set = map[string]string{}
	for _, a := range args {
		switch {
		case strings.HasSuffix(a, "-") && !strings.Contains(a, "="):
			remove = append(remove, strings.TrimSuffix(a, "-"))
		case strings.Contains(a, "="):
			k, v, _ := strings.Cut(a, "=")
			if k == "" {
				return nil, nil, fmt.Errorf("invalid label spec: %s", a)
			}
			set[k] = v
		default:
			return nil, nil, fmt.Errorf("invalid label spec: %s, at least one label pair is required", a)
		}
	}
	for _, k := range remove {
		if _, ok := set[k]; ok {
			return nil, nil, fmt.Errorf("can not both modify and remove the following label(s) in the same command: %s", k)
		}
	}
	return set, remove, nil
}

// labelCmd is label or annotate: they differ only in the map they change.
func (r *root) labelCmd(which string) *cobra.Command {
	var (
		overwrite       bool
		selector        string
		all, allNS      bool
		list            bool
		resourceVersion string
		ff              fileFlags
	)
	past := map[string]string{"label": "labeled", "annotate": "annotated"}[which]
	field := map[string]string{"label": "labels", "annotate": "annotations"}[which]
	c := &cobra.Command{
		Use:   which + " [--overwrite] (-f FILENAME | TYPE NAME | TYPE/NAME) KEY_1=VAL_1 ... KEY_N=VAL_N [KEY-]",
		Short: "Update the " + field + " on a resource",
		Long: fmt.Sprintf(`Update the %s on a resource: KEY=VALUE sets, KEY- removes. A key that
already has another value needs --overwrite.`, field),
		Example: fmt.Sprintf(`  skiffctl %s pods web tier=frontend
  skiffctl %s --overwrite deploy/web tier=backend
  skiffctl %s pods -l app=web tier-`, which, which, which),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var resArgs, changeArgs []string
			for i, a := range args {
				if strings.Contains(a, "=") || (strings.HasSuffix(a, "-") && i > 0) {
					changeArgs = args[i:]
					break
				}
				resArgs = append(resArgs, a)
			}
			set, remove, err := labelChanges(changeArgs)
			if err != nil {
				return err
			}
			if len(set) == 0 && len(remove) == 0 && !list {
				return fmt.Errorf("at least one %s update is required", strings.TrimSuffix(field, "s"))
			}
			refs, err := r.collect(ctx, resArgs, &ff, selector, all, allNS)
			if err != nil {
				return err
			}
			conn, err := r.connect()
			if err != nil {
				return err
			}
			for _, ref := range refs {
				cl := ref.kind.Client(conn)
				changed := false
				err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
					obj, err := cl.Get(ctx, ref.namespace, ref.name)
					if err != nil {
						return err
					}
					meta := object.Meta(obj)
					m := meta.Labels
					if which == "annotate" {
						m = meta.Annotations
					}
					if list {
						for _, k := range slices.Sorted(maps.Keys(m)) {
							fmt.Fprintf(r.env.Out, "%s=%s\n", k, m[k])
						}
						return nil
					}
					next := maps.Clone(m)
					if next == nil {
						next = map[string]string{}
					}
					for _, k := range slices.Sorted(maps.Keys(set)) {
						if old, ok := next[k]; ok && old != set[k] && !overwrite {
							return fmt.Errorf("'%s' already has a value (%s), and --overwrite is false", k, old)
						}
						next[k] = set[k]
					}
					for _, k := range remove {
						delete(next, k)
					}
					if maps.Equal(next, m) {
						return nil
					}
					upd := proto.Clone(obj).(object.Object)
					um := object.Meta(upd)
					if which == "annotate" {
						um.Annotations = next
					} else {
						um.Labels = next
					}
					if resourceVersion != "" {
						um.ResourceVersion = resourceVersion
					}
					_, err = cl.Update(ctx, upd)
					changed = err == nil
					return err
				})
				if err != nil {
					return err
				}
				if list {
					continue
				}
				if changed {
					fmt.Fprintf(r.env.Out, "%s %s\n", ref.kind.Ref(ref.name), past)
				} else {
					fmt.Fprintf(r.env.Out, "%s not %s\n", ref.kind.Ref(ref.name), past)
				}
			}
			return nil
		},
	}
	f := c.Flags()
	f.BoolVar(&overwrite, "overwrite", false, "change keys that already have a value")
	f.StringVarP(&selector, "selector", "l", "", "label selector")
	f.BoolVar(&all, "all", false, "every object of the type in the namespace")
	f.BoolVarP(&allNS, "all-namespaces", "A", false, "with -l or --all, across all namespaces")
	f.BoolVar(&list, "list", false, "print the current "+field)
	f.StringVar(&resourceVersion, "resource-version", "", "precondition: update only at this resourceVersion")
	f.StringSliceVarP(&ff.files, "filename", "f", nil, "the objects of these manifests")
	return c
}
