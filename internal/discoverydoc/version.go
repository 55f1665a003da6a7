package discoverydoc

import (
	"runtime"
	"strings"

	"skiff.dev/internal/version"
)

// The Kubernetes version Skiff's API is compatible with: /version's major
// and minor, the emulated version (the same) and the oldest version it
// stays compatible with (one minor before, as kube-apiserver says of
// itself).
const (
	KubernetesMajor = "1"
	KubernetesMinor = "36"
	// KubernetesVersion is the semantic version /version's gitVersion
	// starts with.
	KubernetesVersion     = "v" + KubernetesMajor + "." + KubernetesMinor + ".0"
	minCompatibilityMinor = "35"
)

// unstampedBuildDate is kube-apiserver's buildDate of a build that was
// given none; Skiff's builds have none.
const unstampedBuildDate = "1970-01-01T00:00:00Z"

type versionInfo struct {
	Major                 string `json:"major"`
	Minor                 string `json:"minor"`
	EmulationMajor        string `json:"emulationMajor,omitempty"`
	EmulationMinor        string `json:"emulationMinor,omitempty"`
	MinCompatibilityMajor string `json:"minCompatibilityMajor,omitempty"`
	MinCompatibilityMinor string `json:"minCompatibilityMinor,omitempty"`
	GitVersion            string `json:"gitVersion"`
	GitCommit             string `json:"gitCommit"`
	GitTreeState          string `json:"gitTreeState"`
	BuildDate             string `json:"buildDate"`
	GoVersion             string `json:"goVersion"`
	Compiler              string `json:"compiler"`
	Platform              string `json:"platform"`
}

// Version is /version (k8s.io/apimachinery's version.Info) of a Skiff
// build: Kubernetes 1.36 by major and minor, and a gitVersion that is
// KubernetesVersion with Skiff's own version as build metadata
// ("v1.36.0+skiff.v0.4.0-3-gabc1234"), so that clients comparing semantic
// versions (kubectl's version skew, Helm's kubeVersion constraints) see
// 1.36 and a reader sees the Skiff build. gitTreeState is "dirty" for a
// build from a modified tree, "clean" for one of a known commit, else "".
func Version(info version.Info) []byte {
	tree := ""
	switch {
	case strings.HasSuffix(info.GitVersion, "dirty"):
		tree = "dirty"
	case info.GitCommit != "":
		tree = "clean"
	}
	return encode(versionInfo{
		Major: KubernetesMajor, Minor: KubernetesMinor,
		EmulationMajor: KubernetesMajor, EmulationMinor: KubernetesMinor,
		MinCompatibilityMajor: KubernetesMajor, MinCompatibilityMinor: minCompatibilityMinor,
		GitVersion:   GitVersion(info.GitVersion),
		GitCommit:    info.GitCommit,
		GitTreeState: tree,
		BuildDate:    unstampedBuildDate,
		GoVersion:    info.GoVersion,
		Compiler:     runtime.Compiler,
		Platform:     info.Platform,
	})
}

// GitVersion is /version's gitVersion of a Skiff version:
// KubernetesVersion, then "+skiff." and the Skiff version with what
// semantic versions do not allow in build metadata replaced by "-"
// ("v0.0.0-20260101120000-abcdef123456+dirty" becomes
// "v0.0.0-20260101120000-abcdef123456-dirty").
func GitVersion(skiffVersion string) string {
	var b strings.Builder
	b.WriteString(KubernetesVersion + "+skiff")
	for _, ident := range strings.FieldsFunc(skiffVersion, func(r rune) bool { return r == '.' }) {
		b.WriteByte('.')
		for _, r := range ident {
			if r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
				b.WriteRune(r)
			} else {
				b.WriteByte('-')
			}
		}
	}
	return b.String()
}
