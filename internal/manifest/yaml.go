package manifest

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// YAML renders a generic tree as kubectl prints objects: keys sorted,
// two-space indentation, list items at their key's indentation, multi-line
// strings as block scalars.
func YAML(v any) []byte {
	var b bytes.Buffer
	writeYAML(&b, v, 0)
	return b.Bytes()
}

// JSON renders a generic tree as kubectl -o json does: keys sorted,
// four-space indentation, a final newline.
func JSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		// Generic trees only hold JSON-compatible values.
		panic(err)
	}
	return append(b, '\n')
}

// CompactJSON renders a generic tree on one line, keys sorted (the form of
// the last-applied-configuration annotation).
func CompactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return b.String() // ends with "\n", as kubectl's annotation does
}

func writeYAML(b *bytes.Buffer, v any, indent int) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}\n")
			return
		}
		writeMap(b, x, indent, false)
	case []any:
		if len(x) == 0 {
			b.WriteString("[]\n")
			return
		}
		writeList(b, x, indent)
	default:
		writeScalar(b, v, indent)
	}
}

// writeMap writes the entries of m at indent; with firstInline the first
// line continues a "- " already written.
func writeMap(b *bytes.Buffer, m map[string]any, indent int, firstInline bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i > 0 || !firstInline {
			b.WriteString(strings.Repeat(" ", indent))
		}
		b.WriteString(scalarString(k))
		b.WriteByte(':')
		switch val := m[k].(type) {
		case map[string]any:
			if len(val) == 0 {
				b.WriteString(" {}\n")
				continue
			}
			b.WriteByte('\n')
			writeMap(b, val, indent+2, false)
		case []any:
			if len(val) == 0 {
				b.WriteString(" []\n")
				continue
			}
			b.WriteByte('\n')
			writeList(b, val, indent)
		default:
			b.WriteByte(' ')
			writeScalar(b, val, indent+2)
		}
	}
}

func writeList(b *bytes.Buffer, l []any, indent int) {
	for _, it := range l {
		b.WriteString(strings.Repeat(" ", indent))
		b.WriteString("- ")
		switch val := it.(type) {
		case map[string]any:
			if len(val) == 0 {
				b.WriteString("{}\n")
				continue
			}
			writeMap(b, val, indent+2, true)
		case []any:
			if len(val) == 0 {
				b.WriteString("[]\n")
				continue
			}
			b.WriteByte('\n')
			writeList(b, val, indent+2)
		default:
			writeScalar(b, val, indent+2)
		}
	}
}

// writeScalar writes a scalar and its newline; block scalars' lines are
// indented at indent.
func writeScalar(b *bytes.Buffer, v any, indent int) {
	s, ok := v.(string)
	if ok && strings.Contains(s, "\n") && blockable(s) {
		body := s
		switch {
		case strings.HasSuffix(s, "\n\n"):
			b.WriteString("|+\n")
			body = strings.TrimSuffix(s, "\n")
		case strings.HasSuffix(s, "\n"):
			b.WriteString("|\n")
			body = strings.TrimSuffix(s, "\n")
		default:
			b.WriteString("|-\n")
		}
		for _, line := range strings.Split(body, "\n") {
			if line != "" {
				b.WriteString(strings.Repeat(" ", indent))
				b.WriteString(line)
			}
			b.WriteByte('\n')
		}
		return
	}
	b.WriteString(scalarString(v))
	b.WriteByte('\n')
}

// blockable reports whether s can be written as a literal block scalar.
func blockable(s string) bool {
	if strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\n") {
		return false
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasSuffix(line, " ") || strings.ContainsAny(line, "\t\r") {
			return false
		}
	}
	return true
}

func scalarString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		if strings.ContainsAny(x, "\n\t\r") {
			q, _ := json.Marshal(x)
			return string(q)
		}
		out, err := yaml.Marshal(x)
		if err != nil {
			q, _ := json.Marshal(x)
			return string(q)
		}
		return strings.TrimSuffix(string(out), "\n")
	}
	q, _ := json.Marshal(v)
	return string(q)
}
