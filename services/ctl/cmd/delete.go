package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	metav1 "skiff.dev/proto/meta/v1"
)

type deleteFlags struct {
	files          fileFlags
	selector       string
	all            bool
	allNamespaces  bool
	cascade        string
	wait           bool
	timeout        time.Duration
	gracePeriod    int64
	now, force     bool
	ignoreNotFound bool
	output         string
}

// propagation maps --cascade to a propagationPolicy.
func propagation(cascade string) (string, error) {
	switch cascade {
	case "background", "true", "":
		return "Background", nil
	case "foreground":
		return "Foreground", nil
	case "orphan", "false":
		return "Orphan", nil
	}
	return "", fmt.Errorf(`invalid cascade value (%s). Must be "background", "foreground", or "orphan"`, cascade)
}

func (r *root) deleteCmd() *cobra.Command {
	var d deleteFlags
	c := &cobra.Command{
		Use:   "delete ([-f FILENAME] | TYPE [(NAME | -l label | --all)])",
		Short: "Delete resources by file names, stdin, resources and names, or by resources and label selector",
		Long: `Delete resources by name, by the objects of manifests (-f) or by label
selector. --cascade says what happens to the objects they own: background
(default: the garbage collector deletes them after), foreground (they go
first; the owner stays, marked, until they are gone) or orphan (they stay).
By default the command waits until the objects are gone (--wait).`,
		Example: `  skiffctl delete deployment web
  skiffctl delete -f deployment.yaml
  skiffctl delete pods -l app=web --cascade=foreground
  skiffctl delete pod web --now`,
		ValidArgsFunction: completeResourceTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.delete(cmd.Context(), args, &d)
		},
	}
	f := c.Flags()
	f.StringSliceVarP(&d.files.files, "filename", "f", nil, "delete the objects of these manifests")
	f.BoolVarP(&d.files.recursive, "recursive", "R", false, "process the directories of -f recursively")
	f.StringVarP(&d.selector, "selector", "l", "", "label selector")
	f.BoolVar(&d.all, "all", false, "delete every object of the types given, in the namespace")
	f.BoolVarP(&d.allNamespaces, "all-namespaces", "A", false, "with -l or --all, across all namespaces")
	f.StringVar(&d.cascade, "cascade", "background", `"background", "foreground" or "orphan"`)
	f.Lookup("cascade").NoOptDefVal = "background"
	f.BoolVar(&d.wait, "wait", true, "wait until the objects are gone")
	f.DurationVar(&d.timeout, "timeout", 0, "how long to wait (0: a week)")
	f.Int64Var(&d.gracePeriod, "grace-period", -1, "seconds a pod gets to terminate (-1: its own default; 0 with --force: at once)")
	f.BoolVar(&d.now, "now", false, "terminate pods at once (--grace-period=1)")
	f.BoolVar(&d.force, "force", false, "with --grace-period=0, delete pods without waiting for their node")
	f.BoolVar(&d.ignoreNotFound, "ignore-not-found", false, "treat \"not found\" as a successful delete")
	f.StringVarP(&d.output, "output", "o", "", "\"name\": print kind/name only")
	return c
}

func (r *root) delete(ctx context.Context, args []string, d *deleteFlags) error {
	policy, err := propagation(d.cascade)
	if err != nil {
		return err
	}
	if len(args) == 0 && len(d.files.files) == 0 {
		return errors.New("you must provide one or more resources by argument or filename")
	}
	var grace *int64
	switch {
	case d.now && d.gracePeriod >= 0:
		return errors.New("--now and --grace-period cannot be specified together")
	case d.now:
		grace = proto.Int64(1)
	case d.gracePeriod == 0 && !d.force:
		grace = proto.Int64(1) // as kubectl: 0 means "immediately" only with --force
	case d.gracePeriod >= 0:
		grace = proto.Int64(d.gracePeriod)
	}
	if d.force && grace == nil {
		grace = proto.Int64(0)
	}
	refs, err := r.collect(ctx, args, &d.files, d.selector, d.all, d.allNamespaces)
	if err != nil {
		return err
	}
	if len(refs) == 0 {
		ns, _ := r.namespace()
		fmt.Fprintf(r.env.Err, "No resources found in %s namespace.\n", ns)
		return nil
	}
	conn, err := r.connect()
	if err != nil {
		return err
	}
	failed := false
	var waits []objectRef
	var lastRVs []string
	for _, ref := range refs {
		rctx, cancel := r.requestContext(ctx)
		last, err := ref.kind.Client(conn).Delete(rctx, &metav1.DeleteRequest{
			Namespace: ref.namespace, Name: ref.name, PropagationPolicy: policy, GracePeriodSeconds: grace,
		})
		cancel()
		if err != nil {
			if apierrors.IsNotFound(err) && d.ignoreNotFound {
				continue
			}
			fmt.Fprintln(r.env.Err, r.message(err))
			failed = true
			continue
		}
		if d.output == "name" {
			fmt.Fprintln(r.env.Out, ref.kind.Ref(ref.name))
		} else {
			fmt.Fprintf(r.env.Out, "%s %q deleted\n", ref.kind.Qualified(), ref.name)
		}
		waits = append(waits, ref)
		lastRVs = append(lastRVs, last.GetMetadata().GetResourceVersion())
	}
	if d.wait {
		timeout := d.timeout
		if timeout == 0 {
			timeout = 7 * 24 * time.Hour
		}
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		for i, ref := range waits {
			if err := r.waitGone(wctx, ref, lastRVs[i]); err != nil {
				if wctx.Err() != nil && ctx.Err() == nil {
					return fmt.Errorf("timed out waiting for %s to be deleted", ref.kind.Ref(ref.name))
				}
				return err
			}
		}
	}
	if failed {
		return errSilent
	}
	return nil
}

// waitGone waits until an object is deleted: it reads the object and, if
// it is still there, watches it from that revision for its DELETED event.
func (r *root) waitGone(ctx context.Context, ref objectRef, _ string) error {
	conn, err := r.connect()
	if err != nil {
		return err
	}
	cl := ref.kind.Client(conn)
	for {
		obj, err := cl.Get(ctx, ref.namespace, ref.name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		w, err := cl.Watch(ctx, &metav1.ListOptions{Namespace: ref.namespace, FieldSelector: "metadata.name=" + ref.name,
			ResourceVersion: obj.GetMetadata().GetResourceVersion()})
		if err != nil {
			return err
		}
		for {
			typ, _, err := w.Next()
			if err != nil {
				w.Stop()
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if errors.Is(err, io.EOF) || apierrors.IsServiceUnavailable(err) || apierrors.IsExpired(err) {
					break // read it again and watch anew
				}
				return err
			}
			if typ == "DELETED" {
				w.Stop()
				return nil
			}
		}
	}
}
