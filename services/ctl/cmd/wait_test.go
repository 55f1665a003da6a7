package cmd

import (
	"context"
	"strings"
	"testing"

	"skiff.dev/internal/client"
	batchv1 "skiff.dev/proto/batch/v1"
)

const piJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: pi
        image: perl:5.34.0
        command: ["perl", "-Mbignum=bpi", "-wle", "print bpi(200)"]
`

func TestParseWaitFor(t *testing.T) {
	cases := []struct {
		in   string
		want string // "what type status path value hasValue", or "error"
	}{
		{"delete", "delete"},
		{"condition=Complete", "condition Complete True"},
		{"condition=Ready=false", "condition Ready false"},
		{"condition=", "error"},
		{"jsonpath={.status.phase}=Running", "jsonpath status,phase Running true"},
		{"jsonpath={.status.containerStatuses[0].ready}", "jsonpath status,containerStatuses[0],ready  false"},
		{"jsonpath=.status.phase=Running", "jsonpath status,phase Running true"},
		{"jsonpath={}", "error"},
		{"ready", "error"},
	}
	for _, c := range cases {
		w, err := parseWaitFor(c.in)
		got := "error"
		if err == nil {
			switch w.what {
			case "condition":
				got = strings.Join([]string{w.what, w.condType, w.condStatus}, " ")
			case "jsonpath":
				got = strings.Join([]string{w.what, strings.Join(w.path, ","), w.value, map[bool]string{true: "true", false: "false"}[w.hasValue]}, " ")
			default:
				got = w.what
			}
		}
		if got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

func TestWaitForJob(t *testing.T) {
	c := newCLI(t)
	c.stdin = piJob
	c.ok("apply", "-f", "-")
	if got := c.fails("wait", "--for=condition=complete", "job/pi", "--timeout=300ms"); got != "error: timed out waiting for the condition on jobs/pi\n" {
		t.Errorf("timeout: %q", got)
	}
	// The waits in the background run on a copy of the CLI (run is not
	// safe for concurrent use).
	bg := *c
	done := make(chan result, 1)
	go func() { done <- bg.run("wait", "--for=condition=complete", "job/pi", "--timeout=30s") }()
	// Finish the Job as its controller would.
	ctx := context.Background()
	jobs := client.Jobs(shared.Conn)
	j, err := jobs.Get(ctx, c.ns, "pi")
	if err != nil {
		t.Fatal(err)
	}
	j.Status = &batchv1.JobStatus{Succeeded: 1, Conditions: []*batchv1.JobCondition{
		{Type: "SuccessCriteriaMet", Status: "True", Reason: "CompletionsReached"},
		{Type: "Complete", Status: "True", Reason: "CompletionsReached"}}}
	if _, err := jobs.UpdateStatus(ctx, j); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.code != 0 || r.out != "job.batch/pi condition met\n" {
		t.Errorf("wait: exit %d, out %q, err %q", r.code, r.out, r.err)
	}
	if got := c.ok("wait", "--for=jsonpath={.status.succeeded}=1", "job/pi"); got != "job.batch/pi condition met\n" {
		t.Errorf("jsonpath: %q", got)
	}
	if got := c.fails("wait", "--for=condition=Failed", "job/pi", "--timeout=0"); !strings.Contains(got, "timed out waiting for the condition on jobs/pi") {
		t.Errorf("check once: %q", got)
	}
	go func() { done <- bg.run("wait", "--for=delete", "job/pi") }()
	c.ok("delete", "job", "pi", "--wait=false")
	if r := <-done; r.code != 0 || r.out != "job.batch/pi condition met\n" {
		t.Errorf("wait for delete: exit %d, out %q, err %q", r.code, r.out, r.err)
	}
}
