package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEncryptionProviderConfigErrors: the binary refuses to start on a bad
// --encryption-provider-config, naming the file and the field, and never
// printing key material.
func TestEncryptionProviderConfigErrors(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const head = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"
	for _, c := range []struct{ name, file, want string }{
		{"missing file", filepath.Join(dir, "absent.yaml"), "absent.yaml: no such file"},
		{"short key", write("short.yaml", head+"resources:\n- resources: [secrets]\n  providers:\n  - aesgcm: {keys: [{name: k1, secret: c2hvcnRrZXk=}]}\n"),
			`resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 8, expected one of [16 24 32]`},
		{"no provider", write("none.yaml", head+"resources:\n- resources: [secrets]\n  providers: [{}]\n"),
			"resources[0].providers[0]: Invalid value: provider does not contain any of the expected providers"},
		{"not YAML", write("bad.yaml", "resources: [\n"), "bad.yaml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec.Command(bin, "--insecure", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--metrics-listen", "",
				"--encryption-provider-config", c.file).CombinedOutput()
			if err == nil {
				t.Fatalf("started with %s:\n%s", c.file, out)
			}
			if !strings.Contains(string(out), c.want) {
				t.Fatalf("output lacks %q:\n%s", c.want, out)
			}
			if strings.Contains(string(out), "c2hvcnRrZXk=") {
				t.Fatalf("output shows the key:\n%s", out)
			}
		})
	}
}
