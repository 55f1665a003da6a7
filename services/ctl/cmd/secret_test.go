package cmd

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// secretValues are the values the tests write: none may ever be printed
// by get (any table form) or describe.
var secretValues = []string{"s3cr3t-passw0rd", "from-a-file-value", "env-value-42", "from-the-environment"}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func noValues(t *testing.T, what, out string) {
	t.Helper()
	for _, v := range secretValues {
		if strings.Contains(out, v) || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte(v))) {
			t.Errorf("%s prints a secret's value %q:\n%s", what, v, out)
		}
	}
}

func TestCreateSecretGenericGetDescribe(t *testing.T) {
	c := newCLI(t)
	file := writeTemp(t, "api-key", "from-a-file-value")
	env := writeTemp(t, "app.env", "\ufeff# a comment\n\n  LEVEL=env-value-42\nFROM_ENV\n")
	c.vars = map[string]string{"FROM_ENV": "from-the-environment"}

	if got := c.ok("create", "secret", "generic", "db", "--from-literal=username=admin", "--from-literal=password=s3cr3t-passw0rd",
		"--from-file="+file, "--from-file=renamed="+file); got != "secret/db created\n" {
		t.Errorf("create secret generic: %q", got)
	}
	if got := c.ok("create", "secret", "generic", "app-env", "--from-env-file", env, "--type", "example.com/env"); got != "secret/app-env created\n" {
		t.Errorf("create secret generic --from-env-file: %q", got)
	}

	ctx := context.Background()
	db, err := client.Secrets(shared.Conn).Get(ctx, c.ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"username": "admin", "password": "s3cr3t-passw0rd", "api-key": "from-a-file-value", "renamed": "from-a-file-value"}
	if got := stringsOf(db.GetData()); !equalMaps(got, want) || db.GetType() != "Opaque" {
		t.Errorf("db: type %q, data %v, want Opaque, %v", db.GetType(), got, want)
	}
	appEnv, err := client.Secrets(shared.Conn).Get(ctx, c.ns, "app-env")
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"LEVEL": "env-value-42", "FROM_ENV": "from-the-environment"}
	if got := stringsOf(appEnv.GetData()); !equalMaps(got, want) || appEnv.GetType() != "example.com/env" {
		t.Errorf("app-env: type %q, data %v, want example.com/env, %v", appEnv.GetType(), got, want)
	}

	table := c.ok("get", "secrets")
	wantTable := "NAME      TYPE              DATA   AGE\n" +
		"app-env   example.com/env   2      5m\n" +
		"db        Opaque            4      5m\n"
	if table != wantTable {
		t.Errorf("get secrets:\n%s\nwant\n%s", table, wantTable)
	}
	for _, args := range [][]string{
		{"get", "secrets"}, {"get", "secrets", "-o", "wide"}, {"get", "secret", "db", "-o", "wide", "--show-labels"},
		{"describe", "secret", "db"}, {"describe", "secrets"}, {"get", "secrets", "-o", "name"},
	} {
		noValues(t, "skiffctl "+strings.Join(args, " "), c.ok(args...))
	}

	d := c.ok("describe", "secret", "db")
	wantDescribe := "Name:         db\n" +
		"Namespace:    " + c.ns + "\n" +
		"Labels:       <none>\n" +
		"Annotations:  <none>\n" +
		"\n" +
		"Type:  Opaque\n" +
		"\n" +
		"Data\n" +
		"====\n" +
		"api-key:   17 bytes\n" +
		"password:  15 bytes\n" +
		"renamed:   17 bytes\n" +
		"username:  5 bytes\n"
	if d != wantDescribe {
		t.Errorf("describe secret db:\n%s\nwant\n%s", d, wantDescribe)
	}

	// -o yaml carries the data, base64, and decodes back to the object.
	y := c.ok("get", "secret", "db", "-o", "yaml")
	if !strings.Contains(y, "password: "+base64.StdEncoding.EncodeToString([]byte("s3cr3t-passw0rd"))) || strings.Contains(y, "stringData") {
		t.Errorf("get secret db -o yaml: want data in base64 and no stringData:\n%s", y)
	}
}

