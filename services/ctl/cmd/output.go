package cmd

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"skiff.dev/internal/object"
	"skiff.dev/services/ctl/kinds"
	"skiff.dev/services/ctl/manifest"
	"skiff.dev/services/ctl/printers"
)

// printFlags are -o and the table options.
type printFlags struct {
	output       string
	noHeaders    bool
	showLabels   bool
	labelColumns []string
}

func (p *printFlags) add(c *cobra.Command, formats string) {
	c.Flags().StringVarP(&p.output, "output", "o", "", "output format: "+formats)
}

func (p *printFlags) addTable(c *cobra.Command) {
	c.Flags().BoolVar(&p.noHeaders, "no-headers", false, "do not print headers")
	c.Flags().BoolVar(&p.showLabels, "show-labels", false, "show all labels as the last column")
	c.Flags().StringSliceVarP(&p.labelColumns, "label-columns", "L", nil, "labels to show as columns")
}

func (p *printFlags) check(allowed ...string) error {
	for _, a := range allowed {
		if p.output == a {
			return nil
		}
	}
	return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %s", p.output, strings.Join(allowed[1:], ","))
}

// withTypeMeta sets apiVersion and kind (lists do not always carry them).
func withTypeMeta(k *kinds.Kind, obj object.Object) object.Object {
	object.SetTypeMeta(obj, k.GroupVersion(), k.Kind)
	return obj
}

// printStructured prints objects as -o yaml|json|name; single prints one
// object as itself rather than in a List.
func printStructured(w io.Writer, format string, k *kinds.Kind, objs []object.Object, single bool) {
	switch format {
	case "name":
		for _, o := range objs {
			fmt.Fprintln(w, k.Ref(o.GetMetadata().GetName()))
		}
		return
	}
	var v any
	if single && len(objs) == 1 {
		v = manifest.Encode(withTypeMeta(k, objs[0]))
	} else {
		items := make([]any, len(objs))
		for i, o := range objs {
			items[i] = manifest.Encode(withTypeMeta(k, o))
		}
		v = map[string]any{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]any{"resourceVersion": ""}}
	}
	if format == "json" {
		w.Write(manifest.JSON(v))
	} else {
		w.Write(manifest.YAML(v))
	}
}

func (r *root) tableOptions(p *printFlags, withNamespace bool) printers.Options {
	return printers.Options{
		Wide: p.output == "wide", WithNamespace: withNamespace, ShowLabels: p.showLabels,
		NoHeaders: p.noHeaders, LabelColumns: p.labelColumns, Now: r.env.Now(),
	}
}

// newTable is a kubectl table writer for ad-hoc tables.
func newTable(w io.Writer) *tabwriter.Writer { return printers.NewTabWriter(w) }
