package config

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The file's apiVersion and kind.
const (
	APIVersion = "kubescheduler.config.k8s.io/v1"
	Kind       = "KubeSchedulerConfiguration"
)

// Error is one problem of a policy file, at a line and column.
type Error struct {
	File   string
	Line   int
	Column int
	Path   string // the field, e.g. profiles[0].plugins.score.enabled[1].name
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	if e.Column > 0 {
		fmt.Fprintf(&b, "%d:%d: ", e.Line, e.Column)
	} else {
		fmt.Fprintf(&b, "%d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem of a file, in file order.
type ErrorList []*Error

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Load reads and validates the policy file at path.
func Load(path string, known KnownPlugins) (*Configuration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the scheduler config: %w", err)
	}
	return Parse(path, data, known)
}

// Default is the configuration without a file: one profile,
// default-scheduler, with the default plugins.
func Default(known KnownPlugins) *Configuration {
	c, err := Parse("", nil, known)
	if err != nil {
		panic(fmt.Sprintf("the default scheduler config is invalid: %v", err))
	}
	return c
}

// Parse validates a policy file's content; name is used in errors. An
// empty file is the default configuration.
func Parse(name string, data []byte, known KnownPlugins) (*Configuration, error) {
	d := &decoder{file: name, known: known}
	cfg := &Configuration{
		Parallelism:                       DefaultParallelism,
		PodInitialBackoff:                 DefaultPodInitialBackoff,
		PodMaxBackoff:                     DefaultPodMaxBackoff,
		PodMaxInUnschedulablePodsDuration: DefaultPodMaxInUnschedulablePodsDuration,
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, d.syntaxError(data, err)
	}
	var profiles []*yaml.Node
	var profilesNode *yaml.Node
	if len(doc.Content) > 0 {
		root := resolve(doc.Content[0])
		var apiVersion, kind string
		var initialS, maxS int64 = -1, -1
		var initialN, maxN *yaml.Node
		d.mapping(root, "", map[string]func(*yaml.Node, string){
			"apiVersion": func(v *yaml.Node, p string) { d.str(v, p, &apiVersion) },
			"kind":       func(v *yaml.Node, p string) { d.str(v, p, &kind) },
			"parallelism": func(v *yaml.Node, p string) {
				var n int64
				if d.int(v, p, &n) {
					if n < 1 {
						d.fail(v, p, "must be at least 1, not %d", n)
					}
					cfg.Parallelism = int(n)
				}
			},
			"percentageOfNodesToScore": func(v *yaml.Node, p string) {
				if n, ok := d.percentage(v, p); ok {
					cfg.PercentageOfNodesToScore = n
				}
			},
			"podInitialBackoffSeconds": func(v *yaml.Node, p string) {
				if d.int(v, p, &initialS) {
					initialN = v
				}
			},
			"podMaxBackoffSeconds": func(v *yaml.Node, p string) {
				if d.int(v, p, &maxS) {
					maxN = v
				}
			},
			"leaderElection": func(v *yaml.Node, p string) { d.leaderElection(v, p, &cfg.LeaderElection) },
			// The connection is --server's; a kube-scheduler's section is accepted and ignored.
			"clientConnection": func(*yaml.Node, string) {},
			"profiles": func(v *yaml.Node, p string) {
				profilesNode = v
				profiles = d.seq(v, p)
			},
			"extenders":                 d.unsupported("scheduler extenders are not supported by skiff-scheduler"),
			"healthzBindAddress":        d.unsupported("not supported: use the --metrics-listen flag"),
			"metricsBindAddress":        d.unsupported("not supported: use the --metrics-listen flag"),
			"enableProfiling":           d.unsupported("not supported by skiff-scheduler"),
			"enableContentionProfiling": d.unsupported("not supported by skiff-scheduler"),
			"delayCacheUntilActive":     d.unsupported("not supported by skiff-scheduler"),
		})
		if root.Kind == yaml.MappingNode {
			if apiVersion != APIVersion {
				d.failField(root, "", "apiVersion", "must be %q, not %q", APIVersion, apiVersion)
			}
			if kind != Kind {
				d.failField(root, "", "kind", "must be %q, not %q", Kind, kind)
			}
		}
		if initialN != nil {
			if initialS < 1 {
				d.fail(initialN, "podInitialBackoffSeconds", "must be at least 1, not %d", initialS)
			} else {
				cfg.PodInitialBackoff = time.Duration(initialS) * time.Second
			}
		}
		if maxN != nil {
			switch {
			case maxS < 1:
				d.fail(maxN, "podMaxBackoffSeconds", "must be at least 1, not %d", maxS)
			default:
				cfg.PodMaxBackoff = time.Duration(maxS) * time.Second
			}
		}
		if cfg.PodMaxBackoff < cfg.PodInitialBackoff {
			at := cmp.Or(maxN, initialN)
			d.fail(at, "podMaxBackoffSeconds", "must not be less than podInitialBackoffSeconds (%v < %v)", cfg.PodMaxBackoff, cfg.PodInitialBackoff)
		}
	}

	names := map[string]*yaml.Node{}
	for i, pn := range profiles {
		path := fmt.Sprintf("profiles[%d]", i)
		p := d.profile(pn, path)
		if prev, dup := names[p.SchedulerName]; dup {
			d.failField(pn, path, "schedulerName", "duplicate schedulerName %q (also at line %d)", p.SchedulerName, prev.Line)
		} else {
			names[p.SchedulerName] = pn
		}
		cfg.Profiles = append(cfg.Profiles, p)
	}
	if profilesNode != nil && len(profiles) == 0 && profilesNode.Kind == yaml.SequenceNode {
		d.fail(profilesNode, "profiles", "must list at least one profile (or be left out for the default)")
	}
	if profilesNode == nil {
		cfg.Profiles = []Profile{d.profile(nil, "profiles[0]")}
	}
	if len(d.errs) > 0 {
		slices.SortStableFunc(d.errs, func(a, b *Error) int {
			return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
		})
		return nil, d.errs
	}
	return cfg, nil
}

// decoder walks the YAML tree, collecting errors with positions.
type decoder struct {
	file  string
	known KnownPlugins
	errs  ErrorList
}

// syntaxError turns a YAML parse error into an Error at the line where
// the document stops being valid. yaml.v3 reports the line where the
// enclosing block starts (or none for the first line), so the line is
// found by parsing ever longer prefixes of the file: the first prefix that
// fails ends at the bad line.
func (d *decoder) syntaxError(data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if _, after, ok := strings.Cut(rest, ": "); ok {
			msg = after
		}
	}
	line := 1
	lines := strings.SplitAfter(string(data), "\n")
	for k := 1; k <= len(lines); k++ {
		var n yaml.Node
		if yaml.Unmarshal([]byte(strings.Join(lines[:k], "")), &n) != nil {
			line = k
			break
		}
	}
	return ErrorList{{File: d.file, Line: line, Msg: "invalid YAML: " + msg}}
}

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	e := &Error{File: d.file, Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

// failField reports a problem of field name of mapping n at path: at the
// field's value if present, else at the mapping.
func (d *decoder) failField(n *yaml.Node, path, name, format string, args ...any) {
	at := n
	if n != nil && n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				at = n.Content[i+1]
				break
			}
		}
	}
	d.fail(at, joinPath(path, name), format, args...)
}

