// Package config is skiffctl's kubeconfig: YAML files of clusters
// (apiserver address and CA), users (client certificate and key, or a
// bearer token) and contexts that pair a cluster with a user and a
// default namespace, one of them current. They are found and merged as
// client-go's loading rules do (load.go): --kubeconfig, else the files of
// $KUBECONFIG, else skiffctl's own default ($SKIFFCONFIG, else
// ~/.skiff/config). Fields kubectl writes that skiffctl does not use
// (preferences, extensions, proxy-url, exec, ...) are kept, so that a
// file skiffctl edits loses nothing, and otherwise ignored. Resolve
// applies command-line overrides (--context, --server, --token,
// --namespace) and returns what a connection needs.
//
// It owns the files' format, loading, merging and saving; dialing is
// package cmd's.
package config

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultServer is the apiserver's default address.
const DefaultServer = "127.0.0.1:6443"

// Config is one file, or several merged (see Rules). Every level keeps
// the fields skiffctl does not use in Extra, so that saving a file
// kubectl or kind wrote loses none of them.
type Config struct {
	APIVersion     string         `yaml:"apiVersion,omitempty"`
	Kind           string         `yaml:"kind,omitempty"`
	CurrentContext string         `yaml:"current-context"`
	Clusters       []NamedCluster `yaml:"clusters"`
	Users          []NamedUser    `yaml:"users"`
	Contexts       []NamedContext `yaml:"contexts"`
	// Extra: preferences, extensions, anything else.
	Extra map[string]any `yaml:",inline"`

	// origins says which file each entry came from ("clusters/NAME",
	// "users/NAME", "contexts/NAME", "current-context"): relative paths in
	// an entry are relative to its file, and a change to it is written
	// there.
	origins map[string]string
}

type NamedCluster struct {
	Name    string         `yaml:"name"`
	Cluster Cluster        `yaml:"cluster"`
	Extra   map[string]any `yaml:",inline"`
}

// Cluster is where an apiserver is and how to trust it.
type Cluster struct {
	Server                   string `yaml:"server"`
	CertificateAuthority     string `yaml:"certificate-authority,omitempty"`
	CertificateAuthorityData string `yaml:"certificate-authority-data,omitempty"`
	TLSServerName            string `yaml:"tls-server-name,omitempty"`
	InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify,omitempty"`
	// Extra: proxy-url, disable-compression, extensions, ... (not used).
	Extra map[string]any `yaml:",inline"`
}

type NamedUser struct {
	Name  string         `yaml:"name"`
	User  User           `yaml:"user"`
	Extra map[string]any `yaml:",inline"`
}

// User is how to authenticate.
type User struct {
	ClientCertificate     string `yaml:"client-certificate,omitempty"`
	ClientCertificateData string `yaml:"client-certificate-data,omitempty"`
	ClientKey             string `yaml:"client-key,omitempty"`
	ClientKeyData         string `yaml:"client-key-data,omitempty"`
	Token                 string `yaml:"token,omitempty"`
	// TokenFile is read when Token is empty (as client-go does).
	TokenFile string `yaml:"tokenFile,omitempty"`
	// Extra: exec, auth-provider, username/password, as, extensions, ...
	// (not used; Resolve warns about those that authenticate).
	Extra map[string]any `yaml:",inline"`
}

type NamedContext struct {
	Name    string         `yaml:"name"`
	Context Context        `yaml:"context"`
	Extra   map[string]any `yaml:",inline"`
}

// Context pairs a cluster with a user and a default namespace.
type Context struct {
	Cluster   string         `yaml:"cluster"`
	User      string         `yaml:"user,omitempty"`
	Namespace string         `yaml:"namespace,omitempty"`
	Extra     map[string]any `yaml:",inline"`
}

// Path is skiffctl's default file: $SKIFFCONFIG, else ~/.skiff/config.
func Path(getenv func(string) string, home string) string {
	if p := getenv("SKIFFCONFIG"); p != "" {
		return p
	}
	return filepath.Join(home, ".skiff", "config")
}

