package encryption

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// APIVersion and Kind of the configuration file.
const (
	APIVersion = "apiserver.config.k8s.io/v1"
	Kind       = "EncryptionConfiguration"
)

// Configuration is Kubernetes' EncryptionConfiguration.
type Configuration struct {
	Kind       string                  `json:"kind"`
	APIVersion string                  `json:"apiVersion"`
	Resources  []ResourceConfiguration `json:"resources"`
}

// ResourceConfiguration is one group of resources and its providers.
type ResourceConfiguration struct {
	// Resources are "secrets", "configmaps", "deployments.apps", "*.apps"
	// (a group's every resource), "*." (the core group's) or "*.*".
	Resources []string `json:"resources"`
	// Providers in order: the first encrypts, all decrypt.
	Providers []ProviderConfiguration `json:"providers"`
}

// ProviderConfiguration is exactly one provider.
type ProviderConfiguration struct {
	AESGCM    *KeysConfiguration `json:"aesgcm,omitempty"`
	Secretbox *KeysConfiguration `json:"secretbox,omitempty"`
	Identity  *struct{}          `json:"identity,omitempty"`
	// Providers skiff does not implement, named so the error can say so.
	AESCBC *KeysConfiguration `json:"aescbc,omitempty"`
	KMS    *struct{}          `json:"kms,omitempty"`
}

// KeysConfiguration lists a provider's keys; the first encrypts.
type KeysConfiguration struct {
	Keys []Key `json:"keys"`
}

// Key is a named key; Secret is its base64 encoding.
type Key struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
}

// LoadFile reads and checks an EncryptionConfiguration file.
func LoadFile(path string) (*Configuration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("encryption provider config: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("encryption provider config %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes YAML or JSON (unknown fields are errors) and checks it.
func Parse(b []byte) (*Configuration, error) {
	var c Configuration
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks the configuration as Kubernetes does; each error names
// its field ("resources[0].providers[1].aesgcm.keys[0].secret"). Key
// material never appears in an error.
func (c *Configuration) Validate() error {
	var errs []error
	add := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{path}, args...)...))
	}
	if c.Kind != Kind {
		add("kind", "Invalid value: %q: must be %s", c.Kind, Kind)
	}
	if c.APIVersion != APIVersion {
		add("apiVersion", "Invalid value: %q: must be %s", c.APIVersion, APIVersion)
	}
	if len(c.Resources) == 0 {
		add("resources", "Required value: at least one resource group is needed")
	}
	seen := map[string]string{}
	for i, rc := range c.Resources {
		rp := fmt.Sprintf("resources[%d]", i)
		if len(rc.Resources) == 0 {
			add(rp+".resources", "Required value")
		}
		for j, r := range rc.Resources {
			p := fmt.Sprintf("%s.resources[%d]", rp, j)
			switch {
			case r == "":
				add(p, "Required value")
			case r != strings.ToLower(r):
				add(p, "Invalid value: %q: resource name must be lower case", r)
			case strings.HasPrefix(r, "*") && r != "*.*" && r != "*." && !strings.HasPrefix(r, "*."):
				add(p, "Invalid value: %q: a wildcard is \"*.<group>\", \"*.\" or \"*.*\"", r)
			case r == "*":
				add(p, "Invalid value: %q: use \"*.\" for the core group's resources or \"*.*\" for all", r)
			default:
				if prev, dup := seen[r]; dup {
					add(p, "Duplicate value: %q (also at %s)", r, prev)
				}
				seen[r] = p
			}
		}
		if len(rc.Providers) == 0 {
			add(rp+".providers", "Required value")
		}
		for j, pc := range rc.Providers {
			pp := fmt.Sprintf("%s.providers[%d]", rp, j)
			n := 0
			for _, set := range []bool{pc.AESGCM != nil, pc.Secretbox != nil, pc.Identity != nil, pc.AESCBC != nil, pc.KMS != nil} {
				if set {
					n++
				}
			}
			switch {
			case n == 0:
				add(pp, "Invalid value: provider does not contain any of the expected providers: aesgcm, secretbox, identity")
			case n > 1:
				add(pp, "Invalid value: more than one provider specified in a single element, should split into different list elements")
			case pc.AESCBC != nil:
				add(pp+".aescbc", "Unsupported value: skiff implements aesgcm, secretbox and identity")
			case pc.KMS != nil:
				add(pp+".kms", "Unsupported value: skiff implements aesgcm, secretbox and identity")
			case pc.AESGCM != nil:
				errs = append(errs, validateKeys(pp+".aesgcm", pc.AESGCM, aesgcmKeySizes)...)
			case pc.Secretbox != nil:
				errs = append(errs, validateKeys(pp+".secretbox", pc.Secretbox, []int{32})...)
			}
		}
	}
	return errors.Join(errs...)
}

var aesgcmKeySizes = []int{16, 24, 32}

func validateKeys(p string, kc *KeysConfiguration, sizes []int) []error {
	var errs []error
	if len(kc.Keys) == 0 {
		return []error{fmt.Errorf("%s.keys: Required value: at least one key is needed", p)}
	}
	names := map[string]bool{}
	for i, k := range kc.Keys {
		kp := fmt.Sprintf("%s.keys[%d]", p, i)
		switch {
		case k.Name == "":
			errs = append(errs, fmt.Errorf("%s.name: Required value", kp))
		case strings.Contains(k.Name, ":"):
			errs = append(errs, fmt.Errorf("%s.name: Invalid value: %q: key name must not contain ':'", kp, k.Name))
		case names[k.Name]:
			errs = append(errs, fmt.Errorf("%s.name: Duplicate value: %q", kp, k.Name))
		}
		names[k.Name] = true
		if k.Secret == "" {
			errs = append(errs, fmt.Errorf("%s.secret: Required value", kp))
			continue
		}
		key, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.secret: Invalid value: \"REDACTED\": secrets must be base64 encoded", kp))
			continue
		}
		ok := false
		for _, n := range sizes {
			ok = ok || len(key) == n
		}
		if !ok {
			errs = append(errs, fmt.Errorf("%s.secret: Invalid value: \"REDACTED\": secret is not of the expected length, got %d, expected one of %v", kp, len(key), sizes))
		}
	}
	return errs
}
