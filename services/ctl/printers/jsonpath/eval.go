package jsonpath

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
)

// Template is a parsed JSONPath template.
type Template struct {
	raw              string
	nodes            []node
	allowMissingKeys bool
}

// Parse reads a template. Errors are client-go's ("unclosed action",
// "invalid array index x", ...).
func Parse(text string) (*Template, error) {
	nodes, err := parseTemplate(text)
	if err != nil {
		return nil, err
	}
	if nodes, err = nest(nodes); err != nil {
		return nil, err
	}
	return &Template{raw: text, nodes: nodes}, nil
}

// AllowMissingKeys makes a missing key an empty result rather than an
// error ("x is not found"), as kubectl's --allow-missing-template-keys.
func (t *Template) AllowMissingKeys(allow bool) *Template {
	t.allowMissingKeys = allow
	return t
}

// String is the template's text.
func (t *Template) String() string { return t.raw }

// FindResults evaluates the template on data: one slice of values per
// text or action, in order (a range contributes its body's, once per
// element).
func (t *Template) FindResults(data any) ([][]any, error) {
	return t.find(t.nodes, data)
}

func (t *Template) find(nodes []node, data any) ([][]any, error) {
	var out [][]any
	for _, n := range nodes {
		if r, ok := n.(*rangeNode); ok {
			elems, err := t.eval([]any{data}, r.expr)
			if err != nil {
				return nil, err
			}
			for _, e := range elems {
				sub, err := t.find(r.body, e)
				if err != nil {
					return nil, err
				}
				out = append(out, sub...)
			}
			continue
		}
		vs, err := t.eval([]any{data}, n)
		if err != nil {
			return nil, err
		}
		out = append(out, vs)
	}
	return out, nil
}

// Execute writes the template's text for data.
func (t *Template) Execute(w io.Writer, data any) error {
	results, err := t.FindResults(data)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	for _, vs := range results {
		for i, v := range vs {
			if i > 0 {
				b.WriteByte(' ')
			}
			s, err := Text(v)
			if err != nil {
				return err
			}
			b.WriteString(s)
		}
	}
	_, err = w.Write(b.Bytes())
	return err
}

// Text is how a value prints: maps and lists as compact JSON, the rest
// as Go prints it (strings bare).
func Text(v any) (string, error) {
	switch v.(type) {
	case map[string]any, []any:
		b, err := json.Marshal(v)
		return string(b), err
	}
	return fmt.Sprint(v), nil
}

func (t *Template) eval(in []any, n node) ([]any, error) {
	switch n := n.(type) {
	case *listNode:
		var err error
		cur := in
		for _, step := range n.nodes {
			if cur, err = t.eval(cur, step); err != nil {
				return nil, err
			}
		}
		return cur, nil
	case *textNode:
		return []any{n.text}, nil
	case *intNode:
		return repeat(in, int64(n.value)), nil
	case *floatNode:
		return repeat(in, n.value), nil
	case *boolNode:
		return repeat(in, n.value), nil
	case *fieldNode:
		return t.evalField(in, n)
	case *arrayNode:
		return evalArray(in, n)
	case *filterNode:
		return t.evalFilter(in, n)
	case *wildcardNode:
		var out []any
		for _, v := range in {
			out = append(out, children(v)...)
		}
		return out, nil
	case *recursiveNode:
		return descend(in), nil
	case *unionNode:
		var out []any
		for _, l := range n.lists {
			vs, err := t.eval(in, l)
			if err != nil {
				return nil, err
			}
			out = append(out, vs...)
		}
		return out, nil
	case *identNode:
		return nil, fmt.Errorf("unrecognized identifier %v", n.name)
	case *rangeNode:
		return nil, errors.New("range inside an expression")
	}
	return nil, fmt.Errorf("unexpected node %T", n)
}

func repeat(in []any, v any) []any {
	out := make([]any, len(in))
	for i := range out {
		out[i] = v
	}
	return out
}

func (t *Template) evalField(in []any, n *fieldNode) ([]any, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if n.name == "" { // {.}: the value itself
		return in, nil
	}
	var out []any
	for _, v := range in {
		if m, ok := v.(map[string]any); ok {
			if x, ok := m[n.name]; ok {
				out = append(out, x)
			}
		}
	}
	if len(out) == 0 && !t.allowMissingKeys {
		return nil, fmt.Errorf("%s is not found", n.name)
	}
	return out, nil
}

