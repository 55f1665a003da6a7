package kubeclients

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/user"
)

// The kubeconfig's own names: one cluster, one user, one context.
const (
	clusterName = "skiff"
	contextName = "skiff"
)

// Kubeconfig writes a kubeconfig for srv's administrator (AdminUser in
// system:masters, by a client certificate its CA issues) and returns its
// path. srv must run with security on (apiservertest.Secure).
func Kubeconfig(t testing.TB, srv *apiservertest.Server) string {
	t.Helper()
	return KubeconfigAs(t, srv, apiservertest.AdminUser, user.Masters)
}

// KubeconfigAs writes a kubeconfig for user name in groups (a client
// certificate issued on the fly) and returns its path. Secure alone
// authorizes every user: a test of what RBAC allows also sets the
// server's Config.Authz modes.
func KubeconfigAs(t testing.TB, srv *apiservertest.Server, name string, groups ...string) string {
	t.Helper()
	secure(t, srv)
	certPEM, keyPEM, err := srv.IssueClient(name, groups...)
	if err != nil {
		t.Fatalf("issuing a certificate for %q: %v", name, err)
	}
	return writeKubeconfig(t, srv, name, authInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM})
}

// KubeconfigWithToken writes a kubeconfig that presents a bearer token
// (a service account's, say: Security.ServiceAccountToken) and returns
// its path.
func KubeconfigWithToken(t testing.TB, srv *apiservertest.Server, token string) string {
	t.Helper()
	secure(t, srv)
	return writeKubeconfig(t, srv, "token", authInfo{Token: token})
}

func secure(t testing.TB, srv *apiservertest.Server) {
	t.Helper()
	if srv.Security == nil {
		t.Fatal("kubeclients: the apiserver runs without security: start it with apiservertest.Secure()")
	}
}

// writeKubeconfig writes the kubeconfig into a directory of its own, which
// is also the clients' HOME (see Command).
func writeKubeconfig(t testing.TB, srv *apiservertest.Server, userName string, auth authInfo) string {
	t.Helper()
	cfg := kubeconfig{
		APIVersion:     "v1",
		Kind:           "Config",
		CurrentContext: contextName,
		Clusters: []namedCluster{{Name: clusterName, Cluster: cluster{
			Server:                   "https://" + srv.Addr(),
			CertificateAuthorityData: srv.CA.CertPEM,
		}}},
		Users:    []namedAuthInfo{{Name: userName, User: auth}},
		Contexts: []namedContext{{Name: contextName, Context: kubeContext{Cluster: clusterName, User: userName}}},
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubeconfig is client-go's clientcmd/api/v1 Config, the fields used
// here. Byte slices encode as base64, as its *-data fields are.
type kubeconfig struct {
	APIVersion     string          `json:"apiVersion"`
	Kind           string          `json:"kind"`
	CurrentContext string          `json:"current-context"`
	Clusters       []namedCluster  `json:"clusters"`
	Users          []namedAuthInfo `json:"users"`
	Contexts       []namedContext  `json:"contexts"`
}

type namedCluster struct {
	Name    string  `json:"name"`
	Cluster cluster `json:"cluster"`
}

type cluster struct {
	Server                   string `json:"server"`
	CertificateAuthorityData []byte `json:"certificate-authority-data"`
}

type namedAuthInfo struct {
	Name string   `json:"name"`
	User authInfo `json:"user"`
}

type authInfo struct {
	ClientCertificateData []byte `json:"client-certificate-data,omitempty"`
	ClientKeyData         []byte `json:"client-key-data,omitempty"`
	Token                 string `json:"token,omitempty"`
}

type namedContext struct {
	Name    string      `json:"name"`
	Context kubeContext `json:"context"`
}

type kubeContext struct {
	Cluster string `json:"cluster"`
	User    string `json:"user"`
}
