package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"path"
	"slices"
	"strings"

	"go.uber.org/zap"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "skiff.dev/proto/core/v1"
)

// Image pull secrets, as the kubelet's credential keyring reads them: a
// pod's imagePullSecrets of type kubernetes.io/dockerconfigjson (key
// .dockerconfigjson: {"auths": {"<registry>": {...}}}) or
// kubernetes.io/dockercfg (key .dockercfg: {"<registry>": {...}}) give
// credentials per registry; those whose registry matches the image's
// (host, with "*" globs per label, the same port, a path prefix of the
// repository) are tried in turn, the most specific first.

const (
	secretTypeDockerConfigJSON = "kubernetes.io/dockerconfigjson"
	secretTypeDockercfg        = "kubernetes.io/dockercfg"
)

// dockerAuth is one registry's entry in a Docker config.
type dockerAuth struct {
	Username      string `json:"username"`
	Password      string `json:"password"`
	Auth          string `json:"auth"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// pullAuths returns the credentials of p's imagePullSecrets that apply to
// image, most specific registry first. A secret that cannot be read or
// parsed is skipped (logged by name, never by content), as the kubelet
// does: the pull is tried without it.
func pullAuths(ctx context.Context, p *corev1.Pod, image string, get sources, log *zap.Logger) []*runtimeapi.AuthConfig {
	if len(p.GetSpec().GetImagePullSecrets()) == 0 {
		return nil
	}
	ns := p.GetMetadata().GetNamespace()
	keyring := map[string]dockerAuth{}
	for _, ref := range p.GetSpec().GetImagePullSecrets() {
		s, err := get.getSecret(ctx, ns, ref.GetName())
		if err != nil {
			log.Warn("unable to retrieve pull secret, the image pull may not succeed", zap.String("pod", ns+"/"+p.GetMetadata().GetName()),
				zap.String("secret", ref.GetName()), zap.String("error", secretError(ns, ref.GetName(), err).Error()))
			continue
		}
		auths, err := parseDockerConfig(s)
		if err != nil {
			log.Warn("pull secret is not a Docker config", zap.String("pod", ns+"/"+p.GetMetadata().GetName()), zap.String("secret", ref.GetName()))
			continue
		}
		for reg, a := range auths {
			if _, ok := keyring[reg]; !ok { // the first secret naming a registry wins
				keyring[reg] = a
			}
		}
	}
	return lookupAuth(keyring, image)
}

// parseDockerConfig reads a dockerconfigjson or dockercfg Secret.
func parseDockerConfig(s *corev1.Secret) (map[string]dockerAuth, error) {
	switch s.GetType() {
	case secretTypeDockerConfigJSON:
		var cfg struct {
			Auths map[string]dockerAuth `json:"auths"`
		}
		err := json.Unmarshal(s.GetData()[".dockerconfigjson"], &cfg)
		return cfg.Auths, err
	case secretTypeDockercfg:
		var cfg map[string]dockerAuth
		err := json.Unmarshal(s.GetData()[".dockercfg"], &cfg)
		return cfg, err
	}
	return nil, errNotDockerConfig
}

var errNotDockerConfig = errors.New("not a kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg secret")

// lookupAuth returns the entries of keyring whose registry matches image.
func lookupAuth(keyring map[string]dockerAuth, image string) []*runtimeapi.AuthConfig {
	host, repo := splitImage(image)
	var keys []string
	for k := range keyring {
		if registryMatches(k, host, repo) {
			keys = append(keys, k)
		}
	}
	// Most specific first: longer keys (a path, a port), then by name.
	slices.SortFunc(keys, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	out := make([]*runtimeapi.AuthConfig, 0, len(keys))
	for _, k := range keys {
		a := keyring[k]
		user, pass := a.Username, a.Password
		if user == "" && pass == "" && a.Auth != "" {
			if dec, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
				user, pass, _ = strings.Cut(string(dec), ":")
			}
		}
		// No ServerAddress, as the kubelet's keyring gives none: containerd
		// would otherwise withhold the credentials from a mirror or a
		// hosts.toml endpoint whose host differs from the image's.
		out = append(out, &runtimeapi.AuthConfig{Username: user, Password: pass,
			IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken})
	}
	return out
}

// splitImage returns an image reference's registry host (docker.io when
// it names none) and repository path, without tag or digest.
func splitImage(image string) (host, repo string) {
	if i := strings.IndexByte(image, '@'); i >= 0 {
		image = image[:i]
	}
	first, rest, ok := strings.Cut(image, "/")
	if !ok || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		host, rest = "docker.io", image
	} else {
		host = first
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.Contains(rest[i:], "/") {
		rest = rest[:i]
	}
	if host == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return host, rest
}

// registryMatches is the keyring's match of a registry key (a URL or
// host[:port][/path], "*" globs per host label) against an image's host
// and repository.
func registryMatches(key, host, repo string) bool {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	keyHost, keyPath, _ := strings.Cut(key, "/")
	keyPath = strings.TrimSuffix(keyPath, "/")
	if keyHost == "index.docker.io" || keyHost == "registry-1.docker.io" {
		keyHost = "docker.io"
		if keyPath == "v1" || keyPath == "v2" {
			keyPath = ""
		}
	}
	kh, kport, _ := strings.Cut(keyHost, ":")
	ih, iport, _ := strings.Cut(host, ":")
	if kport != iport {
		return false
	}
	kl, il := strings.Split(kh, "."), strings.Split(ih, ".")
	if len(kl) != len(il) {
		return false
	}
	for i := range kl {
		if ok, _ := path.Match(kl[i], il[i]); !ok {
			return false
		}
	}
	return keyPath == "" || repo == keyPath || strings.HasPrefix(repo, keyPath+"/")
}