func evalArray(in []any, n *arrayNode) ([]any, error) {
	var out []any
	for _, v := range in {
		if v == nil {
			continue
		}
		l, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s is not array or slice", typeName(v))
		}
		p := n.params
		length := len(l)
		start, end := 0, length
		if p[0].known {
			start = p[0].value
		}
		if start < 0 {
			start += length
		}
		if p[1].known {
			end = p[1].value
		}
		if end < 0 || (end == 0 && p[1].derived) {
			end += length
		}
		if start == end { // no elements asked for
			continue
		}
		if start >= length || start < 0 {
			return nil, fmt.Errorf("array index out of bounds: index %d, length %d", start, length)
		}
		if end > length || end < 0 {
			return nil, fmt.Errorf("array index out of bounds: index %d, length %d", end-1, length)
		}
		if start > end {
			return nil, fmt.Errorf("starting index %d is greater than ending index %d", start, end)
		}
		step := 1
		if p[2].known {
			if p[2].value <= 0 {
				return nil, errors.New("step must be > 0")
			}
			step = p[2].value
		}
		for i := start; i < end; i += step {
			out = append(out, l[i])
		}
	}
	return out, nil
}

func (t *Template) evalFilter(in []any, n *filterNode) ([]any, error) {
	var out []any
	for _, v := range in {
		l, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s is not array or slice and cannot be filtered", typeName(v))
		}
		for _, e := range l {
			lefts, err := t.eval([]any{e}, n.left)
			if n.op == "exists" {
				if len(lefts) > 0 {
					out = append(out, e)
				}
				continue
			}
			if err != nil {
				return nil, err
			}
			if len(lefts) == 0 {
				continue
			}
			if len(lefts) > 1 {
				return nil, errors.New("can only compare one element at a time")
			}
			rights, err := t.eval([]any{e}, n.right)
			if err != nil {
				return nil, err
			}
			if len(rights) == 0 {
				continue
			}
			if len(rights) > 1 {
				return nil, errors.New("can only compare one element at a time")
			}
			pass, err := compare(lefts[0], rights[0], n.op)
			if err != nil {
				return nil, err
			}
			if pass {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

var (
	errBadComparisonType = errors.New("invalid type for comparison")
	errBadComparison     = errors.New("incompatible types for comparison")
)

// compare applies a filter's operator: numbers with numbers, strings
// with strings, booleans (== and != only) with booleans.
func compare(a, b any, op string) (bool, error) {
	var c int
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		if !ok {
			return false, errBadComparison
		}
		c = cmpOrdered(x, y)
	case int64, float64:
		xf, _ := number(x)
		yf, ok := number(b)
		if !ok {
			return false, errBadComparison
		}
		c = cmpOrdered(xf, yf)
	case bool:
		y, ok := b.(bool)
		if !ok {
			return false, errBadComparison
		}
		switch op {
		case "==":
			return x == y, nil
		case "!=":
			return x != y, nil
		}
		return false, errBadComparisonType
	default:
		return false, errBadComparisonType
	}
	switch op {
	case "==":
		return c == 0, nil
	case "!=":
		return c != 0, nil
	case "<":
		return c < 0, nil
	case ">":
		return c > 0, nil
	case "<=":
		return c <= 0, nil
	case ">=":
		return c >= 0, nil
	}
	return false, fmt.Errorf("unrecognized filter operator %s", op)
}

func cmpOrdered[T string | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// children are a map's values (by sorted key) or a list's elements.
func children(v any) []any {
	switch x := v.(type) {
	case map[string]any:
		out := make([]any, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, x[k])
		}
		return out
	case []any:
		return x
	}
	return nil
}

// descend is every map and list under in, each before its children
// (client-go's recursive descent: values without children are left out).
func descend(in []any) []any {
	var out []any
	for _, v := range in {
		if c := children(v); len(c) > 0 {
			out = append(out, v)
			out = append(out, descend(c)...)
		}
	}
	return out
}

// typeName names a value's type as client-go's errors do (Go's names).
func typeName(v any) string {
	if v == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%T", v)
}
