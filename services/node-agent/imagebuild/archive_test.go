package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// readArchive returns the files of a tarball by name, and the names in order.
func readArchive(t *testing.T, r io.Reader) (map[string][]byte, map[string]*tar.Header, []string) {
	t.Helper()
	files := map[string][]byte{}
	hdrs := map[string]*tar.Header{}
	var names []string
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files, hdrs, names
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name], hdrs[hdr.Name] = b, hdr
		names = append(names, hdr.Name)
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// checkArchive checks a docker-archive's structure and returns its config
// and layer files.
func checkArchive(t *testing.T, archive []byte, ref string) (Config, map[string][]byte, map[string]*tar.Header, []string) {
	t.Helper()
	files, _, _ := readArchive(t, bytes.NewReader(archive))
	var manifests []Manifest
	if err := json.Unmarshal(files["manifest.json"], &manifests); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(manifests) != 1 {
		t.Fatalf("manifest.json has %d entries, want 1", len(manifests))
	}
	m := manifests[0]
	if !reflect.DeepEqual(m.RepoTags, []string{ref}) {
		t.Errorf("RepoTags = %v, want [%s]", m.RepoTags, ref)
	}
	cfgJSON, ok := files[m.Config]
	if !ok {
		t.Fatalf("config %s missing from the archive", m.Config)
	}
	if want := sha(cfgJSON) + ".json"; m.Config != want {
		t.Errorf("config named %s, want its digest %s", m.Config, want)
	}
	var cfg Config
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != runtime.GOARCH || cfg.OS != "linux" {
		t.Errorf("architecture/os = %q/%q, want %s/linux (ctr import filters images without them)", cfg.Architecture, cfg.OS, runtime.GOARCH)
	}
	if len(m.Layers) != 1 {
		t.Fatalf("%d layers, want 1", len(m.Layers))
	}
	layer, ok := files[m.Layers[0]]
	if !ok {
		t.Fatalf("layer %s missing from the archive", m.Layers[0])
	}
	if cfg.RootFS.Type != "layers" || !reflect.DeepEqual(cfg.RootFS.DiffIDs, []string{"sha256:" + sha(layer)}) {
		t.Errorf("rootfs = %+v, want layers [sha256:%s]", cfg.RootFS, sha(layer))
	}
	lfiles, lhdrs, lnames := readArchive(t, bytes.NewReader(layer))
	return cfg, lfiles, lhdrs, lnames
}

func TestWriteArchive(t *testing.T) {
	img := Image{
		Ref:          "skiff.local/demo:v1",
		Name:         "demo",
		Binary:       []byte("\x7fELF not really"),
		Env:          []string{"VERSION=v1"},
		ExposedPorts: []string{"8080", "9090/udp"},
		Labels:       map[string]string{"app": "demo"},
	}
	var buf bytes.Buffer
	id, err := WriteArchive(&buf, img)
	if err != nil {
		t.Fatal(err)
	}
	cfg, lfiles, lhdrs, lnames := checkArchive(t, buf.Bytes(), "skiff.local/demo:v1")

	want := RunConfig{
		Entrypoint:   []string{"/demo"},
		Env:          []string{defaultPath, "VERSION=v1"},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}, "9090/udp": {}},
		WorkingDir:   "/",
		Labels:       map[string]string{"app": "demo"},
	}
	if !reflect.DeepEqual(cfg.Config, want) {
		t.Errorf("config =\n%+v\nwant\n%+v", cfg.Config, want)
	}

	if wantNames := []string{"demo", "dev/", "etc/", "proc/", "run/", "sys/", "tmp/"}; !reflect.DeepEqual(lnames, wantNames) {
		t.Errorf("layer entries = %v, want %v", lnames, wantNames)
	}
	if got := lfiles["demo"]; !bytes.Equal(got, img.Binary) {
		t.Errorf("/demo = %q, want the binary", got)
	}
	if h := lhdrs["demo"]; h.Mode != 0o755 || h.Uid != 0 || h.Typeflag != tar.TypeReg {
		t.Errorf("/demo header = mode %o uid %d type %c", h.Mode, h.Uid, h.Typeflag)
	}
	if h := lhdrs["tmp/"]; h.Mode != 0o1777 || h.Typeflag != tar.TypeDir {
		t.Errorf("/tmp header = mode %o type %c, want a 1777 directory", h.Mode, h.Typeflag)
	}
	if _, ok := lfiles["etc/passwd"]; ok {
		t.Error("the layer has an /etc/passwd")
	}

	// The same image gives the same bytes and ID.
	var again bytes.Buffer
	id2, err := WriteArchive(&again, img)
	if err != nil {
		t.Fatal(err)
	}
	if id != id2 || !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("WriteArchive is not reproducible")
	}
	if !strings.HasPrefix(id, "sha256:") || len(id) != len("sha256:")+64 {
		t.Errorf("image ID %q", id)
	}
}

