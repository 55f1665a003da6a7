package printers

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"

	tables "skiff.dev/internal/printers"
	"skiff.dev/services/ctl/printers/jsonpath"
)

// Column is one column of -o custom-columns: a header and the JSONPath
// of its values.
type Column struct {
	Header string
	Path   *jsonpath.Template
}

var relaxedRe = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// RelaxedJSONPath turns the short forms kubectl accepts for a field
// (metadata.name, .metadata.name, {metadata.name}) into a template:
// {.metadata.name}.
func RelaxedJSONPath(expr string) (string, error) {
	if expr == "" {
		return "", nil
	}
	m := relaxedRe.FindStringSubmatch(expr)
	if m == nil {
		return "", fmt.Errorf("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'")
	}
	if m[1] != "" {
		return "{." + m[1] + "}", nil
	}
	return "{." + m[2] + "}", nil
}

func newColumn(header, expr string) (Column, error) {
	tmpl, err := RelaxedJSONPath(expr)
	if err != nil {
		return Column{}, err
	}
	p, err := jsonpath.Parse(tmpl)
	if err != nil {
		return Column{}, fmt.Errorf("column %s: %s: %w", header, expr, err)
	}
	return Column{Header: header, Path: p.AllowMissingKeys(true)}, nil
}

// ParseCustomColumns reads -o custom-columns=HEADER:PATH,HEADER:PATH.
func ParseCustomColumns(spec string) ([]Column, error) {
	if spec == "" {
		return nil, fmt.Errorf("custom-columns format specified but no custom columns given")
	}
	var cols []Column
	for _, part := range strings.Split(spec, ",") {
		header, expr, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
		}
		c, err := newColumn(header, expr)
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, nil
}

// ReadCustomColumns reads -o custom-columns-file: a line of headers and a
// line of paths, separated by white space.
func ReadCustomColumns(r io.Reader) ([]Column, error) {
	s := bufio.NewScanner(r)
	if !s.Scan() {
		return nil, fmt.Errorf("invalid template, missing header line. Expected format is one line of space separated headers, one line of space separated column specs")
	}
	headers := strings.Fields(s.Text())
	if !s.Scan() {
		return nil, fmt.Errorf("invalid template, missing spec line. Expected format is one line of space separated headers, one line of space separated column specs")
	}
	specs := strings.Fields(s.Text())
	if len(headers) != len(specs) {
		return nil, fmt.Errorf("number of headers (%d) and field specifications (%d) don't match", len(headers), len(specs))
	}
	cols := make([]Column, len(headers))
	for i := range headers {
		c, err := newColumn(headers[i], specs[i])
		if err != nil {
			return nil, err
		}
		cols[i] = c
	}
	return cols, nil
}

// CustomColumnsTable is the table of trees (objects' JSON forms) in
// cols: a cell joins its values with ',' (as Go prints them, maps too),
// "<none>" when there are none.
func CustomColumnsTable(cols []Column, trees []any) (tables.Table, error) {
	t := tables.Table{}
	for _, c := range cols {
		t.Header = append(t.Header, c.Header)
	}
	for _, tree := range trees {
		row := make([]string, len(cols))
		for i, c := range cols {
			results, err := c.Path.FindResults(tree)
			if err != nil {
				return tables.Table{}, err
			}
			var vals []string
			for _, vs := range results {
				for _, v := range vs {
					vals = append(vals, fmt.Sprint(v))
				}
			}
			if len(vals) == 0 {
				vals = []string{"<none>"}
			}
			row[i] = strings.Join(vals, ",")
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}
