package fields

import (
	"fmt"
	"strings"
	"unicode"
)

// Parse parses a field selector; see the package documentation for the
// syntax. The empty (or all-whitespace) string is Everything. Errors wrap
// ErrInvalidSelector and give the byte offset and the offending text:
//
//	invalid field selector "a=b,c": at offset 4: "c" has no operator; expected '=', '==' or '!='
func Parse(s string) (Selector, error) {
	if strings.TrimSpace(s) == "" {
		return Everything(), nil
	}
	var reqs []Requirement
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			if s[i] == '\\' && i+1 < len(s) {
				i++ // the escaped byte cannot end the term
				continue
			}
			if s[i] != ',' {
				continue
			}
		}
		r, err := parseRequirement(s, start, s[start:i])
		if err != nil {
			return Selector{}, err
		}
		reqs = append(reqs, r)
		start = i + 1
	}
	return newSelector(reqs), nil
}

// parseRequirement parses one comma-free term found at offset pos of src.
func parseRequirement(src string, pos int, term string) (Requirement, error) {
	fail := func(at int, format string, args ...any) error {
		return fmt.Errorf("%w %q: at offset %d: %s", ErrInvalidSelector, src, at, fmt.Sprintf(format, args...))
	}
	if strings.TrimSpace(term) == "" {
		return Requirement{}, fail(pos, "empty requirement; expected field=value, field==value or field!=value")
	}
	opAt, op, opLen := -1, Equals, 0
	for i := 0; i < len(term); i++ {
		if term[i] == '!' && i+1 < len(term) && term[i+1] == '=' {
			opAt, op, opLen = i, NotEquals, 2
			break
		}
		if term[i] == '=' {
			opAt, opLen = i, 1
			if i+1 < len(term) && term[i+1] == '=' {
				opLen = 2
			}
			break
		}
	}
	if opAt < 0 {
		return Requirement{}, fail(pos, "%q has no operator; expected '=', '==' or '!='", strings.TrimSpace(term))
	}
	field := strings.TrimSpace(term[:opAt])
	if field == "" {
		return Requirement{}, fail(pos+opAt, "found '%s' with no field name before it", term[opAt:opAt+opLen])
	}
	if i := strings.IndexFunc(field, func(r rune) bool { return !isFieldChar(r) }); i >= 0 {
		return Requirement{}, fail(pos+strings.Index(term, field),
			"invalid field name %q: must consist of ASCII letters, digits, '.', '-', '_', '/', '[' or ']'", field)
	}
	rawStart := opAt + opLen
	raw := term[rawStart:]
	trimmed := strings.TrimLeftFunc(raw, isSpaceRune)
	valueAt := pos + rawStart + len(raw) - len(trimmed)
	value, badAt, why := unescape(trimmed)
	if why != "" {
		return Requirement{}, fail(valueAt+badAt, "field %q: %s", field, why)
	}
	// Escapes never produce whitespace, so trimming after unescaping only
	// drops unescaped trailing blanks, and a value ending in `\ ` stays an
	// invalid escape.
	value = strings.TrimRightFunc(value, isSpaceRune)
	return Requirement{Field: field, Operator: op, Value: value}, nil
}

func isFieldChar(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' ||
		r == '.' || r == '-' || r == '_' || r == '/' || r == '[' || r == ']'
}

// isSpaceRune matches what strings.TrimSpace trims.
func isSpaceRune(r rune) bool { return unicode.IsSpace(r) }

// unescape undoes EscapeValue. On failure it returns the offset of the
// problem in v and a description.
func unescape(v string) (string, int, string) {
	if !strings.ContainsAny(v, `\=`) {
		return v, 0, ""
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '=':
			return "", i, `unescaped '=' in value; write it as '\='`
		case '\\':
			if i+1 == len(v) {
				return "", i, `value ends in a lone '\'; write a backslash as '\\'`
			}
			i++
			switch e := v[i]; e {
			case '\\', ',', '=':
				b.WriteByte(e)
			default:
				return "", i - 1, fmt.Sprintf(`invalid escape sequence '\%c' in value; only '\\', '\,' and '\=' are allowed`, e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), 0, ""
}
