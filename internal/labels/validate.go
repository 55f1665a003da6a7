package labels

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidLabel is the category of errors returned by ValidateKey and
// ValidateValue.
var ErrInvalidLabel = errors.New("invalid label")

const (
	// MaxNameLength bounds a label value and the name part of a label key.
	MaxNameLength = 63
	// MaxPrefixLength bounds the optional DNS-subdomain prefix of a key.
	MaxPrefixLength = 253
)

// A Fault is one way a label key or value breaks the rules. KeyFaults and
// ValueFaults return them so that a caller with its own error format (the
// API's field errors) can word each one; String gives this package's
// wording.
type Fault int

// The faults of a key, then of a value.
const (
	KeySlashes    Fault = iota + 1 // more than one '/'
	PrefixEmpty                    // "/name"
	PrefixTooLong                  // prefix longer than MaxPrefixLength
	PrefixChars                    // prefix not a lowercase RFC 1123 subdomain
	NameEmpty                      // "" or "prefix/"
	NameTooLong                    // name longer than MaxNameLength
	NameChars                      // name not ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
	ValueTooLong                   // value longer than MaxNameLength
	ValueChars                     // value not ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
)

const nameCharsMsg = "consist of alphanumeric characters, '-', '_' or '.', " +
	"and must start and end with an alphanumeric character"

var faultMessages = [...]string{
	KeySlashes:    "must be a name with an optional prefix and one '/' (e.g. 'example.com/my-name')",
	PrefixEmpty:   "prefix part must not be empty",
	PrefixTooLong: fmt.Sprintf("prefix part must be no more than %d characters", MaxPrefixLength),
	PrefixChars: "prefix part must be a lowercase RFC 1123 subdomain: lowercase alphanumeric " +
		"characters, '-' or '.', each dot-separated part starting and ending with an alphanumeric character",
	NameEmpty:    "name part must not be empty",
	NameTooLong:  fmt.Sprintf("name part must be no more than %d characters", MaxNameLength),
	NameChars:    "name part must " + nameCharsMsg,
	ValueTooLong: fmt.Sprintf("must be no more than %d characters", MaxNameLength),
	ValueChars:   "must be empty or " + nameCharsMsg,
}

// String describes the fault, e.g. "name part must not be empty".
func (f Fault) String() string {
	if f <= 0 || int(f) >= len(faultMessages) {
		return fmt.Sprintf("Fault(%d)", int(f))
	}
	return faultMessages[f]
}

// ValidateKey reports whether key is a valid label key: an optional
// DNS-subdomain prefix (at most 253 characters) and '/', then a name of at
// most 63 characters matching ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].
// The error names every fault KeyFaults finds.
func ValidateKey(key string) error { return faultsError("key", key, KeyFaults(key)) }

// ValidateValue reports whether value is a valid label value: empty, or at
// most 63 characters matching ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].
func ValidateValue(value string) error { return faultsError("value", value, ValueFaults(value)) }

func faultsError(what, s string, faults []Fault) error {
	if len(faults) == 0 {
		return nil
	}
	msgs := make([]string, len(faults))
	for i, f := range faults {
		msgs[i] = f.String()
	}
	return fmt.Errorf("%w %s %q: %s", ErrInvalidLabel, what, s, strings.Join(msgs, "; "))
}

// KeyFaults returns every fault of key, in the order of the constants;
// none when key is valid. A key with more than one '/' has only
// KeySlashes; otherwise the prefix and name are checked independently,
// length apart from characters. An empty part has no other fault. It does
// not allocate for a valid key.
func KeyFaults(key string) []Fault {
	prefix, name, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		name = key
	}
	var faults []Fault
	if hasPrefix {
		if strings.Contains(name, "/") {
			return []Fault{KeySlashes}
		}
		switch {
		case prefix == "":
			faults = append(faults, PrefixEmpty)
		default:
			if len(prefix) > MaxPrefixLength {
				faults = append(faults, PrefixTooLong)
			}
			if !isDNSSubdomain(prefix) {
				faults = append(faults, PrefixChars)
			}
		}
	}
	return nameFaults(faults, name, NameEmpty, NameTooLong, NameChars)
}

// ValueFaults returns every fault of value; none when it is valid. It does
// not allocate for a valid value.
func ValueFaults(value string) []Fault {
	if value == "" {
		return nil
	}
	return nameFaults(nil, value, 0, ValueTooLong, ValueChars)
}

// nameFaults appends the faults of s, a key's name part or a value.
func nameFaults(faults []Fault, s string, empty, tooLong, chars Fault) []Fault {
	if s == "" {
		return append(faults, empty)
	}
	if len(s) > MaxNameLength {
		faults = append(faults, tooLong)
	}
	if !isName(s) {
		faults = append(faults, chars)
	}
	return faults
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// isName matches ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] for non-empty s.
func isName(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// isDNSSubdomain matches [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*.
func isDNSSubdomain(s string) bool {
	for part := range strings.SplitSeq(s, ".") {
		if part == "" || !isLowerAlnum(part[0]) || !isLowerAlnum(part[len(part)-1]) {
			return false
		}
		for i := 1; i < len(part)-1; i++ {
			if c := part[i]; !isLowerAlnum(c) && c != '-' {
				return false
			}
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
