package apiserver

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"
)

func TestParseMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr string
	}{
		{in: "", want: MemoryLimitAuto},
		{in: "0", want: 0},
		{in: "2Gi", want: 2 << 30},
		{in: "1500M", want: 1_500_000_000},
		{in: "1048576", want: 1 << 20},
		{in: "-1Gi", wantErr: `--memory-limit "-1Gi": not a whole number of bytes`},
		{in: "1500m", wantErr: `--memory-limit "1500m": not a whole number of bytes`},
		{in: "lots", wantErr: `--memory-limit "lots": invalid quantity`},
	} {
		got, err := ParseMemoryLimit(tc.in)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "want a size such as 2Gi") {
				t.Errorf("ParseMemoryLimit(%q) = %d, %v; want an error with %q", tc.in, got, err, tc.wantErr)
			}
		case err != nil || got != tc.want:
			t.Errorf("ParseMemoryLimit(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestCgroupMemoryMax(t *testing.T) {
	for _, tc := range []struct {
		name     string
		files    map[string]string
		want     int64
		wantFile string
	}{
		{"cgroup v2 with a limit", map[string]string{
			"proc/self/cgroup":                          "0::/kubepods/pod1/c1\n",
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": "536870912\n",
		}, 512 << 20, "/sys/fs/cgroup/kubepods/pod1/c1/memory.max"},
		{"cgroup v2 without a limit", map[string]string{
			"proc/self/cgroup":                          "0::/kubepods/pod1/c1\n",
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": "max\n",
		}, 0, ""},
		{"cgroup v2 in a container's namespace", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "1073741824\n",
		}, 1 << 30, "/sys/fs/cgroup/memory.max"},
		{"cgroup v1 with a limit", map[string]string{
			"proc/self/cgroup": "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "268435456\n",
		}, 256 << 20, "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"},
		{"cgroup v1, path not mounted: the namespace's root", map[string]string{
			"proc/self/cgroup":                           "4:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n",
		}, 256 << 20, "/sys/fs/cgroup/memory/memory.limit_in_bytes"},
		{"cgroup v1 unlimited", map[string]string{
			"proc/self/cgroup":                           "4:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		}, 0, ""},
		{"no cgroup at all", map[string]string{}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fstest.MapFS{}
			for name, data := range tc.files {
				root[name] = &fstest.MapFile{Data: []byte(data)}
			}
			got, file, ok := cgroupMemoryMax(root)
			if got != tc.want || file != tc.wantFile || ok != (tc.want > 0) {
				t.Errorf("cgroupMemoryMax = %d, %q, %v; want %d, %q", got, file, ok, tc.want, tc.wantFile)
			}
		})
	}
}

// TestTuneMemory: the flag first, then GOMEMLIMIT, then 90% of the
// container's limit; the runtime's limit is what it says.
func TestTuneMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	container := fstest.MapFS{
		"proc/self/cgroup":         {Data: []byte("0::/\n")},
		"sys/fs/cgroup/memory.max": {Data: []byte("1000000000\n")},
	}
	t.Setenv("GOMEMLIMIT", "")
	for _, tc := range []struct {
		name       string
		flag       int64
		gomemlimit int64 // what the runtime took from GOMEMLIMIT at start; 0: unset
		root       fstest.MapFS
		want       int64
		wantFrom   string
	}{
		{"the flag", 2 << 30, 0, container, 2 << 30, "--memory-limit"},
		{"the flag says none", 0, 0, container, 0, "--memory-limit"},
		{"the flag wins over GOMEMLIMIT", 1 << 30, 3 << 30, container, 1 << 30, "--memory-limit"},
		{"GOMEMLIMIT", MemoryLimitAuto, 3 << 30, container, 3 << 30, "GOMEMLIMIT"},
		{"the container's", MemoryLimitAuto, 0, container, 900_000_000, "90% of /sys/fs/cgroup/memory.max (1000000000)"},
		{"nothing", MemoryLimitAuto, 0, fstest.MapFS{}, 0, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			if tc.gomemlimit > 0 {
				t.Setenv("GOMEMLIMIT", "set")
				debug.SetMemoryLimit(tc.gomemlimit)
			}
			got, from := TuneMemory(tc.flag, tc.root)
			if got != tc.want || from != tc.wantFrom {
				t.Errorf("TuneMemory = %d from %q, want %d from %q", got, from, tc.want, tc.wantFrom)
			}
			runtimeLimit := debug.SetMemoryLimit(-1)
			if want := tc.want; (want == 0 && runtimeLimit != math.MaxInt64) || (want > 0 && runtimeLimit != want) {
				t.Errorf("the runtime's limit is %d, want %d", runtimeLimit, want)
			}
		})
	}
}
