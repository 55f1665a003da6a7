package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"skiff.dev/services/ctl/config"
	"skiff.dev/services/ctl/manifest"
	"skiff.dev/services/ctl/printers"
)

func (r *root) configCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "config SUBCOMMAND",
		Short: "Modify the skiffconfig file",
		Long: `Modify the config file (--skiffconfig, else $SKIFFCONFIG, else ~/.skiff/config):
clusters (server address, CA), users (client certificate and key, or
token) and contexts (a cluster, a user and a default namespace).`,
	}
	load := func() (*config.Config, error) { return config.Load(r.configPath()) }
	var raw, minify bool
	view := &cobra.Command{
		Use:   "view",
		Short: "Display the merged config settings (secrets redacted unless --raw)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			if minify {
				if cfg, err = cfg.Minified(); err != nil {
					return err
				}
			}
			if !raw {
				cfg = cfg.Redacted()
			}
			if cfg.APIVersion == "" {
				cfg.APIVersion, cfg.Kind = "v1", "Config"
			}
			b, err := cfg.Marshal()
			if err != nil {
				return err
			}
			// Printed as kubectl prints it: keys sorted, lists unindented.
			tree, err := manifest.ParseYAML(b)
			if err != nil {
				return err
			}
			_, err = r.env.Out.Write(manifest.YAML(tree))
			return err
		},
	}
	view.Flags().BoolVar(&raw, "raw", false, "show secrets (tokens, keys, certificates)")
	view.Flags().BoolVar(&minify, "minify", false, "only what the current context uses")

	useContext := &cobra.Command{
		Use:     "use-context CONTEXT_NAME",
		Aliases: []string{"use"},
		Short:   "Set the current-context in the config file",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			if _, ok := cfg.Context(args[0]); !ok {
				return fmt.Errorf("no context exists with the name: %q", args[0])
			}
			cfg.CurrentContext = args[0]
			if err := cfg.Save(r.configPath()); err != nil {
				return err
			}
			fmt.Fprintf(r.env.Out, "Switched to context %q.\n", args[0])
			return nil
		},
	}

	var ctxCluster, ctxUser, ctxNamespace string
	var current bool
	setContext := &cobra.Command{
		Use:   "set-context [NAME | --current] [--cluster=cluster] [--user=user] [--namespace=namespace]",
		Short: "Set a context entry in the config file",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			name := ""
			switch {
			case current && len(args) > 0:
				return errors.New("you cannot specify both a context name and --current")
			case current:
				if cfg.CurrentContext == "" {
					return errors.New("no current context is set")
				}
				name = cfg.CurrentContext
			case len(args) == 1:
				name = args[0]
			default:
				return errors.New("you must specify a non-empty context name or --current")
			}
			ns := ctxNamespace
			if ns == "" {
				ns = r.flags.overrides.Namespace
			}
			created := cfg.SetContext(name, firstOf(ctxCluster, r.flags.overrides.Cluster), firstOf(ctxUser, r.flags.overrides.User), ns)
			if err := cfg.Save(r.configPath()); err != nil {
				return err
			}
			if created {
				fmt.Fprintf(r.env.Out, "Context %q created.\n", name)
			} else {
				fmt.Fprintf(r.env.Out, "Context %q modified.\n", name)
			}
			return nil
		},
	}
	setContext.Flags().StringVar(&ctxCluster, "cluster", "", "the context's cluster")
	setContext.Flags().StringVar(&ctxUser, "user", "", "the context's user")
	setContext.Flags().StringVar(&ctxNamespace, "namespace", "", "the context's default namespace")
	setContext.Flags().BoolVar(&current, "current", false, "modify the current context")

	var server, ca, serverName string
	setCluster := &cobra.Command{
		Use:   "set-cluster NAME [--server=host:port] [--certificate-authority=path]",
		Short: "Set a cluster entry in the config file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			srv := firstOf(server, r.flags.overrides.Server)
			created := cfg.SetCluster(args[0], func(c *config.Cluster) {
				if srv != "" {
					c.Server = srv
				}
				if ca != "" {
					c.CertificateAuthority = ca
				}
				if serverName != "" {
					c.TLSServerName = serverName
				}
			})
			if err := cfg.Save(r.configPath()); err != nil {
				return err
			}
			fmt.Fprintf(r.env.Out, "Cluster %q %s.\n", args[0], map[bool]string{true: "set", false: "set"}[created])
			return nil
		},
	}
	setCluster.Flags().StringVar(&server, "server", "", "the apiserver's address")
	setCluster.Flags().StringVar(&ca, "certificate-authority", "", "path to the CA certificate")
	setCluster.Flags().StringVar(&serverName, "tls-server-name", "", "server name to verify the certificate against")

	var token, cert, key string
	setCredentials := &cobra.Command{
		Use:   "set-credentials NAME [--token=bearer_token] [--client-certificate=path --client-key=path]",
		Short: "Set a user entry in the config file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			tok := firstOf(token, r.flags.overrides.Token)
			cfg.SetUser(args[0], func(u *config.User) {
				if tok != "" {
					u.Token = tok
				}
				if cert != "" {
					u.ClientCertificate = cert
				}
				if key != "" {
					u.ClientKey = key
				}
			})
			if err := cfg.Save(r.configPath()); err != nil {
				return err
			}
			fmt.Fprintf(r.env.Out, "User %q set.\n", args[0])
			return nil
		},
	}
	setCredentials.Flags().StringVar(&token, "token", "", "bearer token")
	setCredentials.Flags().StringVar(&cert, "client-certificate", "", "path to the client certificate")
	setCredentials.Flags().StringVar(&key, "client-key", "", "path to the client key")

	currentContext := &cobra.Command{
		Use:   "current-context",
		Short: "Display the current-context",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			if cfg.CurrentContext == "" {
				return errors.New("current-context is not set")
			}
			fmt.Fprintln(r.env.Out, cfg.CurrentContext)
			return nil
		},
	}
	getContexts := &cobra.Command{
		Use:   "get-contexts",
		Short: "Describe one or many contexts",
		RunE: func(_ *cobra.Command, args []string) error {
			cfg, err := load()
			if err != nil {
				return err
			}
			t := printers.Table{Header: []string{"CURRENT", "NAME", "CLUSTER", "AUTHINFO", "NAMESPACE"}}
			for _, c := range cfg.Contexts {
				if len(args) > 0 && c.Name != args[0] {
					continue
				}
				cur := ""
				if c.Name == cfg.CurrentContext {
					cur = "*"
				}
				t.Rows = append(t.Rows, []string{cur, c.Name, c.Context.Cluster, c.Context.User, c.Context.Namespace})
			}
			return printers.PrintTable(r.env.Out, t, false)
		},
	}
	c.AddCommand(view, useContext, setContext, setCluster, setCredentials, currentContext, getContexts)
	return c
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