func (d *decoder) unsupported(msg string) func(*yaml.Node, string) {
	return func(v *yaml.Node, p string) { d.fail(v, p, "%s", msg) }
}

func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	default:
		return "something else"
	}
}

// mapping walks mapping n: each key must be one of fields (an unknown or
// repeated key is an error at the key) and its value goes to the field's
// function. A null value (an empty section) is an empty mapping.
func (d *decoder) mapping(n *yaml.Node, path string, fields map[string]func(v *yaml.Node, path string)) {
	n = resolve(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "must be a mapping, not %s", describe(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		p := joinPath(path, k.Value)
		if seen[k.Value] {
			d.fail(k, p, "repeated field")
			continue
		}
		seen[k.Value] = true
		fn, ok := fields[k.Value]
		if !ok {
			known := make([]string, 0, len(fields))
			for name := range fields {
				known = append(known, name)
			}
			slices.Sort(known)
			d.fail(k, p, "unknown field %q (known: %s)", k.Value, strings.Join(known, ", "))
			continue
		}
		fn(v, p)
	}
}

// seq returns the items of list n (none for null).
func (d *decoder) seq(n *yaml.Node, path string) []*yaml.Node {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "must be a list, not %s", describe(n))
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = resolve(c)
	}
	return out
}

func (d *decoder) str(n *yaml.Node, path string, out *string) bool {
	if isNull(n) {
		return false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		d.fail(n, path, "must be a string, not %s", describe(n))
		return false
	}
	*out = n.Value
	return true
}

