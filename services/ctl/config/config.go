// Package config is skiffctl's kubeconfig: a YAML file (~/.skiff/config,
// or $SKIFFCONFIG) of clusters (apiserver address and CA), users (client
// certificate and key, or a bearer token) and contexts that pair a cluster
// with a user and a default namespace, one of them current. Resolve
// applies command-line overrides (--context, --server, --token,
// --namespace) and returns what a connection needs.
//
// It owns the file's format, loading and saving; dialing is package cmd's.
package config

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultServer is the apiserver's default address.
const DefaultServer = "127.0.0.1:6443"

// Config is the file.
type Config struct {
	APIVersion     string         `yaml:"apiVersion,omitempty"`
	Kind           string         `yaml:"kind,omitempty"`
	CurrentContext string         `yaml:"current-context"`
	Clusters       []NamedCluster `yaml:"clusters"`
	Users          []NamedUser    `yaml:"users"`
	Contexts       []NamedContext `yaml:"contexts"`
}

type NamedCluster struct {
	Name    string  `yaml:"name"`
	Cluster Cluster `yaml:"cluster"`
}

// Cluster is where an apiserver is and how to trust it.
type Cluster struct {
	Server                   string `yaml:"server"`
	CertificateAuthority     string `yaml:"certificate-authority,omitempty"`
	CertificateAuthorityData string `yaml:"certificate-authority-data,omitempty"`
	TLSServerName            string `yaml:"tls-server-name,omitempty"`
	InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify,omitempty"`
}

type NamedUser struct {
	Name string `yaml:"name"`
	User User   `yaml:"user"`
}

// User is how to authenticate.
type User struct {
	ClientCertificate     string `yaml:"client-certificate,omitempty"`
	ClientCertificateData string `yaml:"client-certificate-data,omitempty"`
	ClientKey             string `yaml:"client-key,omitempty"`
	ClientKeyData         string `yaml:"client-key-data,omitempty"`
	Token                 string `yaml:"token,omitempty"`
}

type NamedContext struct {
	Name    string  `yaml:"name"`
	Context Context `yaml:"context"`
}

// Context pairs a cluster with a user and a default namespace.
type Context struct {
	Cluster   string `yaml:"cluster"`
	User      string `yaml:"user,omitempty"`
	Namespace string `yaml:"namespace,omitempty"`
}

// Path is the config file: $SKIFFCONFIG, else ~/.skiff/config.
func Path(getenv func(string) string, home string) string {
	if p := getenv("SKIFFCONFIG"); p != "" {
		return p
	}
	return filepath.Join(home, ".skiff", "config")
}

// Load reads the file; a missing file is an empty config.
func Load(path string) (*Config, error) {
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
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
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
	}
	return &out
}

// Minified keeps only what the current context uses.
func (c *Config) Minified() (*Config, error) {
	ctx, ok := c.Context(c.CurrentContext)
	if !ok {
		return nil, fmt.Errorf("current-context %q not found", c.CurrentContext)
	}
	out := &Config{APIVersion: c.APIVersion, Kind: c.Kind, CurrentContext: c.CurrentContext,
		Contexts: []NamedContext{{Name: c.CurrentContext, Context: *ctx}}}
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
	if r.CA, err = dataOrFile(cl.CertificateAuthorityData, cl.CertificateAuthority, "certificate-authority"); err != nil {
		return nil, err
	}
	if r.CA != nil {
		r.TLS = true
	}
	r.ServerName, r.InsecureSkipVerify = cl.TLSServerName, cl.InsecureSkipTLSVerify
	if r.InsecureSkipVerify || r.ServerName != "" {
		r.TLS = true // settings of TLS: the connection is TLS
	}
	if r.CertPEM, err = dataOrFile(u.ClientCertificateData, u.ClientCertificate, "client-certificate"); err != nil {
		return nil, err
	}
	if r.KeyPEM, err = dataOrFile(u.ClientKeyData, u.ClientKey, "client-key"); err != nil {
		return nil, err
	}
	if (r.CertPEM == nil) != (r.KeyPEM == nil) {
		return nil, fmt.Errorf("user %q: client-certificate and client-key go together", ctx.User)
	}
	if r.CertPEM != nil {
		r.TLS = true // a client certificate is only ever shown over TLS
	}
	r.Token = u.Token
	if o.Token != "" {
		r.Token = o.Token
	}
	return r, nil
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
