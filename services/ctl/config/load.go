package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Rules say which files make the config, as client-go's loading rules
// do: --kubeconfig alone when it is given (the file must exist); else the
// files of $KUBECONFIG (':'-separated, ';' on Windows) merged, missing
// ones skipped; else skiffctl's default file (Path), which may be missing.
type Rules struct {
	// Explicit is the --kubeconfig file.
	Explicit string
	// Precedence are the files merged when there is no Explicit one, the
	// first winning.
	Precedence []string
}

// NewRules returns the rules for a --kubeconfig value (may be empty) and
// the environment.
func NewRules(explicit string, getenv func(string) string, home string) Rules {
	if explicit != "" {
		return Rules{Explicit: explicit}
	}
	var files []string
	seen := map[string]bool{}
	for _, f := range filepath.SplitList(getenv("KUBECONFIG")) {
		if f != "" && !seen[f] {
			seen[f] = true
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		files = []string{Path(getenv, home)}
	}
	return Rules{Precedence: files}
}

// Files are the files read, in order of precedence.
func (r Rules) Files() []string {
	if r.Explicit != "" {
		return []string{r.Explicit}
	}
	return r.Precedence
}

// Load reads and merges the files. A missing Explicit file is an error
// (that wraps fs.ErrNotExist and names it); other missing files are
// skipped.
func (r Rules) Load() (*Config, error) {
	if r.Explicit != "" {
		if _, err := os.Stat(r.Explicit); err != nil {
			return nil, err
		}
	}
	var files []*Config
	for _, path := range r.Files() {
		c, err := LoadFile(path)
		if err != nil {
			return nil, err
		}
		files = append(files, c)
	}
	return Merge(files...), nil
}

// LoadOrEmpty is Load, but a missing Explicit file is an empty config
// (kubectl config's commands start from one).
func (r Rules) LoadOrEmpty() (*Config, error) {
	c, err := r.Load()
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{}, nil
	}
	return c, err
}

// Merge merges configs as client-go does: for clusters, users and
// contexts the first config that defines a name wins, whole (entries are
// not merged field by field); current-context comes from the first
// config that sets one; so does each of the other top-level fields
// (preferences, extensions).
func Merge(cs ...*Config) *Config {
	out := &Config{APIVersion: "v1", Kind: "Config", origins: map[string]string{}}
	for _, c := range cs {
		if out.CurrentContext == "" && c.CurrentContext != "" {
			out.CurrentContext = c.CurrentContext
			out.origins["current-context"] = c.origins["current-context"]
		}
		for _, e := range c.Clusters {
			if _, ok := out.Cluster(e.Name); !ok {
				out.Clusters = append(out.Clusters, e)
				out.origins["clusters/"+e.Name] = c.origins["clusters/"+e.Name]
			}
		}
		for _, e := range c.Users {
			if _, ok := out.User(e.Name); !ok {
				out.Users = append(out.Users, e)
				out.origins["users/"+e.Name] = c.origins["users/"+e.Name]
			}
		}
		for _, e := range c.Contexts {
			if _, ok := out.Context(e.Name); !ok {
				out.Contexts = append(out.Contexts, e)
				out.origins["contexts/"+e.Name] = c.origins["contexts/"+e.Name]
			}
		}
		for k, v := range c.Extra {
			if _, ok := out.Extra[k]; !ok {
				if out.Extra == nil {
					out.Extra = map[string]any{}
				}
				out.Extra[k] = v
			}
		}
	}
	return out
}

// Entry names what a change touches: Section is "clusters", "users" or
// "contexts" with the entry's Name, or "current-context".
type Entry struct {
	Section, Name string
}

// CurrentContextEntry is the current-context setting.
var CurrentContextEntry = Entry{Section: "current-context"}

// FileFor is the file a change to e is written to, as kubectl chooses
// it: the Explicit file; else the file e came from in merged; else the
// first existing file of the precedence, else its first.
func (r Rules) FileFor(merged *Config, e Entry) string {
	if r.Explicit != "" {
		return r.Explicit
	}
	key := e.Section
	if e.Name != "" {
		key += "/" + e.Name
	}
	if f := merged.origins[key]; f != "" {
		return f
	}
	for _, f := range r.Precedence {
		if _, err := os.Stat(f); err == nil {
			return f
		}
	}
	return r.Precedence[0]
}

// Edit changes e in the one file it belongs to (FileFor): fn gets that
// file's config, everything in it kept, and the file is saved.
func (r Rules) Edit(merged *Config, e Entry, fn func(*Config)) error {
	path := r.FileFor(merged, e)
	c, err := LoadFile(path)
	if err != nil {
		return err
	}
	fn(c)
	return c.Save(path)
}
