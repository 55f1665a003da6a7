package cmd

import (
	"sort"
	"strings"
	"testing"
)

// TestApplyMultiDocumentPartialFailure applies files whose middle document
// is bad, as kubectl does: every good document is applied, in order, each
// bad one is reported on stderr with its source and index, and the exit
// code is 1. --dry-run=client keeps all-or-nothing: it validates every
// document first and applies nothing if one is invalid.
func TestApplyMultiDocumentPartialFailure(t *testing.T) {
	cases := []struct {
		name    string // short: it names the test's namespace
		args    []string
		stdout  string
		stderr  []string // each must appear in stderr
		applied []string // what the namespace holds afterwards
	}{
		{
			name:   "unknown-field",
			args:   []string{"apply", "-f", manifestPath("partial-unknown-field.yaml")},
			stdout: "configmap/first created\nconfigmap/third created\n",
			stderr: []string{
				`error: error validating "testdata/manifests/partial-unknown-field.yaml" (document 2, ConfigMap "second"): `,
				`flavour: unknown field`,
			},
			applied: []string{"configmap/first", "configmap/third"},
		},
		{
			name:   "server-invalid",
			args:   []string{"apply", "--validate=false", "-f", manifestPath("partial-server-invalid.yaml")},
			stdout: "configmap/first created\nconfigmap/third created\n",
			stderr: []string{
				`Error from server (Invalid): error when creating "testdata/manifests/partial-server-invalid.yaml" (document 2): Deployment "negative" is invalid: spec.replicas: Invalid value: -1`,
			},
			applied: []string{"configmap/first", "configmap/third"},
		},
		{
			name:   "every-problem",
			args:   []string{"apply", "-f", manifestPath("invalid-multi.yaml")},
			stdout: "configmap/fine created\n",
			stderr: []string{
				`(document 2, Deployment "typo")`,
				`(document 3): Deployment "negative" is invalid`,
				`(document 4): no matches for kind "Gadget" in version "v1"`,
			},
			applied: []string{"configmap/fine"},
		},
		{
			name:   "dry-run-client",
			args:   []string{"apply", "--dry-run=client", "-f", manifestPath("partial-unknown-field.yaml")},
			stdout: "",
			stderr: []string{
				`error: error validating "testdata/manifests/partial-unknown-field.yaml" (document 2, ConfigMap "second"): `,
				"error: 1 of 3 objects are invalid: nothing was sent\n",
			},
		},
		{
			name:   "create",
			args:   []string{"create", "-f", manifestPath("partial-unknown-field.yaml")},
			stdout: "configmap/first created\nconfigmap/third created\n",
			stderr: []string{
				`error: error validating "testdata/manifests/partial-unknown-field.yaml" (document 2, ConfigMap "second"): `,
			},
			applied: []string{"configmap/first", "configmap/third"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			r := c.run(tc.args...)
			if r.code != 1 {
				t.Errorf("exit code %d, want 1", r.code)
			}
			if r.out != tc.stdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", r.out, tc.stdout)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(r.err, want) {
					t.Errorf("stderr does not say %q:\n%s", want, r.err)
				}
			}
			var got []string
			for k := range resourceVersions(t, c) {
				got = append(got, k)
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(tc.applied, ",") {
				t.Errorf("the namespace holds %v, want %v", got, tc.applied)
			}
		})
	}
}

// TestApplyServerFailureDoesNotStopLaterDocuments: a document the server
// refuses (a conflict on a pinned resourceVersion) is reported, and the
// documents after it are still applied.
func TestApplyServerFailureDoesNotStopLaterDocuments(t *testing.T) {
	c := newCLI(t)
	c.stdin = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: pinned}\ndata: {v: \"1\"}\n"
	c.ok("apply", "-f", "-")
	c.stdin = `apiVersion: v1
kind: ConfigMap
metadata: {name: pinned, resourceVersion: "1"}
data: {v: "2"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: after}
data: {v: "1"}
`
	r := c.run("apply", "-f", "-")
	if r.code != 1 || r.out != "configmap/after created\n" {
		t.Errorf("exit %d, stdout %q; want 1 and the second document applied", r.code, r.out)
	}
	if want := `Error from server (Conflict): error when updating STDIN (document 1): `; !strings.HasPrefix(r.err, want) {
		t.Errorf("stderr:\n%s\nwant it to start with %q", r.err, want)
	}
}
