package audit

import (
	"flag"
	"fmt"
	"slices"
	"strings"
)

// Level is how much of a request is logged.
type Level string

// The levels, as Kubernetes names them.
const (
	LevelNone            Level = "None"
	LevelMetadata        Level = "Metadata"
	LevelRequest         Level = "Request"
	LevelRequestResponse Level = "RequestResponse"
)

var levels = []Level{LevelNone, LevelMetadata, LevelRequest, LevelRequestResponse}

// atLeast says whether l logs as much as o ("" is None).
func (l Level) atLeast(o Level) bool { return slices.Index(levels, l) >= slices.Index(levels, o) }

// Verbs that --audit-omit-verbs may name.
var Verbs = []string{"create", "get", "list", "update", "delete", "watch"}

// Options are the audit flags of skiff-apiserver. The zero value is off
// (level None, no file).
type Options struct {
	// Path is the file events are appended to; "-" is standard output;
	// "" writes none.
	Path string
	// Level is how much is logged ("" is None).
	Level Level
	// OmitVerbs are verbs not logged at all (get, list, watch keep the log
	// small).
	OmitVerbs []string
	// BufferSize is how many events may wait for the writer
	// (0: DefaultBufferSize); more are dropped and counted.
	BufferSize int
}

// DefaultBufferSize is the default --audit-log-buffer-size.
const DefaultBufferSize = 10000

// AddFlags registers the options' flags on fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	if o.Level == "" {
		o.Level = LevelMetadata
	}
	fs.StringVar(&o.Path, "audit-log-path", o.Path,
		`append the audit log (one JSON line per request, audit.k8s.io/v1 Events) to this file; "-" is standard output; empty: no audit log`)
	fs.Var((*levelFlag)(&o.Level), "audit-level",
		"how much of each request the audit log holds: None, Metadata (user, verb, resource, namespace, name, result and times), Request (and the request message) or RequestResponse (and the response message)")
	fs.Var((*verbsFlag)(&o.OmitVerbs), "audit-omit-verbs",
		"comma-separated verbs not audited, e.g. get,list,watch to keep the log small (verbs: "+strings.Join(Verbs, ", ")+")")
	fs.IntVar(&o.BufferSize, "audit-log-buffer-size", DefaultBufferSize,
		"events that may wait for the audit log's writer; when it falls that far behind, events are dropped (never waited for) and counted in apiserver_audit_error_total")
}

// Enabled says whether events are written.
func (o Options) Enabled() bool { return o.Path != "" && o.Level != "" && o.Level != LevelNone }

// Validate checks the options, naming the flag at fault.
func (o Options) Validate() error {
	if o.Level != "" && !slices.Contains(levels, o.Level) {
		return fmt.Errorf("--audit-level=%s: not a level (None, Metadata, Request, RequestResponse)", o.Level)
	}
	for _, v := range o.OmitVerbs {
		if !slices.Contains(Verbs, v) {
			return fmt.Errorf("--audit-omit-verbs: %q is not a verb (%s)", v, strings.Join(Verbs, ", "))
		}
	}
	if o.BufferSize < 0 {
		return fmt.Errorf("--audit-log-buffer-size=%d: must be 0 (the default, %d) or more", o.BufferSize, DefaultBufferSize)
	}
	return nil
}

type levelFlag Level

func (f *levelFlag) String() string { return string(*f) }

func (f *levelFlag) Set(s string) error {
	for _, l := range levels {
		if strings.EqualFold(s, string(l)) {
			*f = levelFlag(l)
			return nil
		}
	}
	return fmt.Errorf("not a level: %q (None, Metadata, Request, RequestResponse)", s)
}

type verbsFlag []string

func (f *verbsFlag) String() string { return strings.Join(*f, ",") }

func (f *verbsFlag) Set(s string) error {
	*f = nil
	for _, v := range strings.Split(s, ",") {
		if v = strings.ToLower(strings.TrimSpace(v)); v == "" {
			continue
		}
		if !slices.Contains(Verbs, v) {
			return fmt.Errorf("not a verb: %q (%s)", v, strings.Join(Verbs, ", "))
		}
		*f = append(*f, v)
	}
	return nil
}