func stringsOf(m map[string][]byte) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func TestCreateSecretErrors(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	file := writeTemp(t, "k", "v")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no name", []string{"create", "secret", "generic"},
			"error: exactly one NAME is required, got 0\nSee 'skiffctl create secret generic -h' for help and examples\n"},
		{"two names", []string{"create", "secret", "tls", "a", "b"},
			"error: exactly one NAME is required, got 2\nSee 'skiffctl create secret tls -h' for help and examples\n"},
		{"duplicate key", []string{"create", "secret", "generic", "s", "--from-literal=a=1", "--from-literal=a=2"},
			"error: cannot add key a, another key by that name already exists\n"},
		{"invalid key", []string{"create", "secret", "generic", "s", "--from-literal=a/b=1"},
			`error: "a/b" is not valid key name for a Secret a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')` + "\n"},
		{"literal without value", []string{"create", "secret", "generic", "s", "--from-literal=novalue"},
			"error: invalid literal source novalue, expected key=value\n"},
		{"env file with literal", []string{"create", "secret", "generic", "s", "--from-env-file=" + file, "--from-literal=a=b"},
			"error: from-env-file cannot be combined with from-file or from-literal\n"},
		{"missing file", []string{"create", "secret", "generic", "s", "--from-file=" + filepath.Join(dir, "none")},
			"error: error reading " + filepath.Join(dir, "none") + ": no such file or directory\n"},
		{"key for a directory", []string{"create", "secret", "generic", "s", "--from-file=k=" + dir},
			"error: cannot give a key name for a directory path\n"},
		{"docker-registry without credentials", []string{"create", "secret", "docker-registry", "r", "--docker-username=u"},
			"error: either --from-file or the combination of --docker-username, --docker-password and --docker-server is required\n"},
		{"tls without key", []string{"create", "secret", "tls", "t", "--cert=" + file},
			"error: key and cert must be specified\n"},
		{"bad dry-run", []string{"create", "secret", "generic", "s", "--dry-run=maybe"},
			`error: invalid dry-run value (maybe). Must be "none", "server", or "client"` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.fails(tc.args...); got != tc.want {
				t.Errorf("stderr %q, want %q", got, tc.want)
			}
		})
	}
	// The same key twice through the server: AlreadyExists, as kubectl words it.
	c.ok("create", "secret", "generic", "once", "--from-literal=a=s3cr3t-passw0rd")
	got := c.fails("create", "secret", "generic", "once", "--from-literal=a=s3cr3t-passw0rd")
	if got != `error: failed to create secret secrets "once" already exists`+"\n" {
		t.Errorf("second create: %q", got)
	}
	noValues(t, "the error", got)
}

func TestCreateSecretDryRunYAML(t *testing.T) {
	c := newCLI(t)
	got := c.ok("create", "secret", "generic", "dry", "--from-literal=username=admin", "--dry-run=client", "-o", "yaml")
	want := "apiVersion: v1\ndata:\n  username: YWRtaW4=\nkind: Secret\nmetadata:\n  name: dry\ntype: Opaque\n"
	if got != want {
		t.Errorf("--dry-run=client -o yaml:\n%s\nwant\n%s", got, want)
	}
	if got := c.ok("create", "secret", "generic", "dry", "--from-literal=a=b", "--dry-run=client"); got != "secret/dry created (dry run)\n" {
		t.Errorf("--dry-run=client: %q", got)
	}
	if _, err := client.Secrets(shared.Conn).Get(context.Background(), c.ns, "dry"); err == nil {
		t.Error("--dry-run=client created the secret")
	}
}

