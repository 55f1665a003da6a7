package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/manifest"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
)

// waitFor is a parsed --for: what makes an object's wait end.
type waitFor struct {
	what string // "delete", "condition", "jsonpath", "create"
	// condition: the type and wanted status (default True), both
	// compared ignoring case as kubectl does.
	condType, condStatus string
	// jsonpath: the path's fields and the wanted value (hasValue false:
	// the field existing is enough).
	path     []string
	value    string
	hasValue bool
}

// parseWaitFor reads kubectl's --for: "delete", "create",
// "condition=TYPE[=VALUE]", "jsonpath={.a.b}[=VALUE]".
func parseWaitFor(s string) (waitFor, error) {
	switch {
	case strings.EqualFold(s, "delete"):
		return waitFor{what: "delete"}, nil
	case strings.EqualFold(s, "create"):
		return waitFor{what: "create"}, nil
	case strings.HasPrefix(s, "condition="):
		typ, status, ok := strings.Cut(strings.TrimPrefix(s, "condition="), "=")
		if typ == "" {
			return waitFor{}, fmt.Errorf("condition name is required in --for=%s", s)
		}
		if !ok {
			status = "True"
		}
		return waitFor{what: "condition", condType: typ, condStatus: status}, nil
	case strings.HasPrefix(s, "jsonpath="):
		expr := strings.TrimPrefix(s, "jsonpath=")
		path, value, hasValue := expr, "", false
		if i := strings.Index(expr, "}"); i >= 0 && i+1 < len(expr) && expr[i+1] == '=' {
			path, value, hasValue = expr[:i+1], expr[i+2:], true
		} else if !strings.HasPrefix(expr, "{") {
			path, value, hasValue = strings.Cut(expr, "=")
		}
		path = strings.TrimSuffix(strings.TrimPrefix(path, "{"), "}")
		if !strings.HasPrefix(path, ".") || len(path) < 2 {
			return waitFor{}, fmt.Errorf("jsonpath wait format must be --for=jsonpath='{.status.readyReplicas}'=3: %q", s)
		}
		return waitFor{what: "jsonpath", path: strings.Split(path[1:], "."), value: value, hasValue: hasValue}, nil
	}
	return waitFor{}, fmt.Errorf("unrecognized condition: %q", s)
}

// met reports whether obj satisfies the wait (obj nil: not there).
func (w waitFor) met(obj object.Object) bool {
	switch w.what {
	case "delete":
		return obj == nil
	case "create":
		return obj != nil
	case "condition":
		return obj != nil && conditionMet(obj, w.condType, w.condStatus)
	case "jsonpath":
		if obj == nil {
			return false
		}
		v, ok := lookupPath(manifest.Encode(obj), w.path)
		if !ok {
			return false
		}
		return !w.hasValue || jsonValueString(v) == w.value
	}
	return false
}

// conditionMet: status.conditions has typ with status (ignoring case),
// observed at the object's generation when the condition says.
func conditionMet(obj object.Object, typ, status string) bool {
	m := manifest.Encode(obj)
	st, _ := m["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		t, _ := cm["type"].(string)
		if !strings.EqualFold(t, typ) {
			continue
		}
		if og, ok := cm["observedGeneration"]; ok {
			if n, err := strconv.ParseInt(jsonValueString(og), 10, 64); err == nil && n < obj.GetMetadata().GetGeneration() {
				return false
			}
		}
		s, _ := cm["status"].(string)
		return strings.EqualFold(s, status)
	}
	return false
}

// lookupPath follows fields ("spec", "containers[0]", "name") in the
// object's JSON shape.
func lookupPath(v any, path []string) (any, bool) {
	for _, f := range path {
		name, idx := f, -1
		if i := strings.Index(f, "["); i >= 0 && strings.HasSuffix(f, "]") {
			n, err := strconv.Atoi(f[i+1 : len(f)-1])
			if err != nil {
				return nil, false
			}
			name, idx = f[:i], n
		}
		if name != "" {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[name]; !ok {
				return nil, false
			}
		}
		if idx >= 0 {
			l, ok := v.([]any)
			if !ok || idx >= len(l) {
				return nil, false
			}
			v = l[idx]
		}
	}
	return v, true
}

