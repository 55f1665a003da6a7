package labels

import "fmt"

// tokenKind classifies a lexed token.
type tokenKind int

const (
	tokEnd       tokenKind = iota // end of input
	tokIdent                      // a key, a value, or the words "in"/"notin"
	tokComma                      // ,
	tokOpen                       // (
	tokClose                      // )
	tokEquals                     // =
	tokDoubleEq                   // ==
	tokNotEquals                  // !=
	tokNot                        // !
)

type token struct {
	kind tokenKind
	text string
	pos  int // byte offset in the input
}

// describe names a token for an error message.
func (t token) describe() string {
	if t.kind == tokEnd {
		return "end of input"
	}
	return "'" + t.text + "'"
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isSpecial(c byte) bool {
	return c == '!' || c == '=' || c == '(' || c == ')' || c == ','
}

// lex splits s into tokens. Every byte that is neither whitespace nor one of
// "!=()," belongs to an identifier; identifiers are validated by the parser,
// which also decides when "in" and "notin" are operators, so that they stay
// usable as keys and values.
func lex(s string) []token {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isSpace(c):
			i++
			continue
		case c == '!' || c == '=':
			kind, n := tokNot, 1
			switch {
			case c == '!' && i+1 < len(s) && s[i+1] == '=':
				kind, n = tokNotEquals, 2
			case c == '=' && i+1 < len(s) && s[i+1] == '=':
				kind, n = tokDoubleEq, 2
			case c == '=':
				kind = tokEquals
			}
			toks = append(toks, token{kind, s[i : i+n], i})
			i += n
		case c == '(' || c == ')' || c == ',':
			kind := tokComma
			if c == '(' {
				kind = tokOpen
			} else if c == ')' {
				kind = tokClose
			}
			toks = append(toks, token{kind, s[i : i+1], i})
			i++
		default:
			j := i
			for j < len(s) && !isSpace(s[j]) && !isSpecial(s[j]) {
				j++
			}
			toks = append(toks, token{tokIdent, s[i:j], i})
			i = j
		}
	}
	return append(toks, token{kind: tokEnd, pos: len(s)})
}

// Parse parses a selector in the string syntax described in the package
// documentation. The empty (or all-whitespace) string is Everything.
// Errors wrap ErrInvalidSelector and name the offset and the offending
// text, e.g.
//
//	invalid label selector "a in x": at offset 5: found 'x', expected '('
func Parse(s string) (Selector, error) {
	p := parser{src: s, toks: lex(s)}
	if p.peek().kind == tokEnd {
		return Everything(), nil
	}
	var reqs []Requirement
	for {
		r, err := p.requirement()
		if err != nil {
			return Selector{}, err
		}
		reqs = append(reqs, r)
		switch t := p.next(); t.kind {
		case tokEnd:
			return newSelector(reqs), nil
		case tokComma:
		default:
			return Selector{}, p.unexpected(t, "',' or end of input")
		}
	}
}

type parser struct {
	src  string
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEnd {
		p.i++
	}
	return t
}

func (p *parser) errorf(pos int, format string, args ...any) error {
	return fmt.Errorf("%w %q: at offset %d: %s", ErrInvalidSelector, p.src, pos, fmt.Sprintf(format, args...))
}

// wrap reports err, a key or value problem, at pos.
func (p *parser) wrap(pos int, err error) error {
	return fmt.Errorf("%w %q: at offset %d: %w", ErrInvalidSelector, p.src, pos, err)
}

func (p *parser) unexpected(t token, want string) error {
	return p.errorf(t.pos, "found %s, expected %s", t.describe(), want)
}

// requirement parses one requirement, leaving the following ',' or end.
func (p *parser) requirement() (Requirement, error) {
	t := p.next()
	if t.kind == tokNot {
		key, err := p.key(p.next())
		if err != nil {
			return Requirement{}, err
		}
		return newRequirement(key, DoesNotExist, nil), nil
	}
	key, err := p.key(t)
	if err != nil {
		return Requirement{}, err
	}
	switch op := p.peek(); op.kind {
	case tokEnd, tokComma:
		return newRequirement(key, Exists, nil), nil
	case tokEquals, tokDoubleEq, tokNotEquals:
		p.next()
		v, err := p.value()
		if err != nil {
			return Requirement{}, err
		}
		return newRequirement(key, Operator(op.text), []string{v}), nil
	case tokIdent:
		if op.text == string(In) || op.text == string(NotIn) {
			p.next()
			vs, err := p.set(op)
			if err != nil {
				return Requirement{}, err
			}
			return newRequirement(key, Operator(op.text), vs), nil
		}
	}
	return Requirement{}, p.unexpected(p.peek(), "an operator ('=', '==', '!=', 'in', 'notin'), ',' or end of input")
}

// key checks that t is a valid label key.
func (p *parser) key(t token) (string, error) {
	if t.kind != tokIdent {
		return "", p.unexpected(t, "a label key")
	}
	if err := ValidateKey(t.text); err != nil {
		return "", p.wrap(t.pos, err)
	}
	return t.text, nil
}

// value parses the value after "=", "==" or "!=": an identifier, or
// nothing when the requirement ends there.
func (p *parser) value() (string, error) {
	t := p.peek()
	switch t.kind {
	case tokEnd, tokComma:
		return "", nil
	case tokIdent:
		p.next()
		if err := ValidateValue(t.text); err != nil {
			return "", p.wrap(t.pos, err)
		}
		return t.text, nil
	}
	return "", p.unexpected(t, "a label value, ',' or end of input")
}

// set parses "(" value { "," value } ")" after op; values may be empty.
func (p *parser) set(op token) ([]string, error) {
	if t := p.next(); t.kind != tokOpen {
		return nil, p.unexpected(t, "'('")
	}
	if t := p.peek(); t.kind == tokClose {
		return nil, p.errorf(t.pos, "%s", valuesProblem(op.text, Operator(op.text), 0))
	}
	var vs []string
	for {
		switch t := p.peek(); t.kind {
		case tokIdent:
			p.next()
			if err := ValidateValue(t.text); err != nil {
				return nil, p.wrap(t.pos, err)
			}
			vs = append(vs, t.text)
		case tokComma, tokClose:
			vs = append(vs, "")
		}
		switch t := p.next(); t.kind {
		case tokClose:
			return vs, nil
		case tokComma:
		default:
			return nil, p.unexpected(t, "',' or ')'")
		}
	}
}
