package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/object"
	"skiff.dev/internal/printers"
	metav1 "skiff.dev/proto/meta/v1"
	ctlprinters "skiff.dev/services/ctl/printers"
)

type getFlags struct {
	printFlags
	selector, fieldSelector string
	allNamespaces           bool
	watch, watchOnly        bool
	watchEvents             bool
	ignoreNotFound          bool
	sortBy                  string
	files                   fileFlags
}

func (r *root) getCmd() *cobra.Command {
	var g getFlags
	c := &cobra.Command{
		Use:   "get TYPE[.VERSION][.GROUP] [NAME...] | TYPE/NAME...",
		Short: "Display one or many resources",
		Long: `Display one or many resources as a table (with each kind's columns, as
kubectl prints them), or as YAML, JSON, names, a JSONPath template or
custom columns. -w streams changes.`,
		Example: `  skiffctl get pods
  skiffctl get deploy web -o yaml
  skiffctl get pods -l app=web -o wide
  skiffctl get pods -o jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.status.phase}{"\n"}{end}'
  skiffctl get pods -o custom-columns=NAME:.metadata.name,IMAGES:.spec.containers[*].image
  skiffctl get pods --sort-by=.metadata.creationTimestamp
  skiffctl get pods -A --field-selector spec.nodeName=node-1
  skiffctl get pods -w`,
		ValidArgsFunction: completeResourceTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := g.parseFormat("", "wide", "yaml", "json", "name")
			if err != nil {
				return err
			}
			return r.get(cmd.Context(), args, &g, f)
		},
	}
	f := c.Flags()
	g.add(c, "wide|yaml|json|name|jsonpath=TEMPLATE|jsonpath-file=FILE|custom-columns=HEADER:PATH,...|custom-columns-file=FILE")
	g.addTable(c)
	g.addTemplates(c)
	f.StringVar(&g.sortBy, "sort-by", "", "sort lists by this field, a JSONPath (.metadata.name, {.status.replicas})")
	f.StringVarP(&g.selector, "selector", "l", "", "label selector (app=web, tier in (a,b), !canary)")
	f.StringVar(&g.fieldSelector, "field-selector", "", "field selector (metadata.name=x, spec.nodeName=n)")
	f.BoolVarP(&g.allNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	f.BoolVarP(&g.watch, "watch", "w", false, "after listing, watch for changes")
	f.BoolVar(&g.watchOnly, "watch-only", false, "watch for changes without listing first")
	f.BoolVar(&g.watchEvents, "output-watch-events", false, "with --watch, print the event type (ADDED, MODIFIED, DELETED)")
	f.BoolVar(&g.ignoreNotFound, "ignore-not-found", false, "treat \"not found\" as a successful retrieval")
	f.StringSliceVarP(&g.files.files, "filename", "f", nil, "get the objects of these manifests")
	return c
}

func (r *root) get(ctx context.Context, args []string, g *getFlags, f *format) error {
	var refs []resourceRef
	if len(g.files.files) > 0 {
		objs, err := r.collect(ctx, args, &g.files, "", false, false)
		if err != nil {
			return err
		}
		for _, o := range objs {
			refs = append(refs, resourceRef{kind: o.kind, names: []string{o.name}})
		}
	} else {
		var err error
		if refs, err = r.parseResources(ctx, args); err != nil {
			return err
		}
	}
	if g.watch || g.watchOnly {
		if len(refs) != 1 {
			return errors.New("you may only specify a single resource type with --watch")
		}
		return r.watch(ctx, refs[0], g, f)
	}
	failed := false
	var structured []any // the objects' JSON forms, for yaml, json and jsonpath
	anyStructured := false
	single := len(refs) == 1 && len(refs[0].names) == 1
	printed := 0
	for _, ref := range refs {
		ns, err := r.scope(ref.kind, g.allNamespaces)
		if err != nil {
			return err
		}
		var objs []object.Object
		if len(ref.names) == 0 {
			if objs, _, err = r.selectObjects(ctx, ref.kind, ns, g.selector, g.fieldSelector); err != nil {
				return err
			}
		} else {
			for _, name := range ref.names {
				obj, err := r.getObject(ctx, ref.kind, ns, name)
				if err != nil {
					if apierrors.IsNotFound(err) && g.ignoreNotFound {
						continue
					}
					if apierrors.IsNotFound(err) {
						fmt.Fprintln(r.env.Err, r.message(err))
						failed = true
						continue
					}
					return err
				}
				objs = append(objs, obj)
			}
		}
		if g.sortBy != "" && !single && (len(objs) > 1 || f.name != "" && f.name != "wide") {
			// As kubectl: a table of one row is not sorted; a list is, and
			// a field none of its objects has is an error.
			if objs, err = sortObjects(ref.kind, objs, g.sortBy); err != nil {
				return err
			}
		}
		switch {
		case f.structured():
			for _, o := range objs {
				structured = append(structured, encode(ref.kind, o))
			}
			anyStructured = true
			continue
		case f.name == "name":
			printStructured(r.env.Out, "name", ref.kind, objs, false)
			continue
		}
		if len(objs) == 0 {
			continue
		}
		if f.name == "custom-columns" {
			trees := make([]any, len(objs))
			for i, o := range objs {
				trees[i] = encode(ref.kind, o)
			}
			if err := f.printColumns(r.env.Out, trees, g.noHeaders); err != nil {
				return err
			}
			printed++
			continue
		}
		if printed > 0 {
			fmt.Fprintln(r.env.Out)
		}
		printed++
		opts := r.tableOptions(&g.printFlags, g.allNamespaces && ref.kind.Namespaced)
		opts.KeepOrder = g.sortBy != ""
		t := printers.MakeTable(objs, opts)
		if len(refs) > 1 {
			for _, row := range t.Rows { // several kinds: qualify the names
				i := 0
				if opts.WithNamespace {
					i = 1
				}
				if len(row) > i && ref.kind.Kind != "Event" {
					row[i] = ref.kind.Ref(row[i])
				}
			}
		}
		if err := printers.PrintTable(r.env.Out, t, g.noHeaders); err != nil {
			return err
		}
	}
	if anyStructured {
		if err := f.printTrees(r.env.Out, structured, single); err != nil {
			return err
		}
	}
	if printed == 0 && len(structured) == 0 && !failed && f.name != "name" && !single {
		r.noResources(refs, g.allNamespaces)
	}
	if failed {
		return errSilent
	}
	return nil
}

