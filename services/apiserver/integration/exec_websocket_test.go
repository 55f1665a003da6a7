package integration

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"skiff.dev/services/apiserver/apiservertest"
)

// TestExecOverWebSocket: client-go's WebSocket executor (kubectl exec's,
// channel protocol v5) runs a command through the HTTP API's pods/exec,
// proxied to the node agent: stdin in, stdout and stderr out, the exit
// code as kubectl reports it; attach the same without one.
func TestExecOverWebSocket(t *testing.T) {
	s := apiservertest.Start(t)
	startStreamCluster(t, s)
	ctx := testContext(t)
	rc := &rest.Config{Host: "http://" + s.Addr()}
	run := func(path string, stdin string) (string, string, error) {
		t.Helper()
		ex, err := remotecommand.NewWebSocketExecutor(rc, "GET", "http://"+s.Addr()+path)
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		o := remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}
		if stdin != "" {
			o.Stdin = strings.NewReader(stdin)
		}
		err = ex.StreamWithContext(ctx, o)
		return out.String(), errOut.String(), err
	}
	out, errOut, err := run("/api/v1/namespaces/default/pods/one/exec?command=cat&command=-&stdin=true&stdout=true&stderr=true", "hello world\n")
	var ce utilexec.CodeExitError
	if !errors.As(err, &ce) || ce.Code != 2 || out != "default/one/web [cat -] stdin=true tty=false\nhello world\n" || errOut != "bye\n" {
		t.Errorf("exec: stdout %q stderr %q err %v", out, errOut, err)
	}
	out, _, err = run("/api/v1/namespaces/default/pods/two/attach?container=sidecar&stdout=true&stderr=true", "")
	if err != nil || out != "default/two/sidecar [] stdin=false tty=false\n" {
		t.Errorf("attach: stdout %q err %v", out, err)
	}
	if _, _, err := run("/api/v1/namespaces/default/pods/pending/exec?command=true&stdout=true", ""); err == nil {
		t.Error("exec in a pod with no node succeeded")
	}
}
