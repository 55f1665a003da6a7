package cmd

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"skiff.dev/internal/manifest"
	"skiff.dev/internal/printers"
	"skiff.dev/services/ctl/config"
)

func (r *root) configCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "config SUBCOMMAND",
		Short: "Modify kubeconfig files",
		Long: `Modify kubeconfig files: clusters (server address, CA), users (client
certificate and key, or token) and contexts (a cluster, a user and a
default namespace).

The files are found as kubectl finds them: --kubeconfig, else the files of
$KUBECONFIG (merged, the first to define a name winning), else
$SKIFFCONFIG, else ~/.skiff/config. A change is written to the file the
changed entry came from; a new entry to --kubeconfig, else to the first
existing file of $KUBECONFIG.`,
	}
	// load returns the merged config and the rules that found it (a
	// missing --kubeconfig file is an empty config here: set-* create it).
	load := func() (*config.Config, config.Rules, error) {
		rules, err := r.configRules()
		if err != nil {
			return nil, rules, err
		}
		cfg, err := rules.LoadOrEmpty()
		return cfg, rules, err
	}
	var raw, minify bool
	view := &cobra.Command{
		Use:   "view",
		Short: "Display the merged config settings (secrets redacted unless --raw)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg, _, err := load()
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
			cfg, rules, err := load()
			if err != nil {
				return err
			}
			if _, ok := cfg.Context(args[0]); !ok {
				return fmt.Errorf("no context exists with the name: %q", args[0])
			}
			if err := rules.Edit(cfg, config.CurrentContextEntry, func(c *config.Config) { c.CurrentContext = args[0] }); err != nil {
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
			cfg, rules, err := load()
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
			var created bool
			if err := rules.Edit(cfg, config.Entry{Section: "contexts", Name: name}, func(c *config.Config) {
				created = c.SetContext(name, firstOf(ctxCluster, r.flags.overrides.Cluster), firstOf(ctxUser, r.flags.overrides.User), ns)
			}); err != nil {
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
			cfg, rules, err := load()
			if err != nil {
				return err
			}
			srv := firstOf(server, r.flags.overrides.Server)
			caPath, err := absPath(ca)
			if err != nil {
				return err
			}
			if err := rules.Edit(cfg, config.Entry{Section: "clusters", Name: args[0]}, func(cfg *config.Config) {
				cfg.SetCluster(args[0], func(c *config.Cluster) {
					if srv != "" {
						c.Server = srv
					}
					if caPath != "" {
						c.CertificateAuthority = caPath
					}
					if serverName != "" {
						c.TLSServerName = serverName
					}
				})
			}); err != nil {
				return err
			}
			fmt.Fprintf(r.env.Out, "Cluster %q set.\n", args[0])
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
			cfg, rules, err := load()
			if err != nil {
				return err
			}
			tok := firstOf(token, r.flags.overrides.Token)
			certPath, err := absPath(cert)
			if err != nil {
				return err
			}
			keyPath, err := absPath(key)
			if err != nil {
				return err
			}
			if err := rules.Edit(cfg, config.Entry{Section: "users", Name: args[0]}, func(cfg *config.Config) {
				cfg.SetUser(args[0], func(u *config.User) {
					if tok != "" {
						u.Token = tok
					}
					if certPath != "" {
						u.ClientCertificate = certPath
					}
					if keyPath != "" {
						u.ClientKey = keyPath
					}
				})
			}); err != nil {
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
			cfg, _, err := load()
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
			cfg, _, err := load()
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

// absPath makes a path given to set-cluster or set-credentials absolute,
// as kubectl does (a relative one would be read relative to the file).
func absPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	return filepath.Abs(p)
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