func (r *root) noResources(refs []resourceRef, all bool) {
	if all || !refs[0].kind.Namespaced {
		fmt.Fprintln(r.env.Err, "No resources found")
		return
	}
	ns, _ := r.namespace()
	fmt.Fprintf(r.env.Err, "No resources found in %s namespace.\n", ns)
}

// watch lists (unless --watch-only), then prints every change until ctx
// ends, resuming where it left off when the stream ends or is cut.
func (r *root) watch(ctx context.Context, ref resourceRef, g *getFlags, f *format) error {
	ns, err := r.scope(ref.kind, g.allNamespaces)
	if err != nil {
		return err
	}
	fieldSel := g.fieldSelector
	if len(ref.names) > 1 {
		return errors.New("watch is only supported on individual resources and resource collections, but multiple resources were given")
	}
	if len(ref.names) == 1 {
		sel := "metadata.name=" + ref.names[0]
		if fieldSel != "" {
			sel += "," + fieldSel
		}
		fieldSel = sel
	}
	conn, err := r.connect()
	if err != nil {
		return err
	}
	cl := ref.kind.Client(conn)
	opts := r.tableOptions(&g.printFlags, g.allNamespaces && ref.kind.Namespaced)
	tw := printers.NewTabWriter(r.env.Out)
	headerDone := g.noHeaders
	print := func(typ string, obj object.Object) {
		switch f.name {
		case "yaml", "json", "name":
			printStructured(r.env.Out, f.name, ref.kind, []object.Object{obj}, true)
			if f.name == "yaml" {
				fmt.Fprintln(r.env.Out, "---")
			}
			return
		case "jsonpath":
			if err := f.printTrees(r.env.Out, []any{encode(ref.kind, obj)}, true); err != nil {
				fmt.Fprintln(r.env.Err, "error: "+err.Error())
			}
			return
		case "custom-columns":
			t, err := ctlprinters.CustomColumnsTable(f.columns, []any{encode(ref.kind, obj)})
			if err != nil {
				fmt.Fprintln(r.env.Err, "error: "+err.Error())
				return
			}
			if !headerDone {
				fmt.Fprintln(tw, strings.Join(t.Header, "\t"))
				headerDone = true
			}
			fmt.Fprintln(tw, strings.Join(t.Rows[0], "\t"))
			tw.Flush()
			return
		}
		if !headerDone {
			h := printers.Header(obj, opts)
			if g.watchEvents {
				h = append([]string{"EVENT"}, h...)
			}
			fmt.Fprintln(tw, strings.Join(h, "\t"))
			headerDone = true
		}
		row := printers.Row(obj, opts)
		if g.watchEvents {
			row = append([]string{typ}, row...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
		tw.Flush()
	}
	// List first (also for --watch-only: the watch starts at the list's revision).
	objs, rv, err := cl.List(ctx, listOptions(ns, g.selector, fieldSel))
	if err != nil {
		return err
	}
	if !g.watchOnly {
		if g.sortBy != "" && len(objs) > 1 {
			if objs, err = sortObjects(ref.kind, objs, g.sortBy); err != nil {
				return err
			}
		} else {
			objs = printers.SortEventsIf(objs)
		}
		for _, o := range objs {
			print("ADDED", o)
		}
		if len(objs) == 0 && len(ref.names) == 0 {
			r.noResources([]resourceRef{ref}, g.allNamespaces)
		}
	}
	// after: events at or before this revision were seen already (set when
	// the watch had to start from the current state instead of from rv).
	var after int64
	for {
		w, err := cl.Watch(ctx, &metav1.ListOptions{Namespace: ns, LabelSelector: g.selector, FieldSelector: fieldSel, ResourceVersion: rv, AllowWatchBookmarks: true})
		if apierrors.ReasonForError(err) == apierrors.ReasonTimeout && rv != "0" && ctx.Err() == nil {
			// The server's cache of this kind has not heard of the list's
			// revision yet (nothing of this kind was written since): watch
			// from its current state and skip what the list showed.
			after, _ = strconv.ParseInt(rv, 10, 64)
			rv = "0"
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for {
			typ, obj, err := w.Next()
			if err != nil {
				w.Stop()
				switch {
				case ctx.Err() != nil:
					return nil
				case errors.Is(err, io.EOF), apierrors.IsServiceUnavailable(err):
					// The stream ended or was cut: resume from the last revision seen.
				default:
					return err
				}
				break
			}
			rv = obj.GetMetadata().GetResourceVersion()
			if typ == "BOOKMARK" {
				continue
			}
			if after > 0 {
				if n, err := strconv.ParseInt(rv, 10, 64); err == nil && n <= after {
					continue
				}
			}
			print(typ, obj)
		}
	}
}
