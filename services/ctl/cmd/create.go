package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/object"
	"skiff.dev/services/ctl/apply"
)

func (r *root) createCmd() *cobra.Command {
	var (
		ff         fileFlags
		pf         printFlags
		dryRun     string
		saveConfig bool
	)
	c := &cobra.Command{
		Use:   "create -f FILENAME",
		Short: "Create resources from a file or from stdin",
		Long: `Create resources from a file or from stdin. Every document is created, in
order: one that cannot be decoded or is invalid, or that the server
refuses, is reported on stderr with its file and index, the others are
created all the same, and the exit code is 1 if any failed. With
--dry-run=client every document is validated first and nothing is shown
as created if one is invalid.`,
		Example: `  skiffctl create -f pod.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(ff.files) == 0 {
				return errors.New("must specify -f")
			}
			mode, err := dryRunMode(dryRun)
			if err != nil {
				return err
			}
			if err := pf.check("", "yaml", "json", "name"); err != nil {
				return err
			}
			ds, err := r.prepareManifests(&ff, false)
			if err != nil {
				return err
			}
			if err := r.servedEach(cmd.Context(), ds); err != nil {
				return err
			}
			if mode != "" {
				if err := r.allValid(ds); err != nil {
					return err
				}
			}
			conn, err := r.connect()
			if err != nil {
				return err
			}
			failed := false
			for _, d := range ds {
				if d.err != nil {
					fmt.Fprintln(r.env.Err, r.message(d.err))
					failed = true
					continue
				}
				p := d.p
				obj := proto.Clone(p.obj).(object.Object)
				if saveConfig {
					_, value := apply.WithLastApplied(p.config)
					m := object.Meta(obj)
					if m.Annotations == nil {
						m.Annotations = map[string]string{}
					}
					m.Annotations[apply.LastAppliedAnnotation] = value
				}
				if mode == "" {
					ctx, cancel := r.requestContext(cmd.Context())
					created, err := p.kind.Client(conn).Create(ctx, obj)
					cancel()
					if err != nil {
						fmt.Fprintln(r.env.Err, r.requestMessage(&requestError{doc: p.doc, verb: "creating", err: err}))
						failed = true
						continue
					}
					obj = created
				} else {
					p.kind.Default(obj)
				}
				if pf.output != "" {
					printStructured(r.env.Out, pf.output, p.kind, []object.Object{obj}, true)
					continue
				}
				suffix := ""
				if mode != "" {
					suffix = " (dry run)"
				}
				fmt.Fprintf(r.env.Out, "%s created%s\n", p.kind.Ref(obj.GetMetadata().GetName()), suffix)
			}
			if failed {
				return errSilent
			}
			return nil
		},
	}
	c.Flags().StringSliceVarP(&ff.files, "filename", "f", nil, "files, directories or - (stdin) to create from")
	c.Flags().BoolVarP(&ff.recursive, "recursive", "R", false, "process the directories of -f recursively")
	c.Flags().StringVar(&ff.validate, "validate", "strict", `"strict" or "false"`)
	c.Flags().Lookup("validate").NoOptDefVal = "strict"
	c.Flags().StringVar(&dryRun, "dry-run", "none", `"none", "client" (show what would be sent; validate every document first and create none if one is invalid) or "server"`)
	c.Flags().Lookup("dry-run").NoOptDefVal = "client"
	c.Flags().BoolVar(&saveConfig, "save-config", false, "record the configuration in the last-applied annotation, for later applies")
	pf.add(c, "yaml|json|name")
	c.AddCommand(r.createSecretCmd(), r.createTokenCmd(), r.createJobCmd())
	return c
}
