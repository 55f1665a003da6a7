package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"skiff.dev/internal/manifest"
	"skiff.dev/internal/object"
	"skiff.dev/internal/printers"
	"skiff.dev/services/ctl/kinds"
	ctlprinters "skiff.dev/services/ctl/printers"
	"skiff.dev/services/ctl/printers/jsonpath"
)

// printFlags are -o and the table options.
type printFlags struct {
	output       string
	noHeaders    bool
	showLabels   bool
	labelColumns []string
	// With addTemplates: --template, --allow-missing-template-keys.
	template         string
	allowMissingKeys bool
}

func (p *printFlags) add(c *cobra.Command, formats string) {
	c.Flags().StringVarP(&p.output, "output", "o", "", "output format: "+formats)
}

func (p *printFlags) addTable(c *cobra.Command) {
	c.Flags().BoolVar(&p.noHeaders, "no-headers", false, "do not print headers")
	c.Flags().BoolVar(&p.showLabels, "show-labels", false, "show all labels as the last column")
	c.Flags().StringSliceVarP(&p.labelColumns, "label-columns", "L", nil, "labels to show as columns")
}

// addTemplates adds the flags of -o jsonpath and -o custom-columns.
func (p *printFlags) addTemplates(c *cobra.Command) {
	c.Flags().StringVar(&p.template, "template", "", "the template (or its file) of -o jsonpath|jsonpath-file when -o does not give it")
	c.Flags().BoolVar(&p.allowMissingKeys, "allow-missing-template-keys", true, "a missing field in a jsonpath template prints nothing rather than failing")
}

// format is a parsed -o: its name, and the template of jsonpath or the
// columns of custom-columns.
type format struct {
	name    string // "", wide, yaml, json, name, jsonpath or custom-columns
	tmpl    *jsonpath.Template
	columns []ctlprinters.Column
}

// templateFormats are the -o formats that take an argument (-o NAME=ARG).
var templateFormats = []string{"custom-columns", "custom-columns-file", "jsonpath", "jsonpath-file"}

// parseFormat reads -o: one of allowed, or one of templateFormats.
func (p *printFlags) parseFormat(allowed ...string) (*format, error) {
	name, arg, hasArg := strings.Cut(p.output, "=")
	if !slices.Contains(templateFormats, name) {
		if err := p.check(append(allowed, templateFormats...)...); err != nil {
			return nil, err
		}
		return &format{name: p.output}, nil
	}
	if !hasArg {
		arg = p.template
	}
	readFile := func(path string) (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("error reading --template %s, %v", path, err)
		}
		return string(b), nil
	}
	switch name {
	case "jsonpath", "jsonpath-file":
		if arg == "" {
			return nil, errors.New("template format specified but no template given")
		}
		text := arg
		if name == "jsonpath-file" {
			var err error
			if text, err = readFile(arg); err != nil {
				return nil, err
			}
		}
		t, err := jsonpath.Parse(text)
		if err != nil {
			return nil, fmt.Errorf("error parsing jsonpath %s, %v", text, err)
		}
		return &format{name: "jsonpath", tmpl: t.AllowMissingKeys(p.allowMissingKeys)}, nil
	case "custom-columns":
		cols, err := ctlprinters.ParseCustomColumns(arg)
		if err != nil {
			return nil, err
		}
		return &format{name: "custom-columns", columns: cols}, nil
	default: // custom-columns-file
		if arg == "" {
			return nil, errors.New("custom-columns-file format specified but no custom columns file given")
		}
		text, err := readFile(arg)
		if err != nil {
			return nil, err
		}
		cols, err := ctlprinters.ReadCustomColumns(strings.NewReader(text))
		if err != nil {
			return nil, err
		}
		return &format{name: "custom-columns", columns: cols}, nil
	}
}

// structured says whether objects print as one document (a List of all
// of them) rather than kind by kind.
func (f *format) structured() bool {
	return f.name == "yaml" || f.name == "json" || f.name == "jsonpath"
}

// printTrees prints objects' JSON forms as -o yaml|json|jsonpath; single
// prints one object as itself rather than in a List, as kubectl does.
func (f *format) printTrees(w io.Writer, trees []any, single bool) error {
	var v any
	if single && len(trees) == 1 {
		v = trees[0]
	} else {
		v = listOf(trees)
	}
	switch f.name {
	case "json":
		_, err := w.Write(manifest.JSON(v))
		return err
	case "yaml":
		_, err := w.Write(manifest.YAML(v))
		return err
	}
	if err := f.tmpl.Execute(w, v); err != nil {
		return fmt.Errorf("error executing jsonpath %q: Error executing template: %v. Printing more information for debugging the template:\n"+
			"\ttemplate was:\n\t\t%s\n\tobject given to jsonpath engine was:\n\t\t%s", f.tmpl, err, f.tmpl, manifest.CompactJSON(v))
	}
	return nil
}

// printColumns prints objects' JSON forms as -o custom-columns.
func (f *format) printColumns(w io.Writer, trees []any, noHeaders bool) error {
	t, err := ctlprinters.CustomColumnsTable(f.columns, trees)
	if err != nil {
		return err
	}
	return printers.PrintTable(w, t, noHeaders)
}

// listOf is kubectl's List of several objects.
func listOf(items []any) map[string]any {
	if items == nil {
		items = []any{}
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]any{"resourceVersion": ""}}
}

// encode is obj's JSON form, with its apiVersion and kind.
func encode(k *kinds.Kind, obj object.Object) any {
	return manifest.Encode(withTypeMeta(k, obj))
}

// sortObjects orders objs by --sort-by's field of their JSON forms.
func sortObjects(k *kinds.Kind, objs []object.Object, field string) ([]object.Object, error) {
	trees := make([]any, len(objs))
	for i, o := range objs {
		trees[i] = encode(k, o)
	}
	order, err := ctlprinters.SortOrder(trees, field)
	if err != nil {
		return nil, err
	}
	out := make([]object.Object, len(objs))
	for i, j := range order {
		out[i] = objs[j]
	}
	return out, nil
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
func printStructured(w io.Writer, output string, k *kinds.Kind, objs []object.Object, single bool) {
	switch output {
	case "name":
		for _, o := range objs {
			fmt.Fprintln(w, k.Ref(o.GetMetadata().GetName()))
		}
		return
	}
	trees := make([]any, len(objs))
	for i, o := range objs {
		trees[i] = encode(k, o)
	}
	(&format{name: output}).printTrees(w, trees, single)
}

func (r *root) tableOptions(p *printFlags, withNamespace bool) printers.Options {
	return printers.Options{
		Wide: p.output == "wide", WithNamespace: withNamespace, ShowLabels: p.showLabels,
		NoHeaders: p.noHeaders, LabelColumns: p.labelColumns, Now: r.env.Now(),
	}
}

// newTable is a kubectl table writer for ad-hoc tables.
func newTable(w io.Writer) *tabwriter.Writer { return printers.NewTabWriter(w) }