// LoadFile reads one file; a missing file is an empty config. Fields
// skiffctl does not know are kept in Extra, never refused.
func LoadFile(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, err
	}
	c := &Config{}
	if len(bytes.TrimSpace(b)) == 0 {
		return c, nil
	}
	if err := yaml.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.checkNames(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c.origins = map[string]string{}
	if c.CurrentContext != "" {
		c.origins["current-context"] = path
	}
	for _, e := range c.Clusters {
		c.origins["clusters/"+e.Name] = path
	}
	for _, e := range c.Users {
		c.origins["users/"+e.Name] = path
	}
	for _, e := range c.Contexts {
		c.origins["contexts/"+e.Name] = path
	}
	return c, nil
}

// checkNames refuses an entry without a name, or two of a name in one
// list (kubectl refuses them too).
func (c *Config) checkNames() error {
	check := func(section string, names []string) error {
		seen := map[string]bool{}
		for i, n := range names {
			if n == "" {
				return fmt.Errorf("%s[%d].name: must not be empty", section, i)
			}
			if seen[n] {
				return fmt.Errorf("%s[%d].name: duplicate name %q", section, i, n)
			}
			seen[n] = true
		}
		return nil
	}
	var cl, us, cx []string
	for _, e := range c.Clusters {
		cl = append(cl, e.Name)
	}
	for _, e := range c.Users {
		us = append(us, e.Name)
	}
	for _, e := range c.Contexts {
		cx = append(cx, e.Name)
	}
	return errors.Join(check("clusters", cl), check("users", us), check("contexts", cx))
}

