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

const (
	nameCharsMsg = "consist of alphanumeric characters, '-', '_' or '.', " +
		"and must start and end with an alphanumeric character"
	prefixCharsMsg = "must be a lowercase RFC 1123 subdomain: lowercase alphanumeric " +
		"characters, '-' or '.', each dot-separated part starting and ending with an alphanumeric character"
)

// ValidateKey reports whether key is a valid label key: an optional
// DNS-subdomain prefix (at most 253 characters) and '/', then a name of at
// most 63 characters matching ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].
func ValidateKey(key string) error {
	if why := keyProblem(key); why != "" {
		return fmt.Errorf("%w key %q: %s", ErrInvalidLabel, key, why)
	}
	return nil
}

// ValidateValue reports whether value is a valid label value: empty, or at
// most 63 characters matching ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].
func ValidateValue(value string) error {
	if why := valueProblem(value); why != "" {
		return fmt.Errorf("%w value %q: %s", ErrInvalidLabel, value, why)
	}
	return nil
}

// keyProblem returns why key is invalid, or "".
func keyProblem(key string) string {
	prefix, name, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		name = key
	}
	if hasPrefix {
		if strings.Contains(name, "/") {
			return "must be a name with an optional prefix and one '/' (e.g. 'example.com/my-name')"
		}
		switch {
		case prefix == "":
			return "prefix part must not be empty"
		case len(prefix) > MaxPrefixLength:
			return fmt.Sprintf("prefix part must be no more than %d characters", MaxPrefixLength)
		case !isDNSSubdomain(prefix):
			return "prefix part " + prefixCharsMsg
		}
	}
	switch {
	case name == "":
		return "name part must not be empty"
	case len(name) > MaxNameLength:
		return fmt.Sprintf("name part must be no more than %d characters", MaxNameLength)
	case !isName(name):
		return "name part must " + nameCharsMsg
	}
	return ""
}

// valueProblem returns why value is invalid, or "".
func valueProblem(value string) string {
	switch {
	case value == "":
		return ""
	case len(value) > MaxNameLength:
		return fmt.Sprintf("must be no more than %d characters", MaxNameLength)
	case !isName(value):
		return "must be empty or " + nameCharsMsg
	}
	return ""
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
