package manifest

// The shape of an object's JSON is what the apiserver's cache of
// created objects' managed fields keys by (package httpapi): two objects
// of one shape get the same managed fields from the field manager.

// AppendShapeOfJSON appends the shape of the JSON value b to dst: its
// structure and object keys as they are, the items of arrays whole, and
// each scalar outside an array as one byte of its type (s a string, 0
// a number, t true, f false, n null).
// ok is false for JSON it does not follow (b is the codec's compact
// output, never anything else).
func AppendShapeOfJSON(dst, b []byte) ([]byte, bool) {
	// Each open container: whether it is an array; for an object,
	// whether the next string is a key.
	var stack []byte // 'a' array, 'k' object expecting a key, 'v' object expecting a value
	inArray := 0
	for i := 0; i < len(b); {
		c := b[i]
		switch c {
		case '{':
			stack = append(stack, 'k')
			dst = append(dst, c)
			i++
			continue
		case '[':
			stack = append(stack, 'a')
			inArray++
			dst = append(dst, c)
			i++
			continue
		case '}', ']':
			if len(stack) == 0 {
				return dst, false
			}
			if stack[len(stack)-1] == 'a' {
				inArray--
			}
			stack = stack[:len(stack)-1]
			dst = append(dst, c)
			i++
			continue
		case ':':
			if len(stack) == 0 || stack[len(stack)-1] != 'v' {
				return dst, false
			}
			dst = append(dst, c)
			i++
			continue
		case ',':
			if len(stack) > 0 && stack[len(stack)-1] == 'v' {
				stack[len(stack)-1] = 'k'
			}
			dst = append(dst, c)
			i++
			continue
		case ' ', '\n', '\t', '\r':
			i++
			continue
		}
		// A scalar: a string or a literal.
		end := i + 1
		if c == '"' {
			for end < len(b) && b[end] != '"' {
				if b[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(b) {
				return dst, false
			}
			end++
		} else {
			for end < len(b) && !isShapeDelimiter(b[end]) {
				end++
			}
		}
		key := len(stack) > 0 && stack[len(stack)-1] == 'k'
		switch {
		case key:
			if c != '"' {
				return dst, false
			}
			stack[len(stack)-1] = 'v'
			dst = append(dst, b[i:end]...)
		case inArray > 0:
			dst = append(dst, b[i:end]...)
		case c == '"':
			dst = append(dst, 's')
		case c == 't' || c == 'f' || c == 'n':
			dst = append(dst, c) // true, false, null
		default:
			dst = append(dst, '0') // a number
		}
		i = end
	}
	return dst, len(stack) == 0
}

func isShapeDelimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\n', '\t', '\r':
		return true
	}
	return false
}
