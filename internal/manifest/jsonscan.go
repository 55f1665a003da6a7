package manifest

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The JSON scanner under UnmarshalJSON: it reads tokens straight from
// the bytes (no token values boxed in interfaces, no copies but the
// strings the message keeps), checking the syntax as encoding/json does.
// A syntax error ends the decoding: the scanner panics with a
// *SyntaxError that the entry points recover.

// SyntaxError is JSON that is not well formed.
type SyntaxError struct {
	Offset int // of the byte in error
	msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.Offset, e.msg)
}

// maxDepth bounds the nesting of what the scanner skips or copies (as
// encoding/json does), so that a hostile body cannot exhaust the stack.
const maxDepth = 10000

type scanner struct {
	data    []byte
	pos     int
	scratch []byte // keys and strings with escapes, unescaped
	// arena holds the strings read, rather than one allocation each (a
	// pod has some forty): they are made from it without a copy
	// (unsafe.String), so what is in it is never written again, and a
	// new arena starts when it is full.
	arena []byte
}

func (s *scanner) fail(format string, args ...any) {
	panic(&SyntaxError{Offset: s.pos, msg: fmt.Sprintf(format, args...)})
}

// catchSyntax turns the scanner's panic into *err.
func catchSyntax(err *error) {
	if r := recover(); r != nil {
		se, ok := r.(*SyntaxError)
		if !ok {
			panic(r)
		}
		*err = se
	}
}

// next skips white space and returns the next byte, not consumed (0 at
// the end, where no JSON value or punctuation is).
func (s *scanner) next() byte {
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; c {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return c
		}
	}
	return 0
}

func (s *scanner) unexpected(context string) {
	if s.pos >= len(s.data) {
		s.fail("unexpected end of JSON input")
	}
	s.fail("invalid character %s %s", quoteChar(s.data[s.pos]), context)
}

func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	return strconv.QuoteRune(rune(c))
}

// more is called after an element of an object or a list: it consumes
// the comma and reports true, or the closing byte and reports false.
func (s *scanner) more(closing byte) bool {
	switch s.next() {
	case ',':
		s.pos++
		return true
	case closing:
		s.pos++
		return false
	}
	if closing == '}' {
		s.unexpected("after object key:value pair")
	}
	s.unexpected("after array element")
	return false
}

// openObject consumes '{' (the caller saw it) and reports whether the
// object has members.
func (s *scanner) openObject() bool {
	s.pos++
	if s.next() == '}' {
		s.pos++
		return false
	}
	return true
}

// openList consumes '[' and reports whether the list has elements.
func (s *scanner) openList() bool {
	s.pos++
	if s.next() == ']' {
		s.pos++
		return false
	}
	return true
}

// key reads an object's key and its colon. The bytes are valid until the
// next key.
func (s *scanner) key() []byte {
	if s.next() != '"' {
		s.unexpected("looking for beginning of object key string")
	}
	start, end, plain := s.stringSpan()
	var k []byte
	if plain {
		k = s.data[start+1 : end-1]
	} else {
		s.scratch = unquote(s.scratch[:0], s.data[start:end])
		k = s.scratch
	}
	if s.next() != ':' {
		s.unexpected("after object key")
	}
	s.pos++
	return k
}

// stringSpan consumes a string and returns where it starts and ends
// (quotes included), and whether it is plain: no escapes, valid UTF-8.
func (s *scanner) stringSpan() (start, end int, plain bool) {
	start = s.pos
	s.pos++
	plain = true
	for s.pos < len(s.data) {
		i, d := s.pos, s.data // in registers: the loop most bytes take
		for i < len(d) && plainASCII[d[i]] {
			i++
		}
		s.pos = i
		if s.pos >= len(s.data) {
			break
		}
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return start, s.pos, plain
		case c == '\\':
			plain = false
			s.pos++
			if s.pos >= len(s.data) {
				break
			}
			switch s.data[s.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos++
			case 'u':
				s.pos++
				for i := 0; i < 4; i++ {
					if s.pos >= len(s.data) {
						break
					}
					if !isHex(s.data[s.pos]) {
						s.unexpected("in \\u hexadecimal character escape")
					}
					s.pos++
				}
			default:
				s.unexpected("in string escape code")
			}
		case c < 0x20:
			s.unexpected("in string literal")
		case c < utf8.RuneSelf:
			s.pos++
		default:
			r, size := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && size == 1 {
				plain = false
			}
			s.pos += size
		}
	}
	s.fail("unexpected end of JSON input")
	return
}