func TestCreateSecretDockerRegistry(t *testing.T) {
	c := newCLI(t)
	c.ok("create", "secret", "docker-registry", "regcred", "--docker-server=registry.example.com",
		"--docker-username=me", "--docker-password=s3cr3t-passw0rd", "--docker-email=me@example.com")
	s, err := client.Secrets(shared.Conn).Get(context.Background(), c.ns, "regcred")
	if err != nil {
		t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte("me:s3cr3t-passw0rd"))
	want := `{"auths":{"registry.example.com":{"username":"me","password":"s3cr3t-passw0rd","email":"me@example.com","auth":"` + auth + `"}}}`
	if s.GetType() != "kubernetes.io/dockerconfigjson" || string(s.GetData()[".dockerconfigjson"]) != want || len(s.GetData()) != 1 {
		t.Errorf("regcred: type %q, data %q, want kubernetes.io/dockerconfigjson, %s", s.GetType(), s.GetData(), want)
	}
	// The default server is Docker Hub's, and there is no email.
	out := c.ok("create", "secret", "docker-registry", "hub", "--docker-username=me", "--docker-password=pw", "--dry-run=client", "-o", "json")
	var obj struct{ Data map[string][]byte }
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatal(err)
	}
	if got := string(obj.Data[".dockerconfigjson"]); got != `{"auths":{"https://index.docker.io/v1/":{"username":"me","password":"pw","auth":"bWU6cHc="}}}` {
		t.Errorf("default server: %s", got)
	}
	noValues(t, "describe", c.ok("describe", "secret", "regcred"))
}

func TestCreateSecretTLS(t *testing.T) {
	c := newCLI(t)
	certPEM, keyPEM := selfSigned(t)
	_, otherKey := selfSigned(t)
	cert, key, other := writeTemp(t, "tls.crt", certPEM), writeTemp(t, "tls.key", keyPEM), writeTemp(t, "other.key", otherKey)
	c.ok("create", "secret", "tls", "web-tls", "--cert", cert, "--key", key)
	s, err := client.Secrets(shared.Conn).Get(context.Background(), c.ns, "web-tls")
	if err != nil {
		t.Fatal(err)
	}
	if s.GetType() != "kubernetes.io/tls" || string(s.GetData()["tls.crt"]) != certPEM || string(s.GetData()["tls.key"]) != keyPEM {
		t.Errorf("web-tls: type %q, keys %d", s.GetType(), len(s.GetData()))
	}
	got := c.fails("create", "secret", "tls", "mismatch", "--cert", cert, "--key", other)
	if got != "error: tls: private key does not match public key\n" {
		t.Errorf("a key of another certificate: %q", got)
	}
	if strings.Contains(got, "PRIVATE KEY") {
		t.Errorf("the error quotes the key: %q", got)
	}
	c.ok("create", "secret", "generic", "other", "--from-literal=a=b", "--save-config")
	if table := c.ok("get", "secrets", "--field-selector", "type=kubernetes.io/tls"); table != "NAME      TYPE                DATA   AGE\nweb-tls   kubernetes.io/tls   2      5m\n" {
		t.Errorf("get secrets --field-selector type=kubernetes.io/tls:\n%s", table)
	}
	saved, err := client.Secrets(shared.Conn).Get(context.Background(), c.ns, "other")
	if err != nil {
		t.Fatal(err)
	}
	if a := saved.GetMetadata().GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; !strings.Contains(a, `"data":{"a":"Yg=="}`) {
		t.Errorf("--save-config: last-applied %q", a)
	}
}

