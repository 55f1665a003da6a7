package validation

import (
	"fmt"
	"regexp"
	"strings"

	"skiff.dev/internal/labels"
)

// The name and key formats of Kubernetes' apimachinery util/validation,
// with its messages, so clients see the wording they know. Label keys and
// values (and the qualified names that share their rule) are checked by
// package labels; their formats here only word its faults.

const (
	dns1123LabelFmt         = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	dns1123LabelErrMsg      = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
	dns1123LabelMaxLength   = 63
	dns1123SubdomainFmt     = dns1123LabelFmt + "(\\." + dns1123LabelFmt + ")*"
	dns1123SubdomainErrMsg  = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
	dns1123SubdomainMaxLen  = 253
	qualifiedNameCharFmt    = "[A-Za-z0-9]"
	qualifiedNameExtCharFmt = "[-A-Za-z0-9_.]"
	qualifiedNameFmt        = "(" + qualifiedNameCharFmt + qualifiedNameExtCharFmt + "*)?" + qualifiedNameCharFmt
	qualifiedNameErrMsg     = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	labelValueFmt           = "(" + qualifiedNameFmt + ")?"
	labelValueErrMsg        = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	envVarNameFmt           = "[-._a-zA-Z][-._a-zA-Z0-9]*"
	envVarNameErrMsg        = "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit"
	configMapKeyFmt         = `[-._a-zA-Z0-9]+`
	configMapKeyErrMsg      = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
	percentFmt              = "[0-9]+%"
	percentErrMsg           = "a valid percent string must be a numeric string followed by an ending '%'"
	httpHeaderNameFmt       = "[-A-Za-z0-9]+"
	httpHeaderNameErrMsg    = "a valid HTTP header must consist of alphanumeric characters or '-'"
	portNameMaxLength       = 15
)

var (
	envVarNameRegexp       = regexp.MustCompile("^" + envVarNameFmt + "$")
	percentRegexp          = regexp.MustCompile("^" + percentFmt + "$")
	httpHeaderNameRegexp   = regexp.MustCompile("^" + httpHeaderNameFmt + "$")
	portNameCharsetRegexp  = regexp.MustCompile("^[-a-z0-9]+$")
	portNameOneLetterRegex = regexp.MustCompile("[a-z]")
)

// NameIsDNSSubdomain is the name rule of most kinds (pods, deployments,
// nodes, configmaps, ...): a lowercase RFC 1123 subdomain of at most 253
// characters. It returns one message per problem, none when valid.
func NameIsDNSSubdomain(name string) []string { return isDNS1123Subdomain(name) }

// NameIsDNSLabel is the name rule of namespaces: a lowercase RFC 1123 label
// of at most 63 characters.
func NameIsDNSLabel(name string) []string { return isDNS1123Label(name) }

// The three checks below match dns1123LabelFmt, dns1123SubdomainFmt and
// configMapKeyFmt byte by byte: names are checked on every write, and a
// loop is many times cheaper than the regular expressions.