// plainASCII marks the bytes a string holds as they are: ASCII but
// control characters, quotes and backslashes.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// str reads a string value.
func (s *scanner) str() string {
	start, end, plain := s.stringSpan()
	if plain {
		return s.intern(s.data[start+1 : end-1])
	}
	s.scratch = unquote(s.scratch[:0], s.data[start:end])
	return s.intern(s.scratch)
}

// intern returns b as a string held in the arena.
func (s *scanner) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if cap(s.arena)-len(s.arena) < len(b) {
		// A document's strings take at most its length (but for
		// invalid UTF-8, each byte of which becomes three).
		s.arena = make([]byte, 0, max(len(b), min(len(s.data), 64<<10)))
	}
	start := len(s.arena)
	s.arena = append(s.arena, b...)
	return unsafe.String(&s.arena[start], len(b))
}

// unquote appends the text of the well-formed JSON string q (quotes
// included) to b, as encoding/json reads it: invalid UTF-8 and lone
// surrogates become U+FFFD.
func unquote(b, q []byte) []byte {
	q = q[1 : len(q)-1]
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '\\':
			i++
			switch q[i] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(q[i+1:])
				i += 4
				if utf16.IsSurrogate(r) {
					// the scanner checked that an escape has its four digits
					if i+2 < len(q) && q[i+1] == '\\' && q[i+2] == 'u' {
						if r2 := utf16.DecodeRune(r, hex4(q[i+3:])); r2 != utf8.RuneError {
							r = r2
							i += 6
						} else {
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				}
				b = utf8.AppendRune(b, r)
			default: // '"', '\\', '/'
				b = append(b, q[i])
			}
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(q[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, q[i:i+size]...)
			}
			i += size
		}
	}
	return b
}

// hex4 reads the four hexadecimal digits at the start of h (checked by
// the scanner).
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// number reads a number as Read's trees hold it: an int64 when it is
// written as an integer that fits, a float64 otherwise.
func (s *scanner) number() value {
	start := s.pos
	integral := s.numberSpan()
	text := s.data[start:s.pos]
	if integral {
		if i, ok := parseInt(text); ok {
			return value{kind: intValue, i: i}
		}
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		s.pos = start
		s.fail("number %s out of range", text)
	}
	return value{kind: floatValue, f: f}
}

// numberSpan consumes a number and reports whether it has neither a
// fraction nor an exponent.
func (s *scanner) numberSpan() (integral bool) {
	d := s.data
	if s.pos < len(d) && d[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(d) && d[s.pos] == '0':
		s.pos++
	case s.pos < len(d) && '1' <= d[s.pos] && d[s.pos] <= '9':
		s.digits()
	default:
		s.unexpected("in numeric literal")
	}
	integral = true
	if s.pos < len(d) && d[s.pos] == '.' {
		integral = false
		s.pos++
		if s.pos >= len(d) || d[s.pos] < '0' || d[s.pos] > '9' {
			s.unexpected("after decimal point in numeric literal")
		}
		s.digits()
	}
	if s.pos < len(d) && (d[s.pos] == 'e' || d[s.pos] == 'E') {
		integral = false
		s.pos++
		if s.pos < len(d) && (d[s.pos] == '+' || d[s.pos] == '-') {
			s.pos++
		}
		if s.pos >= len(d) || d[s.pos] < '0' || d[s.pos] > '9' {
			s.unexpected("in exponent of numeric literal")
		}
		s.digits()
	}
	return integral
}

func (s *scanner) digits() {
	for s.pos < len(s.data) && '0' <= s.data[s.pos] && s.data[s.pos] <= '9' {
		s.pos++
	}
}