// selfSigned is a certificate and its key, PEM.
func selfSigned(t *testing.T) (string, string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "web"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"web"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

func TestTokenRequestFromFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       tokenOptions
		want    *corev1.TokenRequestSpec
		wantErr string
	}{
		{name: "defaults", want: &corev1.TokenRequestSpec{}},
		{name: "audiences and duration", o: tokenOptions{audiences: []string{"a", "b"}, duration: 10 * time.Minute},
			want: &corev1.TokenRequestSpec{Audiences: []string{"a", "b"}, ExpirationSeconds: ptr(int64(600))}},
		{name: "bound to a pod", o: tokenOptions{boundKind: "Pod", boundName: "web-0", boundUID: "u-1"},
			want: &corev1.TokenRequestSpec{BoundObjectRef: &corev1.BoundObjectReference{Kind: "Pod", ApiVersion: "v1", Name: "web-0", Uid: "u-1"}}},
		{name: "negative duration", o: tokenOptions{duration: -time.Second}, wantErr: "--duration must be greater than or equal to 0"},
		{name: "sub-second duration", o: tokenOptions{duration: 1500 * time.Millisecond}, wantErr: "--duration cannot be expressed in units less precise than seconds"},
		{name: "empty audience", o: tokenOptions{audiences: []string{""}}, wantErr: "--audience must not be an empty string"},
		{name: "name without kind", o: tokenOptions{boundName: "x"}, wantErr: "--bound-object-name can only be set if --bound-object-kind is provided"},
		{name: "uid without kind", o: tokenOptions{boundUID: "x"}, wantErr: "--bound-object-uid can only be set if --bound-object-kind is provided"},
		{name: "unsupported kind", o: tokenOptions{boundKind: "Node", boundName: "n"}, wantErr: "supported --bound-object-kind values are Pod, Secret"},
		{name: "kind without name", o: tokenOptions{boundKind: "Secret"}, wantErr: "--bound-object-name is required if --bound-object-kind is provided"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := tc.o.request("ns", "sa")
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.GetMetadata().GetNamespace() != "ns" || req.GetMetadata().GetName() != "sa" {
				t.Errorf("metadata %v", req.GetMetadata())
			}
			if got := req.GetSpec(); got.String() != tc.want.String() {
				t.Errorf("spec %v, want %v", got, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestCreateTokenArgs(t *testing.T) {
	c := newCLI(t)
	got := c.fails("create", "token")
	if want := "error: exactly one NAME is required, got 0\nSee 'skiffctl create token -h' for help and examples\n"; got != want {
		t.Errorf("create token without a name: %q, want %q", got, want)
	}
}

func TestDescribePodSecretSources(t *testing.T) {
	c := newCLI(t)
	c.ok("create", "secret", "generic", "db", "--from-literal=password=s3cr3t-passw0rd")
	pod := writeTemp(t, "pod.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: app
spec:
  containers:
  - name: app
    image: busybox
    env:
    - name: PASSWORD
      valueFrom:
        secretKeyRef: {name: db, key: password}
    envFrom:
    - secretRef: {name: db}
      prefix: DB_
    - configMapRef: {name: cfg, optional: true}
    volumeMounts:
    - {name: creds, mountPath: /etc/creds, readOnly: true}
  volumes:
  - name: creds
    secret: {secretName: db}
  - name: info
    downwardAPI:
      items:
      - path: labels
        fieldRef: {apiVersion: v1, fieldPath: metadata.labels}
  - name: api
    projected:
      sources:
      - serviceAccountToken: {path: token, expirationSeconds: 3600}
      - secret: {name: db}
      - downwardAPI:
          items:
          - path: namespace
            fieldRef: {apiVersion: v1, fieldPath: metadata.namespace}
`)
	c.ok("apply", "-f", pod)
	d := c.ok("describe", "pod", "app")
	noValues(t, "describe pod", d)
	for _, want := range []string{
		"      PASSWORD:  <set to the key 'password' in secret 'db'>  Optional: false\n",
		"      db   Secret with prefix 'DB_'  Optional: false\n",
		"      cfg  ConfigMap                 Optional: true\n",
		"    Type:        Secret (a volume populated by a Secret)\n    SecretName:  db\n    Optional:    false\n",
		"    Type:  DownwardAPI (a volume populated by information about the pod)\n    Items:\n      metadata.labels -> labels\n",
		"    Type:                    Projected (a volume that contains injected data from multiple sources)\n" +
			"    TokenExpirationSeconds:  3600\n    SecretName:              db\n    SecretOptionalName:      <nil>\n    DownwardAPI:             true\n",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("describe pod app: no\n%s\nin\n%s", want, d)
		}
	}
}

// TestCreateToken asks a secure apiserver (which signs tokens) for
// service account tokens through skiffctl, and uses one.
func TestCreateToken(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	c := newCLIFor(t, s.Addr(), "default", time.Now())
	creds := s.ClientConfig(t, "alice", "system:masters")
	c.ok("config", "set-cluster", "test", "--certificate-authority", creds.CAFile)
	c.ok("config", "set-credentials", "tester", "--client-certificate", creds.CertFile, "--client-key", creds.KeyFile)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.ServiceAccounts(s.Conn).Create(ctx, &corev1.ServiceAccount{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "app"}}); err != nil {
		t.Fatal(err)
	}

	tok := strings.TrimSuffix(c.ok("create", "token", "app"), "\n")
	claims := jwtClaims(t, tok)
	if claims["sub"] != "system:serviceaccount:default:app" || claims["exp"].(float64)-claims["iat"].(float64) != 3600 {
		t.Errorf("default token: claims %v, want sub system:serviceaccount:default:app and an hour", claims)
	}
	c.ok("config", "set-credentials", "nobody")
	c.ok("--user", "nobody", "--token", tok, "get", "configmaps") // it authenticates

	tok = strings.TrimSuffix(c.ok("create", "token", "app", "--duration", "10m", "--audience", "https://example.com", "--audience", "vault"), "\n")
	claims = jwtClaims(t, tok)
	if aud := fmt.Sprint(claims["aud"]); aud != "[https://example.com vault]" || claims["exp"].(float64)-claims["iat"].(float64) != 600 {
		t.Errorf("--duration 10m --audience x2: aud %s, lifetime %v", aud, claims["exp"].(float64)-claims["iat"].(float64))
	}
	if errOut := c.fails("--user", "nobody", "--token", tok, "get", "configmaps"); !strings.Contains(errOut, "You must be logged in") {
		t.Errorf("a token for another audience authenticated: %q", errOut)
	}

	c.ok("create", "secret", "generic", "bound", "--from-literal=a=b")
	tok = strings.TrimSuffix(c.ok("create", "token", "app", "--bound-object-kind", "Secret", "--bound-object-name", "bound"), "\n")
	if k8s, _ := jwtClaims(t, tok)["kubernetes.io"].(map[string]any); fmt.Sprint(k8s["secret"]) == "<nil>" {
		t.Errorf("bound to a secret: kubernetes.io claim %v", k8s)
	}
	y := c.ok("create", "token", "app", "-o", "yaml")
	if !strings.Contains(y, "apiVersion: authentication.k8s.io/v1\n") || !strings.Contains(y, "kind: TokenRequest\n") || !strings.Contains(y, "  token: ") {
		t.Errorf("create token -o yaml:\n%s", y)
	}

	if got := c.fails("create", "token", "nope"); got != `error: failed to create token: serviceaccounts "nope" not found`+"\n" {
		t.Errorf("a service account that does not exist: %q", got)
	}
}

// jwtClaims decodes a JWT's claims (not checking its signature: the
// apiserver does when it is used).
func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(b, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

// TestSecretHash: kubectl's hashes of the same secrets (its hash_test.go).
func TestSecretHash(t *testing.T) {
	for _, tc := range []struct {
		data map[string][]byte
		want string
	}{
		{map[string][]byte{}, "t75bgf6ctb"},
		{map[string][]byte{"one": []byte("")}, "74bd68bm66"},
		{map[string][]byte{"two": []byte("2"), "one": []byte(""), "three": []byte("3")}, "dgcb6h9tmk"},
	} {
		if got := SecretHash(&corev1.Secret{Type: "my-type", Data: tc.data}); got != tc.want {
			t.Errorf("SecretHash(%v) = %s, want %s", tc.data, got, tc.want)
		}
	}
	c := newCLI(t)
	if got := c.ok("create", "secret", "generic", "h", "--from-literal=one=", "--type=my-type", "--append-hash", "--dry-run=client", "-o", "name"); got != "secret/h-"+SecretHash(&corev1.Secret{Metadata: &metav1.ObjectMeta{Name: "h"}, Type: "my-type", Data: map[string][]byte{"one": {}}})+"\n" {
		t.Errorf("--append-hash: %q", got)
	}
}
