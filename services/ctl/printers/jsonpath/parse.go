package jsonpath

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// node is one step of an action.
type node interface{ isNode() }

type (
	// textNode is literal text, outside braces or a quoted string.
	textNode struct{ text string }
	// listNode is a sequence of steps, each applied to the previous
	// step's results.
	listNode struct{ nodes []node }
	// fieldNode selects a map key ("" selects the value itself).
	fieldNode struct{ name string }
	// arrayNode selects a slice [start:end:step] of a list.
	arrayNode struct{ params [3]param }
	// filterNode keeps the elements of a list for which left op right.
	filterNode struct {
		left, right *listNode
		op          string // ==, !=, <, >, <=, >= or "exists"
	}
	intNode       struct{ value int }
	floatNode     struct{ value float64 }
	boolNode      struct{ value bool }
	wildcardNode  struct{}
	recursiveNode struct{}
	unionNode     struct{ lists []*listNode }
	// identNode is a keyword: range or end.
	identNode struct{ name string }
	// rangeNode evaluates body once per result of expr (built from
	// {range expr}...{end}).
	rangeNode struct {
		expr *listNode
		body []node
	}
)

func (*textNode) isNode()      {}
func (*listNode) isNode()      {}
func (*fieldNode) isNode()     {}
func (*arrayNode) isNode()     {}
func (*filterNode) isNode()    {}
func (*intNode) isNode()       {}
func (*floatNode) isNode()     {}
func (*boolNode) isNode()      {}
func (*wildcardNode) isNode()  {}
func (*recursiveNode) isNode() {}
func (*unionNode) isNode()     {}
func (*identNode) isNode()     {}
func (*rangeNode) isNode()     {}

// param is one bound of a slice; derived marks the end of a plain index
// ([i] is [i:i+1]).
type param struct {
	value          int
	known, derived bool
}

var (
	dictKeyRe = regexp.MustCompile(`^'([^']*)'$`)
	sliceRe   = regexp.MustCompile(`^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$`)
	filterRe  = regexp.MustCompile(`^([^!<>=]+)([!<>=]+)(.+?)$`)
)

// parser reads one template.
type parser struct {
	input      string
	pos, start int
	width      int
}

const eof = -1

func (p *parser) next() rune {
	if p.pos >= len(p.input) {
		p.width = 0
		return eof
	}
	r, w := utf8.DecodeRuneInString(p.input[p.pos:])
	p.width = w
	p.pos += w
	return r
}

func (p *parser) backup() { p.pos -= p.width }

func (p *parser) peek() rune {
	r := p.next()
	p.backup()
	return r
}

func (p *parser) consume() string {
	s := p.input[p.start:p.pos]
	p.start = p.pos
	return s
}

// parseTemplate splits text into text nodes and actions (list nodes).
func parseTemplate(text string) ([]node, error) {
	p := &parser{input: text}
	var out []node
	for {
		i := strings.Index(p.input[p.pos:], "{")
		if i < 0 {
			if p.start < len(p.input) {
				out = append(out, &textNode{p.input[p.start:]})
			}
			return out, nil
		}
		p.pos += i
		if p.pos > p.start {
			out = append(out, &textNode{p.consume()})
		}
		p.pos++ // {
		p.consume()
		action := &listNode{}
		if err := p.parseAction(action); err != nil {
			return nil, err
		}
		out = append(out, action)
	}
}

// parseAction reads the inside of an action up to and past its '}'.
func (p *parser) parseAction(cur *listNode) error {
	for {
		rest := p.input[p.pos:]
		switch {
		case strings.HasPrefix(rest, "}"):
			p.pos++
			p.consume()
			return nil
		case strings.HasPrefix(rest, "[?("):
			if err := p.parseFilter(cur); err != nil {
				return err
			}
			continue
		case strings.HasPrefix(rest, ".."):
			if n := len(cur.nodes); n > 0 {
				if _, ok := cur.nodes[n-1].(*recursiveNode); ok {
					return errors.New("invalid multiple recursive descent")
				}
			}
			p.pos += 2
			p.consume()
			cur.nodes = append(cur.nodes, &recursiveNode{})
			if isAlphaNumeric(p.peek()) {
				p.parseField(cur)
			}
			continue
		}
		r := p.next()
		switch {
		case r == eof || r == '\r' || r == '\n':
			return errors.New("unclosed action")
		case r == ' ' || r == '@' || r == '$': // @ and $ are the current value: nothing to do
			p.consume()
		case r == '[':
			if err := p.parseArray(cur); err != nil {
				return err
			}
		case r == '"' || r == '\'':
			if err := p.parseQuote(cur, r); err != nil {
				return err
			}
		case r == '.':
			p.parseField(cur)
		case r == '+' || r == '-' || unicode.IsDigit(r):
			p.backup()
			if err := p.parseNumber(cur); err != nil {
				return err
			}
		case isAlphaNumeric(r):
			p.backup()
			p.parseIdentifier(cur)
		default:
			return fmt.Errorf("unrecognized character in action: %#U", r)
		}
	}
}

