package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/manifest"
	"skiff.dev/internal/object"
	"skiff.dev/services/ctl/apply"
)

// errServerDryRun is the answer to --dry-run=server until the apiserver
// has a dry-run mode.
var errServerDryRun = errors.New("server-side dry run is not supported by this apiserver yet (use --dry-run=client)")

func dryRunMode(s string) (string, error) {
	switch s {
	case "", "none", "false":
		return "", nil
	case "client", "true":
		return "client", nil
	case "server":
		return "", errServerDryRun
	}
	return "", fmt.Errorf(`invalid dry-run value (%s). Must be "none", "server", or "client"`, s)
}

func (r *root) applyCmd() *cobra.Command {
	var (
		ff         fileFlags
		pf         printFlags
		dryRun     string
		serverSide bool
		prune      bool
	)
	c := &cobra.Command{
		Use:   "apply -f FILENAME",
		Short: "Apply a configuration to resources by file name or stdin",
		Long: `Apply a configuration to resources by file name or stdin: create what
is absent, update what exists keeping what the server owns (status,
defaults), and remove fields that were applied before but are no longer in
the configuration (the last applied configuration is kept in the
annotation kubectl.kubernetes.io/last-applied-configuration).

Every document is applied, in order, as kubectl does: one that cannot be
decoded or is invalid, or that the server refuses, is reported on stderr
with its file and index, the others are applied all the same, and the exit
code is 1 if any failed. With --dry-run=client every document is
validated first and nothing is shown as applied if one is invalid.`,
		Example: `  skiffctl apply -f deployment.yaml
  skiffctl apply -f ./manifests/ -R
  cat pod.json | skiffctl apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(ff.files) == 0 {
				return errors.New("must specify one of -f and -k")
			}
			if serverSide {
				return errors.New("server-side apply is not supported by this apiserver yet")
			}
			if prune {
				return errors.New("--prune is not supported yet")
			}
			mode, err := dryRunMode(dryRun)
			if err != nil {
				return err
			}
			if err := pf.check("", "yaml", "json", "name"); err != nil {
				return err
			}
			ds, err := r.prepareManifests(&ff, true)
			if err != nil {
				return err
			}
			if err := r.servedEach(cmd.Context(), ds); err != nil {
				return err
			}
			if mode == "client" {
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
				result, obj, err := r.applyOne(cmd.Context(), conn, p, mode)
				if err != nil {
					fmt.Fprintln(r.env.Err, r.requestMessage(err))
					failed = true
					continue
				}
				if pf.output != "" {
					printStructured(r.env.Out, pf.output, p.kind, []object.Object{obj}, true)
					continue
				}
				suffix := ""
				if mode == "client" {
					suffix = " (dry run)"
				}
				fmt.Fprintf(r.env.Out, "%s %s%s\n", p.kind.Ref(p.name()), result, suffix)
			}
			if failed {
				return errSilent
			}
			return nil
		},
	}
	c.Flags().StringSliceVarP(&ff.files, "filename", "f", nil, "files, directories or - (stdin) to apply")
	c.Flags().BoolVarP(&ff.recursive, "recursive", "R", false, "process the directories of -f recursively")
	c.Flags().StringVar(&ff.validate, "validate", "strict", `"strict" (or "true"): refuse unknown fields and invalid objects before sending; "false" (or "ignore"): send as is`)
	c.Flags().Lookup("validate").NoOptDefVal = "strict"
	c.Flags().StringVar(&dryRun, "dry-run", "none", `"none", "client" (show what would be sent; validate every document first and apply none if one is invalid) or "server"`)
	c.Flags().Lookup("dry-run").NoOptDefVal = "client"
	c.Flags().BoolVar(&serverSide, "server-side", false, "apply on the server (not supported yet)")
	c.Flags().BoolVar(&prune, "prune", false, "delete objects not in the configuration (not supported yet)")
	pf.add(c, "yaml|json|name")
	return c
}

// applyOne creates or updates one object; result is "created",
// "configured" or "unchanged". The server's errors are requestErrors.
func (r *root) applyOne(ctx context.Context, conn grpcConn, p *prepared, dryRun string) (string, object.Object, error) {
	fail := func(verb string, err error) error { return &requestError{doc: p.doc, verb: verb, err: err} }
	cl := p.kind.Client(conn)
	modified, _ := apply.WithLastApplied(p.config)
	live, err := cl.Get(ctx, p.namespace(), p.name())
	if apierrors.IsNotFound(err) {
		obj := proto.Clone(p.obj).(object.Object)
		ann := object.Meta(obj)
		if ann.Annotations == nil {
			ann.Annotations = map[string]string{}
		}
		ann.Annotations[apply.LastAppliedAnnotation] = modified["metadata"].(map[string]any)["annotations"].(map[string]any)[apply.LastAppliedAnnotation].(string)
		if dryRun != "" {
			p.kind.Default(obj)
			return "created", obj, nil
		}
		created, err := cl.Create(ctx, obj)
		if err != nil {
			return "", nil, fail("creating", err)
		}
		return "created", created, nil
	}
	if err != nil {
		return "", nil, fail("retrieving current configuration of", err)
	}
	if _, ok := live.GetMetadata().GetAnnotations()[apply.LastAppliedAnnotation]; !ok {
		fmt.Fprintf(r.env.Err, "Warning: resource %s is missing the %s annotation which is required by skiffctl apply. "+
			"skiffctl apply should only be used on resources created declaratively by either skiffctl create --save-config or skiffctl apply. "+
			"The missing annotation will be patched automatically.\n", p.kind.GroupResource()+"/"+p.name(), apply.LastAppliedAnnotation)
	}
	pinned := p.obj.GetMetadata().GetResourceVersion() != ""
	result := "unchanged"
	var out object.Object
	verb := "updating"
	err = client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		if live == nil {
			var err error
			if live, err = cl.Get(ctx, p.namespace(), p.name()); err != nil {
				verb = "retrieving current configuration of"
				return err
			}
		}
		next, err := merged(p, modified, live)
		if err != nil {
			return err
		}
		if proto.Equal(next, live) {
			result, out = "unchanged", live
			return nil
		}
		if dryRun != "" {
			result, out = "configured", next
			return nil
		}
		verb = "updating"
		updated, err := cl.Update(ctx, next)
		if err != nil {
			if apierrors.IsConflict(err) && !pinned {
				live = nil // read it again
			}
			return err
		}
		result, out = "configured", updated
		return nil
	})
	if err != nil {
		return "", nil, fail(verb, err)
	}
	return result, out, nil
}

// merged is the object apply writes: the three-way merge of the last
// applied configuration, the new one and the live object, defaulted as the
// server would (so that an unchanged configuration compares equal).
func merged(p *prepared, modified map[string]any, live object.Object) (object.Object, error) {
	liveMap := manifest.Encode(live)
	original, err := apply.Original(liveMap)
	if err != nil {
		return nil, err
	}
	m := apply.Merge(original, modified, liveMap)
	next := p.kind.New()
	if err := manifest.Decode(m, next, manifest.DecodeOptions{AllowUnknown: true}); err != nil {
		return nil, fmt.Errorf("merging the configuration of %s: %w", p.what(), err)
	}
	p.kind.Default(next)
	return next, nil
}