// Save writes the file (readable by its owner only: it may hold secrets).
func (c *Config) Save(path string) error {
	if c.APIVersion == "" {
		c.APIVersion = "v1"
	}
	if c.Kind == "" {
		c.Kind = "Config"
	}
	b, err := c.Marshal()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// Marshal renders the config as YAML.
func (c *Config) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Redacted is a copy with secrets hidden, as kubectl config view shows it.
func (c *Config) Redacted() *Config {
	out := *c
	out.Clusters = append([]NamedCluster(nil), c.Clusters...)
	for i := range out.Clusters {
		if out.Clusters[i].Cluster.CertificateAuthorityData != "" {
			out.Clusters[i].Cluster.CertificateAuthorityData = "DATA+OMITTED"
		}
	}
	out.Users = append([]NamedUser(nil), c.Users...)
	for i := range out.Users {
		u := &out.Users[i].User
		if u.ClientCertificateData != "" {
			u.ClientCertificateData = "DATA+OMITTED"
		}
		if u.ClientKeyData != "" {
			u.ClientKeyData = "DATA+OMITTED"
		}
		if u.Token != "" {
			u.Token = "REDACTED"
		}
		if _, ok := u.Extra["password"]; ok {
			u.Extra = maps.Clone(u.Extra)
			u.Extra["password"] = "REDACTED"
		}
	}
	return &out
}

// Minified keeps only what the current context uses.
func (c *Config) Minified() (*Config, error) {
	ctx, ok := c.Context(c.CurrentContext)
	if !ok {
		return nil, fmt.Errorf("current-context %q not found", c.CurrentContext)
	}
	out := &Config{APIVersion: c.APIVersion, Kind: c.Kind, CurrentContext: c.CurrentContext, Extra: c.Extra,
		Contexts: []NamedContext{{Name: c.CurrentContext, Context: *ctx}}, origins: c.origins}
	if cl, ok := c.Cluster(ctx.Cluster); ok {
		out.Clusters = []NamedCluster{{Name: ctx.Cluster, Cluster: *cl}}
	}
	if u, ok := c.User(ctx.User); ok {
		out.Users = []NamedUser{{Name: ctx.User, User: *u}}
	}
	return out, nil
}

// Context finds a context by name.
func (c *Config) Context(name string) (*Context, bool) {
	for i := range c.Contexts {
		if c.Contexts[i].Name == name {
			return &c.Contexts[i].Context, true
		}
	}
	return nil, false
}

// Cluster finds a cluster by name.
func (c *Config) Cluster(name string) (*Cluster, bool) {
	for i := range c.Clusters {
		if c.Clusters[i].Name == name {
			return &c.Clusters[i].Cluster, true
		}
	}
	return nil, false
}

// User finds a user by name.
func (c *Config) User(name string) (*User, bool) {
	for i := range c.Users {
		if c.Users[i].Name == name {
			return &c.Users[i].User, true
		}
	}
	return nil, false
}

// SetContext creates or changes a context; empty arguments keep the
// current values.
func (c *Config) SetContext(name, cluster, user, namespace string) (created bool) {
	ctx, ok := c.Context(name)
	if !ok {
		c.Contexts = append(c.Contexts, NamedContext{Name: name})
		ctx = &c.Contexts[len(c.Contexts)-1].Context
	}
	if cluster != "" {
		ctx.Cluster = cluster
	}
	if user != "" {
		ctx.User = user
	}
	if namespace != "" {
		ctx.Namespace = namespace
	}
	return !ok
}

// SetCluster creates or changes a cluster.
func (c *Config) SetCluster(name string, fn func(*Cluster)) (created bool) {
	cl, ok := c.Cluster(name)
	if !ok {
		c.Clusters = append(c.Clusters, NamedCluster{Name: name})
		cl = &c.Clusters[len(c.Clusters)-1].Cluster
	}
	fn(cl)
	return !ok
}

// SetUser creates or changes a user.
func (c *Config) SetUser(name string, fn func(*User)) (created bool) {
	u, ok := c.User(name)
	if !ok {
		c.Users = append(c.Users, NamedUser{Name: name})
		u = &c.Users[len(c.Users)-1].User
	}
	fn(u)
	return !ok
}

// Overrides are the command-line flags that take precedence over the file.
type Overrides struct {
	Context, Cluster, User string
	Server, Token          string
	Namespace              string
}

// Resolved is what a connection and a command need.
type Resolved struct {
	Context            string // the context used ("" when none)
	Server             string // host:port
	TLS                bool   // a CA, a client certificate, tls-server-name or insecure-skip-tls-verify is configured, or the server is https://
	CA                 []byte // PEM; nil: the system's roots
	CertPEM            []byte // client certificate, with KeyPEM
	KeyPEM             []byte
	ServerName         string
	InsecureSkipVerify bool
	Token              string
	// Namespace is the namespace to use; NamespaceExplicit says it came
	// from --namespace (a manifest naming another one is then an error).
	Namespace         string
	NamespaceExplicit bool
	// Warning, when set, says what of the user's way to authenticate
	// skiffctl cannot use (an exec plugin, an auth-provider, ...): it
	// connects without it. For the caller to show once.
	Warning string
}

// Resolve picks the context and applies the overrides.
func (c *Config) Resolve(o Overrides) (*Resolved, error) {
	r := &Resolved{Namespace: "default"}
	name := c.CurrentContext
	if o.Context != "" {
		name = o.Context
	}
	var ctx Context
	if name != "" {
		found, ok := c.Context(name)
		if !ok {
			if o.Context != "" {
				return nil, fmt.Errorf("context %q does not exist", name)
			}
			return nil, fmt.Errorf("current-context %q does not exist in the config file", name)
		}
		ctx = *found
		r.Context = name
	}
	if o.Cluster != "" {
		ctx.Cluster = o.Cluster
	}
	if o.User != "" {
		ctx.User = o.User
	}
	var cl Cluster
	if ctx.Cluster != "" {
		found, ok := c.Cluster(ctx.Cluster)
		if !ok {
			return nil, fmt.Errorf("cluster %q does not exist in the config file", ctx.Cluster)
		}
		cl = *found
	}
	var u User
	if ctx.User != "" {
		found, ok := c.User(ctx.User)
		if !ok {
			return nil, fmt.Errorf("user %q does not exist in the config file", ctx.User)
		}
		u = *found
	}
	if ctx.Namespace != "" {
		r.Namespace = ctx.Namespace
	}
	if o.Namespace != "" {
		r.Namespace, r.NamespaceExplicit = o.Namespace, true
	}
	server := cl.Server
	if o.Server != "" {
		server = o.Server
	}
	if server == "" {
		server = DefaultServer
	}
	switch {
	case strings.HasPrefix(server, "https://"):
		r.TLS = true
		server = strings.TrimPrefix(server, "https://")
	case strings.HasPrefix(server, "http://"):
		server = strings.TrimPrefix(server, "http://")
	}
	r.Server = strings.TrimSuffix(server, "/")
	var err error
	clPath := func(p string) string { return c.relativeTo("clusters/"+ctx.Cluster, p) }
	uPath := func(p string) string { return c.relativeTo("users/"+ctx.User, p) }
	if r.CA, err = dataOrFile(cl.CertificateAuthorityData, clPath(cl.CertificateAuthority), "certificate-authority"); err != nil {
		return nil, fmt.Errorf("cluster %q: %w", ctx.Cluster, err)
	}
	if r.CA != nil {
		r.TLS = true
	}
	r.ServerName, r.InsecureSkipVerify = cl.TLSServerName, cl.InsecureSkipTLSVerify
	if r.InsecureSkipVerify || r.ServerName != "" {
		r.TLS = true // settings of TLS: the connection is TLS
	}
	if r.CertPEM, err = dataOrFile(u.ClientCertificateData, uPath(u.ClientCertificate), "client-certificate"); err != nil {
		return nil, fmt.Errorf("user %q: %w", ctx.User, err)
	}
	if r.KeyPEM, err = dataOrFile(u.ClientKeyData, uPath(u.ClientKey), "client-key"); err != nil {
		return nil, fmt.Errorf("user %q: %w", ctx.User, err)
	}
	if (r.CertPEM == nil) != (r.KeyPEM == nil) {
		return nil, fmt.Errorf("user %q: client-certificate and client-key go together", ctx.User)
	}
	if r.CertPEM != nil {
		r.TLS = true // a client certificate is only ever shown over TLS
	}
	r.Token = u.Token
	if r.Token == "" && u.TokenFile != "" {
		b, err := os.ReadFile(uPath(u.TokenFile))
		if err != nil {
			return nil, fmt.Errorf("user %q: tokenFile: %w", ctx.User, err)
		}
		r.Token = strings.TrimSpace(string(b))
	}
	if o.Token != "" {
		r.Token = o.Token
	} else {
		r.Warning = unsupportedAuth(ctx.User, &u)
	}
	return r, nil
}

// unsupportedAuth names what of u skiffctl cannot use to authenticate
// ("" when it can use all of it).
func unsupportedAuth(name string, u *User) string {
	var what []string
	if exec, ok := u.Extra["exec"].(map[string]any); ok {
		s := "exec (the credential plugin"
		if cmd, ok := exec["command"].(string); ok && cmd != "" {
			s += " " + strconv.Quote(cmd)
		}
		what = append(what, s+")")
	} else if _, ok := u.Extra["exec"]; ok {
		what = append(what, "exec (a credential plugin)")
	}
	if _, ok := u.Extra["auth-provider"]; ok {
		what = append(what, "auth-provider")
	}
	if _, ok := u.Extra["username"]; ok {
		what = append(what, "username/password")
	} else if _, ok := u.Extra["password"]; ok {
		what = append(what, "username/password")
	}
	for _, k := range []string{"as", "as-uid", "as-groups", "as-user-extra"} {
		if _, ok := u.Extra[k]; ok {
			what = append(what, "impersonation ("+k+")")
			break
		}
	}
	if len(what) == 0 {
		return ""
	}
	return fmt.Sprintf("user %q: skiffctl cannot use its %s; connecting without it", name, strings.Join(what, ", "))
}

// relativeTo resolves a relative path of an entry against the directory
// of the file the entry came from, as client-go does.
func (c *Config) relativeTo(entry, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if origin := c.origins[entry]; origin != "" {
		return filepath.Join(filepath.Dir(origin), p)
	}
	return p
}

func dataOrFile(data, file, what string) ([]byte, error) {
	if data != "" {
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, fmt.Errorf("%s-data: not base64: %w", what, err)
		}
		return b, nil
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return b, nil
	}
	return nil, nil
}
