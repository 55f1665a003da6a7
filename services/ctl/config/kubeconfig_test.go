package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// env is an environment of variables for NewRules.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// A kubeconfig written by kind or kubectl has fields skiffctl does not
// use (preferences, extensions at every level): they are read past.
func TestLoadKindKubeconfig(t *testing.T) {
	cfg, err := LoadFile("testdata/kind.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := cfg.Resolve(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Context != "kind-kind" || r.Server != "127.0.0.1:41123" || !r.TLS || string(r.CA) != "PEM-KIND" ||
		string(r.CertPEM) != "CERT" || string(r.KeyPEM) != "KEY" || r.Namespace != "default" || r.Warning != "" {
		t.Errorf("resolved %+v", r)
	}
}

func TestRulesOrder(t *testing.T) {
	home := "/home/u"
	cases := []struct {
		name     string
		explicit string
		vars     map[string]string
		want     []string
	}{
		{"--kubeconfig first", "/flag", map[string]string{"KUBECONFIG": "/a:/b", "SKIFFCONFIG": "/s"}, []string{"/flag"}},
		{"then $KUBECONFIG, deduplicated, empty entries skipped", "", map[string]string{"KUBECONFIG": "/a::/b:/a", "SKIFFCONFIG": "/s"}, []string{"/a", "/b"}},
		{"then $SKIFFCONFIG", "", map[string]string{"SKIFFCONFIG": "/s"}, []string{"/s"}},
		{"then ~/.skiff/config", "", nil, []string{"/home/u/.skiff/config"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewRules(tc.explicit, env(tc.vars), home).Files(); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("files %q, want %q", got, tc.want)
			}
		})
	}
}

// Two files merged as kubectl merges $KUBECONFIG: the first file that
// defines a name wins, whole; current-context from the first that sets it.
func TestMergeKubeconfigs(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	kind, err := filepath.Abs("testdata/kind.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cloud, err := filepath.Abs("testdata/cloud.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules := NewRules("", env(map[string]string{"KUBECONFIG": missing + ":" + kind + ":" + cloud}), dir)
	cfg, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "kind-kind" {
		t.Errorf("current-context %q, want the first file's", cfg.CurrentContext)
	}
	var names []string
	for _, c := range cfg.Clusters {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "kind-kind,cloud" {
		t.Errorf("clusters %s", got)
	}
	if cl, _ := cfg.Cluster("kind-kind"); cl.Server != "https://127.0.0.1:41123" {
		t.Errorf("kind-kind's cluster is %+v: the first file's must win", cl)
	}
	if cx, _ := cfg.Context("kind-kind"); cx.User != "kind-kind" {
		t.Errorf("kind-kind's context is %+v: the first file's must win, whole", cx)
	}
	if _, ok := cfg.User("shadowed"); !ok {
		t.Errorf("the second file's users are merged in: %+v", cfg.Users)
	}
	if cfg.Extra["preferences"] == nil || cfg.Extra["extensions"] == nil {
		t.Errorf("preferences and extensions: %+v", cfg.Extra)
	}

	// The second file's context: its CA path is relative to that file, and
	// its user's exec plugin is warned about, naming the user.
	r, err := cfg.Resolve(Overrides{Context: "cloud"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Server != "cloud.example:443" || string(r.CA) != "PEM-CLOUD" || r.ServerName != "api.cloud.example" || r.Namespace != "prod" || r.Token != "" {
		t.Errorf("cloud resolved to %+v", r)
	}
	if want := `user "cloud-admin": skiffctl cannot use its exec (the credential plugin "gke-gcloud-auth-plugin"); connecting without it`; r.Warning != want {
		t.Errorf("warning %q\nwant    %q", r.Warning, want)
	}
	// tokenFile, relative to its file, trimmed.
	r, err = cfg.Resolve(Overrides{Context: "cloud", User: "robot"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Token != "s3cr3t-from-file" || r.Warning != "" {
		t.Errorf("tokenFile: %+v", r)
	}

	// Changes go to the file the entry came from; new ones to the first
	// existing file.
	for _, tc := range []struct {
		e    Entry
		want string
	}{
		{CurrentContextEntry, kind},
		{Entry{"contexts", "cloud"}, cloud},
		{Entry{"clusters", "kind-kind"}, kind},
		{Entry{"users", "new"}, kind},
	} {
		if got := rules.FileFor(cfg, tc.e); got != tc.want {
			t.Errorf("FileFor(%v) = %s, want %s", tc.e, got, tc.want)
		}
	}
}

func TestExplicitFileMustExist(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	rules := NewRules(missing, env(nil), t.TempDir())
	_, err := rules.Load()
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing --kubeconfig: %v", err)
	}
	if c, err := rules.LoadOrEmpty(); err != nil || len(c.Contexts) != 0 {
		t.Errorf("config commands start from an empty config: %+v, %v", c, err)
	}
	// $KUBECONFIG's missing files are skipped.
	rules = NewRules("", env(map[string]string{"KUBECONFIG": missing}), t.TempDir())
	if c, err := rules.Load(); err != nil || c.CurrentContext != "" {
		t.Errorf("a missing $KUBECONFIG file: %+v, %v", c, err)
	}
}

// Editing a file kubectl wrote keeps what skiffctl does not use.
func TestEditKeepsUnknownFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	b, err := os.ReadFile("testdata/cloud.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	rules := NewRules(path, env(nil), "")
	cfg, err := rules.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := rules.Edit(cfg, CurrentContextEntry, func(c *Config) { c.CurrentContext = "kind-kind" }); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"current-context: kind-kind", "command: gke-gcloud-auth-plugin", "proxy-url: http://proxy.example:3128", "colors: true", "tokenFile: token", "disable-compression: true"} {
		if !strings.Contains(string(after), want) {
			t.Errorf("the edited file lacks %q:\n%s", want, after)
		}
	}
}