// parseInt parses a well-formed integer; ok is false when it does not fit
// an int64.
func parseInt(text []byte) (int64, bool) {
	neg := text[0] == '-'
	if neg {
		text = text[1:]
	}
	if len(text) > 19 { // 19 digits fit a uint64
		return 0, false
	}
	var u uint64
	for _, c := range text {
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return -int64(u), true
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}

// literal consumes true, false or null.
func (s *scanner) literal() value {
	for _, lit := range [...]struct {
		text string
		v    value
	}{{"true", value{kind: boolValue, b: true}}, {"false", value{kind: boolValue}}, {"null", value{}}} {
		if lit.text[0] != s.data[s.pos] {
			continue
		}
		for i := 1; i < len(lit.text); i++ {
			s.pos++
			if s.pos >= len(s.data) || s.data[s.pos] != lit.text[i] {
				s.unexpected("in literal " + lit.text + " (expecting " + quoteChar(lit.text[i]) + ")")
			}
		}
		s.pos++
		return lit.v
	}
	s.unexpected("looking for beginning of value")
	return value{}
}

// value reads the next value: a scalar's value, or (skipping it) the
// kind of an object or a list.
func (s *scanner) value() value {
	switch c := s.next(); {
	case c == '"':
		return value{kind: stringValue, s: s.str()}
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	case c == '{':
		s.skip()
		return value{kind: objectValue}
	case c == '[':
		s.skip()
		return value{kind: listValue}
	case c == 0:
		s.unexpected("looking for beginning of value")
	}
	return s.literal()
}

// skip consumes the next value, checked.
func (s *scanner) skip() { s.copyValue(nil, 0) }

// copyValue consumes the next value and, when out is not nil, appends it
// to *out without white space (strings re-escaped where they hold
// invalid UTF-8).
func (s *scanner) copyValue(out *[]byte, depth int) {
	if depth > maxDepth {
		s.fail("exceeded max depth")
	}
	emit := func(b ...byte) {
		if out != nil {
			*out = append(*out, b...)
		}
	}
	switch c := s.next(); {
	case c == '{':
		emit('{')
		if s.openObject() {
			for first := true; ; first = false {
				if !first {
					emit(',')
				}
				if s.next() != '"' {
					s.unexpected("looking for beginning of object key string")
				}
				s.copyString(out)
				if s.next() != ':' {
					s.unexpected("after object key")
				}
				s.pos++
				emit(':')
				s.copyValue(out, depth+1)
				if !s.more('}') {
					break
				}
			}
		}
		emit('}')
	case c == '[':
		emit('[')
		if s.openList() {
			for first := true; ; first = false {
				if !first {
					emit(',')
				}
				s.copyValue(out, depth+1)
				if !s.more(']') {
					break
				}
			}
		}
		emit(']')
	case c == '"':
		s.copyString(out)
	case c == '-' || '0' <= c && c <= '9':
		start := s.pos
		s.numberSpan()
		emit(s.data[start:s.pos]...)
	case c == 0:
		s.unexpected("looking for beginning of value")
	default:
		start := s.pos
		s.literal()
		emit(s.data[start:s.pos]...)
	}
}

func (s *scanner) copyString(out *[]byte) {
	start, end, _ := s.stringSpan()
	if out == nil {
		return
	}
	if q := s.data[start:end]; utf8.Valid(q) {
		*out = append(*out, q...)
	} else {
		*out = appendString(*out, string(unquote(nil, q)))
	}
}

// end checks that nothing but white space follows the value.
func (s *scanner) end() {
	if s.next(); s.pos < len(s.data) { // (next is 0 for a NUL byte too)
		s.unexpected("after top-level value")
	}
}

// appendCompact appends the JSON value raw without its white space; ok is
// false (and b unchanged) when raw is not one well-formed JSON value.
func appendCompact(b, raw []byte) (out []byte, ok bool) {
	var err error
	func() {
		defer catchSyntax(&err)
		s := scanner{data: raw}
		out = b
		s.copyValue(&out, 0)
		s.end()
	}()
	if err != nil {
		return b, false
	}
	return out, true
}
