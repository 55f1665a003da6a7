package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The atomic writer lays out a configMap, secret, downwardAPI or projected
// volume as the kubelet's AtomicWriter does, so that a process in the
// container never sees half an update:
//
//	<dir>/..2026_11_26_04_40_00.123456789/   the files of one version
//	<dir>/..data -> ..2026_11_26_04_40_00.123456789
//	<dir>/<name> -> ..data/<name>            one symlink per top-level name
//
// An update writes a new timestamped directory, points a temporary symlink
// at it and renames that over ..data (one atomic rename switches every
// file at once), adds the user-visible symlinks of new names, removes
// those of names gone, and then the old directory.

const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// volumeFile is one file of a volume: its content and mode.
type volumeFile struct {
	data []byte
	mode os.FileMode
}

// writeAtomic makes dir hold exactly files (relative paths, already
// checked to stay inside dir) and says whether anything changed.
func writeAtomic(dir string, files map[string]volumeFile) (bool, error) {
	for rel := range files {
		if err := checkVolumePath(rel); err != nil {
			return false, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	oldTS, _ := os.Readlink(filepath.Join(dir, dataDirName))
	if oldTS != "" && sameFiles(filepath.Join(dir, oldTS), files) {
		return false, nil
	}
	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return false, err
	}
	tsName := filepath.Base(tsDir)
	if err := writePayload(tsDir, files); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, err
	}
	tmpLink := filepath.Join(dir, newDataDirName)
	if err := os.Remove(tmpLink); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if err := os.Symlink(tsName, tmpLink); err != nil {
		return false, err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		return false, err
	}
	// User-visible names: a symlink into ..data for each top-level name.
	want := map[string]bool{}
	for rel := range files {
		want[strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]] = true
	}
	for name := range want {
		link := filepath.Join(dir, name)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join(dataDirName, name) {
			continue
		}
		if err := os.RemoveAll(link); err != nil {
			return false, err
		}
		if err := os.Symlink(filepath.Join(dataDirName, name), link); err != nil {
			return false, err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == dataDirName || name == tsName:
		case strings.HasPrefix(name, ".."):
			// Older versions (and leftovers of an interrupted update).
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				return true, err
			}
		case !want[name]:
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				return true, err
			}
		}
	}
	return true, nil
}

func writePayload(dir string, files map[string]volumeFile) error {
	for _, rel := range sortedKeys(files) {
		f := files[rel]
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, f.data, f.mode); err != nil {
			return err
		}
		// The mode is set explicitly: the umask must not narrow it.
		if err := os.Chmod(path, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// sameFiles says whether dir holds exactly files, with their modes.
func sameFiles(dir string, files map[string]volumeFile) bool {
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		f, ok := files[rel]
		if !ok {
			return fs.ErrExist
		}
		n++
		fi, err := d.Info()
		if err != nil || fi.Mode().Perm() != f.mode.Perm() {
			return fs.ErrExist
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(b, f.data) {
			return fs.ErrExist
		}
		return nil
	})
	return err == nil && n == len(files)
}

// checkVolumePath refuses a file path that would leave the volume or
// collide with the writer's own names.
func checkVolumePath(rel string) error {
	clean := filepath.Clean(rel)
	switch {
	case rel == "" || filepath.IsAbs(rel):
		return fmt.Errorf("invalid path %q: must be relative", rel)
	case clean == ".." || strings.HasPrefix(clean, "../") || slices.Contains(strings.Split(rel, "/"), ".."):
		return fmt.Errorf("invalid path %q: must not contain '..'", rel)
	case strings.HasPrefix(rel, ".."):
		return fmt.Errorf("invalid path %q: must not start with '..'", rel)
	}
	return nil
}