func isAlnumLower(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func isLabelChars(s string) bool {
	if s == "" || !isAlnumLower(s[0]) || !isAlnumLower(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnumLower(c) && c != '-' {
			return false
		}
	}
	return true
}

func isSubdomainChars(s string) bool {
	for {
		label, rest, more := strings.Cut(s, ".")
		if !isLabelChars(label) {
			return false
		}
		if !more {
			return true
		}
		s = rest
	}
}

func isConfigKeyChars(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isAlnumLower(c) || 'A' <= c && c <= 'Z' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

func isDNS1123Label(value string) []string {
	var errs []string
	if len(value) > dns1123LabelMaxLength {
		errs = append(errs, maxLenError(dns1123LabelMaxLength))
	}
	if !isLabelChars(value) {
		if isSubdomainChars(value) {
			// A valid subdomain but not a label: it has dots.
			errs = append(errs, "must not contain dots")
		} else {
			errs = append(errs, regexError(dns1123LabelErrMsg, dns1123LabelFmt, "my-name", "123-abc"))
		}
	}
	return errs
}

func isDNS1123Subdomain(value string) []string {
	var errs []string
	if len(value) > dns1123SubdomainMaxLen {
		errs = append(errs, maxLenError(dns1123SubdomainMaxLen))
	}
	if !isSubdomainChars(value) {
		errs = append(errs, regexError(dns1123SubdomainErrMsg, dns1123SubdomainFmt, "example.com"))
	}
	return errs
}

// isQualifiedName checks a label key, annotation key, finalizer or resource
// name: an optional DNS subdomain prefix and '/', then a name of at most 63
// characters. The rule is package labels' (a label key); this only words
// its faults as Kubernetes does.
func isQualifiedName(value string) []string { return faultMessages(labels.KeyFaults(value)) }

// isValidLabelValue checks a label value by package labels' rule.
func isValidLabelValue(value string) []string { return faultMessages(labels.ValueFaults(value)) }

// labelFaultMessages are Kubernetes' messages for the faults package labels
// finds in a label key (a qualified name) or value. Kubernetes also reports
// an empty name as not matching the name pattern.
var labelFaultMessages = map[labels.Fault][]string{
	labels.KeySlashes: {"a qualified name " + regexError(qualifiedNameErrMsg, qualifiedNameFmt, "MyName", "my.name", "123-abc") +
		" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"},
	labels.PrefixEmpty:   {"prefix part must be non-empty"},
	labels.PrefixTooLong: {"prefix part " + maxLenError(labels.MaxPrefixLength)},
	labels.PrefixChars:   {"prefix part " + regexError(dns1123SubdomainErrMsg, dns1123SubdomainFmt, "example.com")},
	labels.NameEmpty:     {"name part must be non-empty", qualifiedNamePartMsg},
	labels.NameTooLong:   {"name part " + maxLenError(labels.MaxNameLength)},
	labels.NameChars:     {qualifiedNamePartMsg},
	labels.ValueTooLong:  {maxLenError(labels.MaxNameLength)},
	labels.ValueChars:    {regexError(labelValueErrMsg, labelValueFmt, "MyValue", "my_value", "12345")},
}

var qualifiedNamePartMsg = "name part " + regexError(qualifiedNameErrMsg, qualifiedNameFmt, "MyName", "my.name", "123-abc")

func faultMessages(faults []labels.Fault) []string {
	var msgs []string
	for _, f := range faults {
		if m, ok := labelFaultMessages[f]; ok {
			msgs = append(msgs, m...)
		} else {
			msgs = append(msgs, f.String())
		}
	}
	return msgs
}

func isEnvVarName(value string) []string {
	var errs []string
	if !envVarNameRegexp.MatchString(value) {
		errs = append(errs, regexError(envVarNameErrMsg, envVarNameFmt, "my.env-name", "MY_ENV.NAME", "MyEnvName1"))
	}
	return append(errs, hasChDirPrefix(value)...)
}

func isConfigMapKey(value string) []string {
	var errs []string
	if len(value) > dns1123SubdomainMaxLen {
		errs = append(errs, maxLenError(dns1123SubdomainMaxLen))
	}
	if !isConfigKeyChars(value) {
		errs = append(errs, regexError(configMapKeyErrMsg, configMapKeyFmt, "key.name", "KEY_NAME", "key-name"))
	}
	return append(errs, hasChDirPrefix(value)...)
}

// hasChDirPrefix rejects names that would walk up a directory when used as
// a file name (config keys are projected into volumes).
func hasChDirPrefix(value string) []string {
	switch {
	case value == ".":
		return []string{"must not be '.'"}
	case value == "..":
		return []string{"must not be '..'"}
	case strings.HasPrefix(value, ".."):
		return []string{"must not start with '..'"}
	}
	return nil
}

// isValidPortName checks an IANA service name, the form of a named port.
func isValidPortName(port string) []string {
	var errs []string
	if len(port) > portNameMaxLength {
		errs = append(errs, maxLenError(portNameMaxLength))
	}
	if !portNameCharsetRegexp.MatchString(port) {
		errs = append(errs, "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
	}
	if !portNameOneLetterRegex.MatchString(port) {
		errs = append(errs, "must contain at least one letter (a-z)")
	}
	if strings.Contains(port, "--") {
		errs = append(errs, "must not contain consecutive hyphens")
	}
	if port != "" && (port[0] == '-' || port[len(port)-1] == '-') {
		errs = append(errs, "must not begin or end with a hyphen")
	}
	return errs
}

func isValidPortNum(port int64) []string {
	if 1 <= port && port <= 65535 {
		return nil
	}
	return []string{inclusiveRangeError(1, 65535)}
}

func isValidPercent(s string) []string {
	if !percentRegexp.MatchString(s) {
		return []string{regexError(percentErrMsg, percentFmt, "1%", "93%")}
	}
	return nil
}

func isHTTPHeaderName(s string) []string {
	if !httpHeaderNameRegexp.MatchString(s) {
		return []string{regexError(httpHeaderNameErrMsg, httpHeaderNameFmt, "X-Header-Name")}
	}
	return nil
}

// maskTrailingDash lets a generateName prefix end in '-': the server appends
// a random suffix, so the name it makes will not end with one.
func maskTrailingDash(name string) string {
	if len(name) > 1 && strings.HasSuffix(name, "-") {
		return name[:len(name)-1] + "a"
	}
	return name
}

func regexError(msg, format string, examples ...string) string {
	if len(examples) == 0 {
		return msg + " (regex used for validation is '" + format + "')"
	}
	msg += " (e.g. "
	for i, e := range examples {
		if i > 0 {
			msg += " or "
		}
		msg += "'" + e + "', "
	}
	return msg + "regex used for validation is '" + format + "')"
}

func maxLenError(n int) string { return fmt.Sprintf("must be no more than %d characters", n) }

func inclusiveRangeError(lo, hi int64) string {
	return fmt.Sprintf("must be between %d and %d, inclusive", lo, hi)
}

const (
	dns1035LabelErrMsg = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character"
)

// NameIsDNS1035Label is the name rule of Services: a lowercase RFC 1035
// label of at most 63 characters (an RFC 1123 label that starts with a
// letter), so that the name is a DNS name on its own.
func NameIsDNS1035Label(name string) []string {
	var msgs []string
	if len(name) > dns1123LabelMaxLength {
		msgs = append(msgs, maxLenError(dns1123LabelMaxLength))
	}
	ok := name != "" && 'a' <= name[0] && name[0] <= 'z' && isAlnumLower(name[len(name)-1])
	for i := 0; ok && i < len(name); i++ {
		ok = isAlnumLower(name[i]) || name[i] == '-'
	}
	if !ok {
		msgs = append(msgs, regexError(dns1035LabelErrMsg, "[a-z]([-a-z0-9]*[a-z0-9])?", "my-name", "abc-123"))
	}
	return msgs
}