func (d *decoder) int(n *yaml.Node, path string, out *int64) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		d.fail(n, path, "must be an integer, not %s", describe(n))
		return false
	}
	if err := n.Decode(out); err != nil {
		d.fail(n, path, "must be an integer: %v", err)
		return false
	}
	return true
}

func (d *decoder) bool(n *yaml.Node, path string, out *bool) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		d.fail(n, path, "must be true or false, not %s", describe(n))
		return false
	}
	return n.Decode(out) == nil
}

func (d *decoder) duration(n *yaml.Node, path string, out *time.Duration) bool {
	var s string
	if !d.str(n, path, &s) {
		return false
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		d.fail(n, path, "must be a positive duration such as \"15s\", not %q", s)
		return false
	}
	*out = v
	return true
}

func (d *decoder) percentage(n *yaml.Node, path string) (int32, bool) {
	var v int64
	if !d.int(n, path, &v) {
		return 0, false
	}
	if v < 0 || v > 100 {
		d.fail(n, path, "must be between 0 and 100 (0: adaptive), not %d", v)
		return 0, false
	}
	return int32(v), true
}

func (d *decoder) leaderElection(n *yaml.Node, path string, le *LeaderElection) {
	d.mapping(n, path, map[string]func(*yaml.Node, string){
		"leaderElect": func(v *yaml.Node, p string) {
			var b bool
			if d.bool(v, p, &b) {
				le.LeaderElect = &b
			}
		},
		"leaseDuration": func(v *yaml.Node, p string) { d.duration(v, p, &le.LeaseDuration) },
		"renewDeadline": func(v *yaml.Node, p string) { d.duration(v, p, &le.RenewDeadline) },
		"retryPeriod":   func(v *yaml.Node, p string) { d.duration(v, p, &le.RetryPeriod) },
		"resourceLock": func(v *yaml.Node, p string) {
			var s string
			if d.str(v, p, &s) && s != "leases" {
				d.fail(v, p, "must be \"leases\" (the only lock skiff-scheduler knows), not %q", s)
			}
		},
		"resourceName":      func(v *yaml.Node, p string) { d.str(v, p, &le.ResourceName) },
		"resourceNamespace": func(v *yaml.Node, p string) { d.str(v, p, &le.ResourceNamespace) },
	})
	if le.LeaseDuration > 0 && le.RenewDeadline > 0 && le.RenewDeadline >= le.LeaseDuration {
		d.fail(n, path+".renewDeadline", "must be less than leaseDuration (%v >= %v)", le.RenewDeadline, le.LeaseDuration)
	}
	if le.RenewDeadline > 0 && le.RetryPeriod > 0 && le.RetryPeriod >= le.RenewDeadline {
		d.fail(n, path+".retryPeriod", "must be less than renewDeadline (%v >= %v)", le.RetryPeriod, le.RenewDeadline)
	}
}