// parseSub parses text as the inside of an action (for filters, unions
// and key paths).
func parseSub(text string) (*listNode, error) {
	p := &parser{input: text + "}"}
	l := &listNode{}
	if err := p.parseAction(l); err != nil {
		return nil, err
	}
	if p.pos != len(p.input) {
		return nil, fmt.Errorf("unexpected %q", p.input[p.pos:len(p.input)-1])
	}
	return l, nil
}

func (p *parser) parseIdentifier(cur *listNode) {
	for !isTerminator(p.next()) {
	}
	p.backup()
	v := p.consume()
	switch v {
	case "true", "false":
		cur.nodes = append(cur.nodes, &boolNode{v == "true"})
	default:
		cur.nodes = append(cur.nodes, &identNode{v})
	}
}

func (p *parser) parseNumber(cur *listNode) error {
	if r := p.peek(); r == '+' || r == '-' {
		p.next()
	}
	for {
		r := p.next()
		if r != '.' && !unicode.IsDigit(r) {
			p.backup()
			break
		}
	}
	v := p.consume()
	if i, err := strconv.Atoi(v); err == nil {
		cur.nodes = append(cur.nodes, &intNode{i})
		return nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		cur.nodes = append(cur.nodes, &floatNode{f})
		return nil
	}
	return fmt.Errorf("cannot parse number %s", v)
}

// parseArray reads [...] after its '[': an index, a slice, *, a union
// (a,b) or a key ('a.b').
func (p *parser) parseArray(cur *listNode) error {
	for {
		r := p.next()
		if r == eof || r == '\n' {
			return errors.New("unterminated array")
		}
		if r == ']' {
			break
		}
	}
	text := p.consume()
	text = text[1 : len(text)-1]
	if text == "*" {
		text = ":"
	}
	if parts := strings.Split(text, ","); len(parts) > 1 {
		u := &unionNode{}
		for _, part := range parts {
			l, err := parseSub("[" + strings.TrimSpace(part) + "]")
			if err != nil {
				return err
			}
			u.lists = append(u.lists, l)
		}
		cur.nodes = append(cur.nodes, u)
		return nil
	}
	if m := dictKeyRe.FindStringSubmatch(text); m != nil {
		l, err := parseSub("." + m[1])
		if err != nil {
			return err
		}
		cur.nodes = append(cur.nodes, l.nodes...)
		return nil
	}
	m := sliceRe.FindStringSubmatch(text)
	if m == nil {
		return fmt.Errorf("invalid array index %s", text)
	}
	var ps [3]param
	for i, s := range m[1:] {
		switch {
		case s == "" && i == 1: // [i]: the end is i+1
			ps[1] = param{value: ps[0].value + 1, known: true, derived: true}
		case s == "":
		case i > 0 && s == ":":
		default:
			if i > 0 {
				s = s[1:]
			}
			v, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("array index %s is not a number", s)
			}
			ps[i] = param{value: v, known: true}
		}
	}
	cur.nodes = append(cur.nodes, &arrayNode{ps})
	return nil
}

