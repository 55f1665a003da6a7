package kubeclients

import (
	"encoding/json"
	"testing"

	"skiff.dev/internal/discoverydoc"
	"skiff.dev/internal/version"
	"skiff.dev/services/apiserver/apiservertest"
)

// TestKubectlVersion: kubectl reports the version it is built at, and the
// apiserver's /version over HTTP: Kubernetes' version with this build's
// Skiff version as metadata, as the gRPC discovery reports it.
func TestKubectlVersion(t *testing.T) {
	tools := Tools(t)
	srv := apiservertest.Start(t, apiservertest.Secure())
	stdout, stderr, err := Kubectl(t, Kubeconfig(t, srv), "version", "-o", "json")
	var got struct {
		ClientVersion *struct {
			GitVersion string `json:"gitVersion"`
		} `json:"clientVersion"`
		ServerVersion *struct {
			GitVersion string `json:"gitVersion"`
		} `json:"serverVersion"`
	}
	// kubectl prints the client's version even when the server does not
	// answer, then fails.
	if jerr := json.Unmarshal([]byte(stdout), &got); jerr != nil {
		t.Fatalf("kubectl version -o json: %v (err %v)\nstdout: %s\nstderr: %s", jerr, err, stdout, stderr)
	}
	if got.ClientVersion == nil || got.ClientVersion.GitVersion != tools.Kubernetes {
		t.Errorf("clientVersion %+v, want gitVersion %s (hack/tools pins)", got.ClientVersion, tools.Kubernetes)
	}
	if err != nil {
		t.Fatalf("the server's version over HTTP: %v\nstderr: %s", err, stderr)
	}
	want := discoverydoc.GitVersion(version.Get().GitVersion)
	if got.ServerVersion == nil || got.ServerVersion.GitVersion != want {
		t.Errorf("serverVersion %+v, want gitVersion %s", got.ServerVersion, want)
	}
}
