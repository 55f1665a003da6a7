package imagebuild

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"time"
)

// epoch is the modification time of every layer entry and the image's
// creation time, so that an image depends only on its contents.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// skeleton is the directory tree of every image besides the binary: mount
// points the runtime expects and a writable /tmp. There is no /etc/passwd:
// containers run as uid 0 unless the pod says otherwise by number.
var skeleton = []struct {
	name string
	mode int64
}{
	{"dev/", 0o755},
	{"etc/", 0o755},
	{"proc/", 0o555},
	{"run/", 0o755},
	{"sys/", 0o555},
	{"tmp/", 0o1777},
}

// Image is what WriteArchive writes: one binary and the image config.
type Image struct {
	// Ref is the image's tag, e.g. "skiff.local/demo:v1".
	Ref string
	// Name is the binary's file name; it lands at /<Name>.
	Name string
	// Binary is the executable's content.
	Binary []byte
	// Entrypoint defaults to ["/<Name>"].
	Entrypoint []string
	Cmd        []string
	// Env holds "KEY=value" entries; a PATH is added when missing.
	Env []string
	// ExposedPorts like "8080/tcp" (a bare "8080" means tcp).
	ExposedPorts []string
	// WorkingDir defaults to "/".
	WorkingDir string
	Labels     map[string]string
	// Arch defaults to runtime.GOARCH; the OS is always linux.
	Arch string
	// CreatedBy goes to the config's history.
	CreatedBy string
}

// Manifest is one entry of a docker-archive's manifest.json.
type Manifest struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

// Config is the part of the OCI/Docker image config that imagebuild writes.
type Config struct {
	Architecture string        `json:"architecture"`
	OS           string        `json:"os"`
	Created      time.Time     `json:"created"`
	Config       RunConfig     `json:"config"`
	RootFS       RootFS        `json:"rootfs"`
	History      []HistoryItem `json:"history,omitempty"`
}

// RunConfig is the image config's "config": how a container starts.
type RunConfig struct {
	Entrypoint   []string            `json:"Entrypoint,omitempty"`
	Cmd          []string            `json:"Cmd,omitempty"`
	Env          []string            `json:"Env,omitempty"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
	WorkingDir   string              `json:"WorkingDir,omitempty"`
	Labels       map[string]string   `json:"Labels,omitempty"`
}

// RootFS lists the layers' uncompressed digests.
type RootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

// HistoryItem is one line of the image's history.
type HistoryItem struct {
	Created   time.Time `json:"created"`
	CreatedBy string    `json:"created_by,omitempty"`
}

// defaultPath is the PATH an image gets when its Env has none.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// WriteArchive writes img as a docker-archive tarball to w and returns the
// image ID (the config's digest, "sha256:<hex>").
func WriteArchive(w io.Writer, img Image) (string, error) {
	repo, tag, err := splitRef(img.Ref)
	if err != nil {
		return "", err
	}
	if img.Name == "" || strings.Contains(img.Name, "/") {
		return "", fmt.Errorf("imagebuild: image %q: bad binary name %q", img.Ref, img.Name)
	}
	layer, err := layerTar(img.Name, img.Binary)
	if err != nil {
		return "", err
	}
	diffID := digest(layer)

	cfg := Config{
		Architecture: img.Arch,
		OS:           "linux",
		Created:      epoch,
		Config: RunConfig{
			Entrypoint: img.Entrypoint,
			Cmd:        img.Cmd,
			Env:        img.Env,
			WorkingDir: img.WorkingDir,
			Labels:     img.Labels,
		},
		RootFS:  RootFS{Type: "layers", DiffIDs: []string{"sha256:" + diffID}},
		History: []HistoryItem{{Created: epoch, CreatedBy: img.CreatedBy}},
	}
	if cfg.Architecture == "" {
		cfg.Architecture = runtime.GOARCH
	}
	if len(cfg.Config.Entrypoint) == 0 {
		cfg.Config.Entrypoint = []string{"/" + img.Name}
	}
	if !hasPath(cfg.Config.Env) {
		cfg.Config.Env = append([]string{defaultPath}, cfg.Config.Env...)
	}
	if cfg.Config.WorkingDir == "" {
		cfg.Config.WorkingDir = "/"
	}
	if len(img.ExposedPorts) > 0 {
		cfg.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range img.ExposedPorts {
			if !strings.Contains(p, "/") {
				p += "/tcp"
			}
			cfg.Config.ExposedPorts[p] = struct{}{}
		}
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	cfgDigest := digest(cfgJSON)

	manifest, err := json.Marshal([]Manifest{{
		Config:   cfgDigest + ".json",
		RepoTags: []string{repo + ":" + tag},
		Layers:   []string{diffID + "/layer.tar"},
	}})
	if err != nil {
		return "", err
	}
	repositories, err := json.Marshal(map[string]map[string]string{repo: {tag: diffID}})
	if err != nil {
		return "", err
	}

	tw := tar.NewWriter(w)
	files := []struct {
		name string
		data []byte
	}{
		{diffID + "/", nil},
		{diffID + "/VERSION", []byte("1.0")},
		{diffID + "/layer.tar", layer},
		{cfgDigest + ".json", cfgJSON},
		{"manifest.json", manifest},
		{"repositories", repositories},
	}
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if strings.HasSuffix(f.name, "/") {
			hdr.Mode, hdr.Typeflag = 0o755, tar.TypeDir
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	return "sha256:" + cfgDigest, nil
}

// layerTar is the image's only layer: the skeleton and /<name>.
func layerTar(name string, binary []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	type entry struct {
		hdr  *tar.Header
		data []byte
	}
	var entries []entry
	for _, d := range skeleton {
		entries = append(entries, entry{hdr: &tar.Header{Name: d.name, Mode: d.mode, Typeflag: tar.TypeDir}})
	}
	entries = append(entries, entry{
		hdr:  &tar.Header{Name: name, Mode: 0o755, Typeflag: tar.TypeReg, Size: int64(len(binary))},
		data: binary,
	})
	sort.Slice(entries, func(i, j int) bool { return entries[i].hdr.Name < entries[j].hdr.Name })
	for _, e := range entries {
		e.hdr.ModTime = epoch
		e.hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(e.hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// splitRef splits "host/path:tag" into its repository and tag; a digest
// reference is refused (an archive names images by tag).
func splitRef(ref string) (repo, tag string, err error) {
	if ref == "" || strings.Contains(ref, "@") {
		return "", "", fmt.Errorf("imagebuild: bad image reference %q: want repository:tag", ref)
	}
	repo, tag = ref, "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo, tag = ref[:i], ref[i+1:]
	}
	if repo == "" || tag == "" {
		return "", "", fmt.Errorf("imagebuild: bad image reference %q: want repository:tag", ref)
	}
	return repo, tag, nil
}

func hasPath(env []string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			return true
		}
	}
	return false
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
