package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/manifest"
	"skiff.dev/internal/printers"
	"skiff.dev/internal/version"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	"skiff.dev/services/ctl/kinds"
)

// clientVersion is skiffctl's version (internal/version), shaped as
// kubectl's clientVersion.
func clientVersion() map[string]any {
	v := version.Get()
	out := map[string]any{"gitVersion": v.GitVersion, "goVersion": v.GoVersion, "platform": v.Platform}
	if v.GitCommit != "" {
		out["gitCommit"] = v.GitCommit
	}
	return out
}

func (r *root) versionCmd() *cobra.Command {
	var (
		clientOnly bool
		output     string
	)
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the client and server version information",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "yaml" && output != "json" {
				return fmt.Errorf("--output must be 'yaml' or 'json'")
			}
			out := map[string]any{"clientVersion": clientVersion()}
			var serverErr error
			if !clientOnly {
				conn, err := r.connect()
				if err != nil {
					return err
				}
				ctx, cancel := r.requestContext(cmd.Context())
				v, err := discoveryv1.NewDiscoveryClient(conn).Version(ctx, &discoveryv1.VersionRequest{})
				cancel()
				if err != nil {
					serverErr = apierrors.FromError(err)
				} else {
					out["serverVersion"] = manifest.Encode(v)
				}
			}
			switch output {
			case "yaml":
				r.env.Out.Write(manifest.YAML(out))
			case "json":
				r.env.Out.Write(manifest.JSON(out))
			default:
				fmt.Fprintf(r.env.Out, "Client Version: %s\n", out["clientVersion"].(map[string]any)["gitVersion"])
				if sv, ok := out["serverVersion"].(map[string]any); ok {
					fmt.Fprintf(r.env.Out, "Server Version: %s\n", sv["gitVersion"])
				}
			}
			return serverErr
		},
	}
	c.Flags().BoolVar(&clientOnly, "client", false, "only the client version (no server needed)")
	c.Flags().StringVarP(&output, "output", "o", "", "yaml or json")
	return c
}

func (r *root) apiResourcesCmd() *cobra.Command {
	var (
		output     string
		namespaced string
		group      string
		noHeaders  bool
	)
	c := &cobra.Command{
		Use:   "api-resources",
		Short: "Print the supported API resources on the server",
		Long: `Print the API resources the server serves (from its Discovery service),
at the preferred version of each group.`,
		Example: `  skiffctl api-resources
  skiffctl api-resources --namespaced=false
  skiffctl api-resources --api-group=apps -o wide`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := r.kinds(cmd.Context())
			if err != nil {
				return err
			}
			if m.Resources == nil {
				return fmt.Errorf("the server does not serve discovery")
			}
			preferred := map[string]string{}
			for _, g := range m.Groups.GetGroups() {
				preferred[g.GetName()] = g.GetPreferredVersion().GetGroupVersion()
			}
			t := printers.Table{Header: []string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}}
			if output == "wide" {
				t.Header = append(t.Header, "VERBS", "SERVICE")
			}
			for _, g := range m.Resources.GetGroups() {
				gv := g.GetGroupVersion()
				grp := ""
				if i := strings.IndexByte(gv, '/'); i >= 0 {
					grp = gv[:i]
				}
				if preferred[grp] != gv || (cmd.Flags().Changed("api-group") && grp != group) {
					continue
				}
				for _, res := range g.GetResources() {
					if namespaced != "" && fmt.Sprint(res.GetNamespaced()) != namespaced {
						continue
					}
					if output == "name" {
						n := res.GetName()
						if grp != "" {
							n += "." + grp
						}
						fmt.Fprintln(r.env.Out, n)
						continue
					}
					row := []string{res.GetName(), strings.Join(res.GetShortNames(), ","), gv, fmt.Sprint(res.GetNamespaced()), res.GetKind()}
					if output == "wide" {
						row = append(row, "["+strings.Join(res.GetVerbs(), " ")+"]", res.GetService())
					}
					t.Rows = append(t.Rows, row)
				}
			}
			if output == "name" {
				return nil
			}
			slices.SortStableFunc(t.Rows, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
			return printers.PrintTable(r.env.Out, t, noHeaders)
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "", "wide or name")
	c.Flags().StringVar(&namespaced, "namespaced", "", "true: only namespaced resources; false: only cluster-scoped ones")
	c.Flags().StringVar(&group, "api-group", "", "only the resources of this group (\"\" for the core group)")
	c.Flags().BoolVar(&noHeaders, "no-headers", false, "do not print headers")
	return c
}

func (r *root) apiVersionsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "api-versions",
		Short: "Print the supported API versions on the server, in the form of \"group/version\"",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := r.kinds(cmd.Context())
			if err != nil {
				return err
			}
			var gvs []string
			for _, g := range m.Groups.GetGroups() {
				for _, v := range g.GetVersions() {
					gvs = append(gvs, v.GetGroupVersion())
				}
			}
			slices.Sort(gvs)
			for _, gv := range gvs {
				fmt.Fprintln(r.env.Out, gv)
			}
			return nil
		},
	}
}

// completeResourceTypes completes the first argument with resource types.
func completeResourceTypes(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, k := range kinds.Static().Kinds() {
		if !slices.Contains(out, k.Resource) {
			out = append(out, k.Resource)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
