package version

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := func(main string, kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "skiff.dev/services/ctl", Version: main}}
		for i := 0; i+1 < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	const rev = "ecc86ff6060aeb52982d553ded70cad7e922ba3c"
	for _, tc := range []struct {
		name        string
		ver, commit string
		bi          *debug.BuildInfo
		want        Info
	}{
		{"ldflags win", "v1.2.3", "abc1234", vcs("v9.9.9", "vcs.revision", rev),
			Info{GitVersion: "v1.2.3", GitCommit: "abc1234"}},
		{"ldflags without a commit: the VCS revision", "v1.2.3", "", vcs("(devel)", "vcs.revision", rev),
			Info{GitVersion: "v1.2.3", GitCommit: rev}},
		{"go install @version", "", "", vcs("v1.4.0"),
			Info{GitVersion: "v1.4.0"}},
		{"go build with VCS info, uncommitted changes", "", "", vcs("(devel)", "vcs.revision", rev, "vcs.time", "2026-11-25T19:06:42Z", "vcs.modified", "true"),
			Info{GitVersion: "v0.0.0-20261125190642-ecc86ff6060a+dirty", GitCommit: rev}},
		{"go build with VCS info, clean", "", "", vcs("(devel)", "vcs.revision", rev, "vcs.time", "2026-11-25T19:06:42Z", "vcs.modified", "false"),
			Info{GitVersion: "v0.0.0-20261125190642-ecc86ff6060a", GitCommit: rev}},
		{"nothing recorded", "", "", vcs("(devel)"), Info{GitVersion: Dev}},
		{"no build info", "", "", nil, Info{GitVersion: Dev}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolve(tc.ver, tc.commit, tc.bi)
			if got.GitVersion != tc.want.GitVersion || got.GitCommit != tc.want.GitCommit || got.GoVersion == "" || got.Platform == "" {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
