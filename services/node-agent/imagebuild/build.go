package imagebuild

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"time"
)

// maxAge is how long a tarball nobody asked for stays in the cache: each
// change of an image's program makes a new one.
const maxAge = 7 * 24 * time.Hour

// Spec says what image to build from which Go main package.
type Spec struct {
	// Package is the import path of a main package inside the go.work
	// workspace, e.g. "skiff.dev/services/node-agent/images/demo".
	Package string
	// Ref is the image's tag, e.g. "skiff.local/demo:v1".
	Ref string
	// Name is the binary's name at the image's root; it defaults to the
	// package's last path element (/demo).
	Name string
	// LDFlags are added after "-s -w", e.g. "-X main.version=v1".
	LDFlags string
	// Entrypoint defaults to ["/<Name>"].
	Entrypoint []string
	Cmd        []string
	// Env holds "KEY=value" entries.
	Env []string
	// ExposedPorts like "8080/tcp".
	ExposedPorts []string
	WorkingDir   string
	Labels       map[string]string
	// Dir is where go build runs (any directory of the workspace); it
	// defaults to this package's source directory when it exists (tests),
	// else the working directory.
	Dir string
	// CacheDir overrides CacheDir().
	CacheDir string
}

// Build compiles spec.Package statically and returns the path of a
// docker-archive tarball of the image, in the cache. An unchanged spec and
// package give the same path without rebuilding the tarball; concurrent
// calls, in one process or several, build once.
func Build(ctx context.Context, spec Spec) (tarPath string, err error) {
	if spec.Package == "" {
		return "", fmt.Errorf("imagebuild: Spec.Package is empty")
	}
	if _, _, err := splitRef(spec.Ref); err != nil {
		return "", err
	}
	if spec.Name == "" {
		spec.Name = path.Base(spec.Package)
	}
	if spec.Dir == "" {
		spec.Dir = defaultDir()
	}
	c, err := openCache(spec.CacheDir)
	if err != nil {
		return "", err
	}

	binKey := key("bin", spec.Package, spec.LDFlags, spec.Name, spec.Dir, runtime.GOARCH)
	var binary []byte
	err = c.locked(binKey, func() error {
		bin := filepath.Join(c.dir, "bin", binKey, spec.Name)
		if err := compile(ctx, spec.Dir, spec.Package, spec.LDFlags, bin); err != nil {
			return err
		}
		binary, err = os.ReadFile(bin)
		return err
	})
	if err != nil {
		return "", err
	}

	img := Image{
		Ref:          spec.Ref,
		Name:         spec.Name,
		Binary:       binary,
		Entrypoint:   spec.Entrypoint,
		Cmd:          spec.Cmd,
		Env:          spec.Env,
		ExposedPorts: spec.ExposedPorts,
		WorkingDir:   spec.WorkingDir,
		Labels:       spec.Labels,
		Arch:         runtime.GOARCH,
		CreatedBy:    "skiff imagebuild " + spec.Package,
	}
	fields, err := json.Marshal(img.withoutBinary())
	if err != nil {
		return "", err
	}
	tarKey := key("tar", archiveFormat, digest(binary), string(fields))
	tarPath = filepath.Join(c.dir, "images", tarKey+".tar")
	created := false
	err = c.locked(tarKey, func() error {
		if _, err := os.Stat(tarPath); err == nil {
			now := time.Now()
			return os.Chtimes(tarPath, now, now) // in use: keep it from pruning
		}
		var buf bytes.Buffer
		if _, err := WriteArchive(&buf, img); err != nil {
			return err
		}
		created = true
		return writeFileAtomic(tarPath, buf.Bytes())
	})
	if err != nil {
		return "", err
	}
	if created {
		c.prune(maxAge)
	}
	return tarPath, nil
}

// archiveFormat changes whenever WriteArchive's output does, so that cached
// tarballs of an older layout are not reused.
const archiveFormat = "docker-archive/1"

func (img Image) withoutBinary() Image {
	img.Binary = nil
	return img
}

// defaultDir is this package's source directory when the binary runs where
// it was built (go test), else the working directory.
func defaultDir() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if st, err := os.Stat(filepath.Dir(file)); err == nil && st.IsDir() {
			return filepath.Dir(file)
		}
	}
	wd, _ := os.Getwd()
	return wd
}
