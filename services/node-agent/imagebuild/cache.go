package imagebuild

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// CacheDir is where Build keeps binaries and tarballs: $SKIFF_IMAGE_CACHE,
// else <user cache dir>/skiff/imagebuild, else a directory under the
// system's temp dir.
func CacheDir() string {
	if d := os.Getenv("SKIFF_IMAGE_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "skiff", "imagebuild")
	}
	return filepath.Join(os.TempDir(), "skiff-imagebuild")
}

type cache struct{ dir string }

func openCache(dir string) (*cache, error) {
	if dir == "" {
		dir = CacheDir()
	}
	for _, sub := range []string{"bin", "images", "locks"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("imagebuild: cache: %w", err)
		}
	}
	return &cache{dir: dir}, nil
}

// locked runs fn holding an exclusive lock on k, across processes.
func (c *cache) locked(k string, fn func() error) error {
	f, err := os.OpenFile(filepath.Join(c.dir, "locks", k+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("imagebuild: cache lock: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("imagebuild: cache lock: %w", err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return fn()
}

// prune removes the tarballs not used for maxAge (Build touches the ones
// it returns).
func (c *cache) prune(maxAge time.Duration) {
	tars, _ := filepath.Glob(filepath.Join(c.dir, "images", "*.tar"))
	for _, t := range tars {
		if st, err := os.Stat(t); err == nil && time.Since(st.ModTime()) > maxAge {
			_ = os.Remove(t)
		}
	}
}

// key is a short digest of its parts, for file names.
func key(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// writeFileAtomic writes data to path through a temporary file and a
// rename, so that a reader never sees half a tarball.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