func jsonValueString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func (r *root) waitCmd() *cobra.Command {
	var (
		files    fileFlags
		selector string
		all      bool
		allNs    bool
		forFlag  string
		timeout  time.Duration
	)
	c := &cobra.Command{
		Use:   "wait ([-f FILENAME] | resource.group/resource.name | resource.group [(-l label | --all)]) [--for=delete|--for=create|--for condition=available|--for=jsonpath='{}'[=value]]",
		Short: "Experimental: Wait for a specific condition on one or many resources",
		Long: `Wait for a condition on one or many objects, as kubectl wait: a condition
of status.conditions (--for=condition=Complete, or =False...), the object's
deletion (--for=delete), its creation (--for=create) or a field's value
(--for=jsonpath='{.status.phase}'=Running). It prints "<kind>/<name>
condition met" for each, or fails after --timeout (default 30s; 0: check
once).`,
		Example: `  skiffctl wait --for=condition=complete job/pi --timeout=60s
  skiffctl wait --for=delete pod/busybox --timeout=60s
  skiffctl wait --for=jsonpath='{.status.phase}'=Running pod/web`,
		ValidArgsFunction: completeResourceTypes,
		RunE: func(cmd *cobra.Command, args []string) error {
			if forFlag == "" {
				return errors.New("--for must be specified")
			}
			w, err := parseWaitFor(forFlag)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if timeout < 0 {
				timeout = 7 * 24 * time.Hour
			}
			refs, err := r.collect(ctx, args, &files, selector, all, allNs)
			if err != nil {
				return err
			}
			if len(refs) == 0 {
				return errors.New("no matching resources found")
			}
			deadline := time.Now().Add(timeout)
			for _, ref := range refs {
				if err := r.waitOne(ctx, ref, w, deadline, timeout == 0); err != nil {
					return err
				}
				fmt.Fprintf(r.env.Out, "%s condition met\n", ref.kind.Ref(ref.name))
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringSliceVarP(&files.files, "filename", "f", nil, "wait for the objects of these manifests")
	f.BoolVarP(&files.recursive, "recursive", "R", false, "process the directories of -f recursively")
	f.StringVarP(&selector, "selector", "l", "", "label selector")
	f.BoolVar(&all, "all", false, "every object of the types given, in the namespace")
	f.BoolVarP(&allNs, "all-namespaces", "A", false, "with -l or --all, across all namespaces")
	f.StringVar(&forFlag, "for", "", "the condition to wait on: [create|delete|condition=condition-name[=condition-value]|jsonpath='{JSONPath expression}'=[JSONPath value]]")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait before giving up (0: check once; negative: a week)")
	return c
}

// waitOne waits until ref meets w or the deadline passes: it reads the
// object and watches it from that revision, reading it again after a
// watch ends.
func (r *root) waitOne(ctx context.Context, ref objectRef, w waitFor, deadline time.Time, once bool) error {
	conn, err := r.connect()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	cl := ref.kind.Client(conn)
	timedOut := func() error {
		return &exitError{code: 1, msg: fmt.Sprintf("timed out waiting for the condition on %s/%s", ref.kind.Resource, ref.name)}
	}
	// expired: the wait's deadline passed, seen by the client or first by
	// the server, which enforces the call's propagated deadline.
	expired := func(err error) bool {
		return ctx.Err() != nil || apierrors.ReasonForError(err) == apierrors.ReasonTimeout && !time.Now().Before(deadline.Add(-time.Second))
	}
	for {
		obj, err := cl.Get(ctx, ref.namespace, ref.name)
		rv := ""
		switch {
		case apierrors.IsNotFound(err):
			if w.what != "delete" && w.what != "create" {
				return err
			}
			obj = nil
		case err != nil:
			if expired(err) {
				return timedOut()
			}
			return err
		default:
			rv = obj.GetMetadata().GetResourceVersion()
		}
		if w.met(obj) {
			return nil
		}
		if once {
			return timedOut()
		}
		watch, err := cl.Watch(ctx, &metav1.ListOptions{Namespace: ref.namespace, FieldSelector: "metadata.name=" + ref.name, ResourceVersion: rv})
		if err != nil {
			if expired(err) {
				return timedOut()
			}
			return err
		}
		for {
			typ, o, err := watch.Next()
			if err != nil {
				watch.Stop()
				if expired(err) {
					return timedOut()
				}
				if errors.Is(err, io.EOF) || apierrors.IsServiceUnavailable(err) || apierrors.IsExpired(err) {
					break
				}
				return err
			}
			if typ == "DELETED" {
				o = nil
			} else if typ == "BOOKMARK" {
				continue
			}
			if w.met(o) {
				watch.Stop()
				return nil
			}
		}
	}
}
