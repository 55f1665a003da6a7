package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Document is one object of a manifest as a generic tree: map[string]any,
// []any, string, int64, float64, bool and nil.
type Document struct {
	// Source is the file name, or "-" for standard input.
	Source string
	// Index is the document's position in its source (0-based), counting
	// the items of a kind: List one by one.
	Index int
	// Multi is true when the source holds more than one document.
	Multi  bool
	Object map[string]any
}

// String names the document for messages: `deploy.yaml` or
// `deploy.yaml (document 2)`.
func (d *Document) String() string {
	src := d.Source
	if src == "-" {
		src = "STDIN"
	}
	if d.Multi {
		return fmt.Sprintf("%s (document %d)", src, d.Index+1)
	}
	return src
}

// Extensions are the file extensions read from a directory.
var Extensions = []string{".yaml", ".yml", ".json"}

// ReadPaths reads every document of paths: files, directories (their
// .yaml, .yml and .json files in lexical order; with recursive, also
// those of subdirectories) and "-" for stdin.
func ReadPaths(paths []string, recursive bool, stdin io.Reader) ([]*Document, error) {
	var docs []*Document
	for _, p := range paths {
		if p == "-" {
			d, err := Read("-", stdin)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("the path %q does not exist", p)
		}
		if !st.IsDir() {
			d, err := readFile(p)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
			continue
		}
		var files []string
		err = filepath.WalkDir(p, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				if path != p && !recursive {
					return filepath.SkipDir
				}
				return nil
			}
			for _, ext := range Extensions {
				if strings.HasSuffix(path, ext) {
					files = append(files, path)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(files)
		for _, f := range files {
			d, err := readFile(f)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
		}
	}
	return docs, nil
}

func readFile(path string) ([]*Document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(path, f)
}

// Read reads the documents of one source: a YAML stream ("---"
// separated) or a JSON stream (concatenated values). Empty documents are
// skipped; a kind: List stands for its items.
func Read(name string, r io.Reader) ([]*Document, error) {
	br := bufio.NewReader(r)
	var trees []any
	var err error
	if isJSON(br) {
		trees, err = readJSON(br)
	} else {
		trees, err = readYAML(br)
	}
	if err != nil {
		src := name
		if src == "-" {
			src = "STDIN"
		}
		return nil, fmt.Errorf("error parsing %s: %w", src, err)
	}
	var docs []*Document
	add := func(v any, at int) error {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("error parsing %s: document %d is not an object (got %s)", name, at+1, typeName(v))
		}
		docs = append(docs, &Document{Source: name, Index: len(docs), Object: m})
		return nil
	}
	for i, t := range trees {
		if t == nil {
			continue
		}
		if m, ok := t.(map[string]any); ok && isList(m) {
			items, _ := m["items"].([]any)
			for _, it := range items {
				if err := add(it, i); err != nil {
					return nil, err
				}
			}
			continue
		}
		if err := add(t, i); err != nil {
			return nil, err
		}
	}
	for _, d := range docs {
		d.Multi = len(docs) > 1
	}
	return docs, nil
}

// isList reports whether m is a kind: List (or any <Kind>List with items).
func isList(m map[string]any) bool {
	kind, _ := m["kind"].(string)
	_, hasItems := m["items"]
	return hasItems && strings.HasSuffix(kind, "List")
}

func isJSON(br *bufio.Reader) bool {
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		if err != nil || len(b) < i {
			return false
		}
		switch c := b[i-1]; c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			return true
		default:
			return false
		}
	}
}

func readJSON(r io.Reader) ([]any, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var out []any
	for {
		var v any
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		n, err := fromJSON(v)
		if err != nil {
			return nil, err
		}
		if l, ok := n.([]any); ok { // a top-level array: each element a document
			out = append(out, l...)
			continue
		}
		out = append(out, n)
	}
}

// fromJSON turns json.Number into int64 or float64.
func fromJSON(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", x, err)
		}
		return f, nil
	case map[string]any:
		for k, e := range x {
			n, err := fromJSON(e)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
		return x, nil
	case []any:
		for i, e := range x {
			n, err := fromJSON(e)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
		return x, nil
	}
	return v, nil
}

func readYAML(r io.Reader) ([]any, error) {
	dec := yaml.NewDecoder(r)
	var out []any
	for {
		var n yaml.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		v, err := fromYAML(&n)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// ParseYAML parses one YAML (or JSON) document into a generic tree.
func ParseYAML(b []byte) (any, error) {
	trees, err := readYAML(bytes.NewReader(b))
	if err != nil || len(trees) == 0 {
		return nil, err
	}
	return trees[0], nil
}

// fromYAML converts a YAML node to a generic tree, keeping the scalar's
// type as written: `cpu: 1` is an int64, `cpu: "1"` a string.
func fromYAML(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return fromYAML(n.Content[0])
	case yaml.AliasNode:
		return fromYAML(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				merged, err := fromYAML(v)
				if err != nil {
					return nil, err
				}
				if mm, ok := merged.(map[string]any); ok {
					for mk, mv := range mm {
						if _, set := m[mk]; !set {
							m[mk] = mv
						}
					}
				}
				continue
			}
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("yaml: line %d: a mapping key must be a scalar", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("yaml: line %d: key %q already set in map", k.Line, k.Value)
			}
			val, err := fromYAML(v)
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := fromYAML(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, err
			}
			return b, nil
		case "!!int":
			s := strings.ReplaceAll(n.Value, "_", "")
			if strings.HasPrefix(s, "0o") || strings.HasPrefix(s, "+0o") || strings.HasPrefix(s, "-0o") {
				s = strings.Replace(s, "0o", "0", 1)
			}
			if i, err := strconv.ParseInt(s, 0, 64); err == nil {
				return i, nil
			}
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, fmt.Errorf("yaml: line %d: integer %s out of range", n.Line, n.Value)
			}
			return f, nil
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, err
			}
			if math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, fmt.Errorf("yaml: line %d: %s is not a number the API accepts", n.Line, n.Value)
			}
			return f, nil
		case "!!binary":
			return n.Value, nil
		default: // !!str, !!timestamp and anything else: the text as written
			return n.Value, nil
		}
	}
	return nil, fmt.Errorf("yaml: line %d: unexpected node", n.Line)
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}
