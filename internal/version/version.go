// Package version is the version a Skiff binary reports (skiffctl
// version, the apiserver's Discovery Version and --version). It owns the
// build's version and nothing else.
//
// make build and scripts/compose.sh set it with
//
//	-ldflags "-X skiff.dev/internal/version.gitVersion=$(git describe --tags --always --dirty) -X skiff.dev/internal/version.gitCommit=$(git rev-parse --short HEAD)"
//
// Without them (go run, go install, go build) it is read from what the Go
// toolchain recorded in the binary (runtime/debug.ReadBuildInfo): the main
// module's version (go install skiff.dev/...@v1.2.3, or the pseudo-version
// go build stamps from the repository), else the VCS revision (go build
// -buildvcs=true in the go.work workspace, where the default records
// none), else v0.0.0-dev.
package version

import (
	"runtime"
	"runtime/debug"
	"time"
)

// Set by -ldflags -X (see the package comment).
var gitVersion, gitCommit string

// Dev is the version of a build that knows none.
const Dev = "v0.0.0-dev"

// Info is a build's version, as Kubernetes' version.Info names it.
type Info struct {
	GitVersion string
	GitCommit  string // "" when not known
	GoVersion  string
	Platform   string // GOOS/GOARCH
}

// Get is this binary's version.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(gitVersion, gitCommit, bi)
}

// resolve is the version of a build given the -X values and the build
// info (nil: none).
func resolve(ver, commit string, bi *debug.BuildInfo) Info {
	var rev, revTime string
	modified := false
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				revTime = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if ver == "" && bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		ver = bi.Main.Version
	}
	if ver == "" && rev != "" {
		ver = pseudoVersion(rev, revTime, modified)
	}
	if ver == "" {
		ver = Dev
	}
	if commit == "" {
		commit = rev
	}
	return Info{GitVersion: ver, GitCommit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}

// pseudoVersion is a Go pseudo-version of a revision, as go build stamps
// one outside a workspace: v0.0.0-<UTC commit time>-<12 hex>[+dirty].
func pseudoVersion(rev, revTime string, modified bool) string {
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "v0.0.0-"
	if t, err := time.Parse(time.RFC3339Nano, revTime); err == nil {
		v += t.UTC().Format("20060102150405") + "-"
	}
	v += rev
	if modified {
		v += "+dirty"
	}
	return v
}