func TestWriteArchiveRefusesBadInput(t *testing.T) {
	cases := map[string]Image{
		"no ref":        {Name: "x"},
		"digest ref":    {Ref: "skiff.local/x@sha256:00", Name: "x"},
		"empty tag":     {Ref: "skiff.local/x:", Name: "x"},
		"no name":       {Ref: "skiff.local/x:v1"},
		"name with dir": {Ref: "skiff.local/x:v1", Name: "bin/x"},
	}
	for name, img := range cases {
		if _, err := WriteArchive(io.Discard, img); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestSplitRef(t *testing.T) {
	cases := []struct{ ref, repo, tag string }{
		{"skiff.local/demo:v1", "skiff.local/demo", "v1"},
		{"skiff.local/pause:3.9", "skiff.local/pause", "3.9"},
		{"localhost:5000/demo", "localhost:5000/demo", "latest"},
		{"localhost:5000/demo:v2", "localhost:5000/demo", "v2"},
	}
	for _, c := range cases {
		repo, tag, err := splitRef(c.ref)
		if err != nil || repo != c.repo || tag != c.tag {
			t.Errorf("splitRef(%q) = %q, %q, %v; want %q, %q", c.ref, repo, tag, err, c.repo, c.tag)
		}
	}
}

// TestBuild compiles the pause image for real (the go command is needed)
// and checks the cache.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a Go program")
	}
	ctx := context.Background()
	spec := Spec{
		Package:  "skiff.dev/services/node-agent/images/pause",
		Ref:      "skiff.local/pause:test",
		LDFlags:  "-X main.version=test",
		CacheDir: t.TempDir(),
	}
	tarPath, err := Build(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	archive, err := os.ReadFile(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg, lfiles, lhdrs, _ := checkArchive(t, archive, "skiff.local/pause:test")
	if !reflect.DeepEqual(cfg.Config.Entrypoint, []string{"/pause"}) {
		t.Errorf("Entrypoint = %v", cfg.Config.Entrypoint)
	}
	bin, ok := lfiles["pause"]
	if !ok || lhdrs["pause"].Mode != 0o755 {
		t.Fatal("the layer lacks an executable /pause")
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("/pause is not an ELF binary: %v", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("/pause is dynamically linked (has PT_INTERP)")
		}
	}

	again, err := Build(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if again != tarPath {
		t.Errorf("second Build gave %s, want the cached %s", again, tarPath)
	}
	// An old unused tarball goes when a new one is made.
	old := time.Now().Add(-maxAge - time.Hour)
	if err := os.Chtimes(tarPath, old, old); err != nil {
		t.Fatal(err)
	}
	spec.LDFlags = "-X main.version=other"
	other, err := Build(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if other == tarPath {
		t.Error("a different LDFlags gave the same cached tarball")
	}
	if _, err := os.Stat(tarPath); !os.IsNotExist(err) {
		t.Errorf("the unused tarball %s was not pruned (%v)", tarPath, err)
	}
}