// parseFilter reads [?(left op right)] or [?(path)].
func (p *parser) parseFilter(cur *listNode) error {
	p.pos += len("[?(")
	p.consume()
	var quote rune
	inQuote := false
	for {
		r := p.next()
		if r == eof || r == '\n' {
			return errors.New("unterminated filter")
		}
		if r == '"' || r == '\'' {
			switch {
			case !inQuote:
				inQuote, quote = true, r
			case r == quote && p.input[p.pos-2] != '\\':
				inQuote = false
			}
			continue
		}
		if r == ')' && !inQuote {
			break
		}
	}
	if p.next() != ']' {
		return errors.New("unclosed array expect ]")
	}
	text := p.consume()
	text = text[:len(text)-2]
	m := filterRe.FindStringSubmatch(text)
	if m == nil {
		l, err := parseSub(text)
		if err != nil {
			return err
		}
		cur.nodes = append(cur.nodes, &filterNode{left: l, right: &listNode{}, op: "exists"})
		return nil
	}
	switch m[2] {
	case "==", "!=", "<", ">", "<=", ">=":
	default:
		return fmt.Errorf("unrecognized filter operator %s", m[2])
	}
	left, err := parseSub(m[1])
	if err != nil {
		return err
	}
	right, err := parseSub(m[3])
	if err != nil {
		return err
	}
	cur.nodes = append(cur.nodes, &filterNode{left: left, right: right, op: m[2]})
	return nil
}

func (p *parser) parseQuote(cur *listNode, quote rune) error {
	for {
		r := p.next()
		if r == eof || r == '\n' {
			return errors.New("unterminated quoted string")
		}
		if r == quote && p.input[p.pos-2] != '\\' {
			break
		}
	}
	raw := p.consume()
	s, err := unquote(raw)
	if err != nil {
		return fmt.Errorf("unquote string %s error %v", raw, err)
	}
	cur.nodes = append(cur.nodes, &textNode{s})
	return nil
}

// unquote is strconv.Unquote for single-quoted strings too.
func unquote(s string) (string, error) {
	quote := s[0]
	s = s[1 : len(s)-1]
	var b strings.Builder
	for len(s) > 0 {
		r, multibyte, rest, err := strconv.UnquoteChar(s, quote)
		if err != nil {
			return "", err
		}
		s = rest
		if r < utf8.RuneSelf || !multibyte {
			b.WriteByte(byte(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}

// parseField reads a key after its '.': up to a terminator, a backslash
// escaping the next character ('\.' is a dot in the key).
func (p *parser) parseField(cur *listNode) {
	p.consume()
	for {
		r := p.next()
		if r == '\\' {
			p.next()
			continue
		}
		if isTerminator(r) {
			p.backup()
			break
		}
	}
	v := p.consume()
	if v == "*" {
		cur.nodes = append(cur.nodes, &wildcardNode{})
		return
	}
	cur.nodes = append(cur.nodes, &fieldNode{strings.ReplaceAll(v, `\`, "")})
}

func isTerminator(r rune) bool {
	switch r {
	case eof, ' ', '\t', '\r', '\n', '.', ',', '[', ']', '$', '@', '{', '}':
		return true
	}
	return false
}

func isAlphaNumeric(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// nest turns {range X}...{end} into range nodes (ranges nest).
func nest(nodes []node) ([]node, error) {
	out, rest, err := nestUntilEnd(nodes, false)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, errors.New("not in range, nothing to end")
	}
	return out, nil
}

func nestUntilEnd(nodes []node, inRange bool) (out, rest []node, err error) {
	for len(nodes) > 0 {
		n := nodes[0]
		nodes = nodes[1:]
		l, ok := n.(*listNode)
		if !ok || len(l.nodes) == 0 {
			out = append(out, n)
			continue
		}
		id, ok := l.nodes[0].(*identNode)
		if !ok {
			out = append(out, n)
			continue
		}
		switch id.name {
		case "range":
			body, after, err := nestUntilEnd(nodes, true)
			if err != nil {
				return nil, nil, err
			}
			if after == nil {
				return nil, nil, errors.New("range without end")
			}
			out = append(out, &rangeNode{expr: &listNode{l.nodes[1:]}, body: body})
			nodes = after[1:]
		case "end":
			if len(l.nodes) > 1 {
				return nil, nil, fmt.Errorf("unexpected %T after end", l.nodes[1])
			}
			if !inRange {
				return nil, nil, errors.New("not in range, nothing to end")
			}
			return out, append([]node{n}, nodes...), nil
		default:
			return nil, nil, fmt.Errorf("unrecognized identifier %v", id.name)
		}
	}
	return out, nil, nil
}
