// Package tarfiles puts files and directories into tar archives and takes
// them out again: the local side of skiffctl cp, and the demo image's tar
// (the remote side, in a FROM-scratch container).
package tarfiles

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Add writes src, a regular file or a directory (walked; links, devices
// and the like are skipped), to tw, its entries named name[/...].
func Add(tw *tar.Writer, src, name string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() && !info.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = path.Join(name, filepath.ToSlash(rel))
		if info.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
}

// Extract unpacks the archive r into dst: an entry named prefix[/rest]
// becomes dst[/rest] (with prefix "", every entry, by its name under dst)
// and the others are skipped. Directories and regular files only; a file
// keeps its mode, writable by its owner (as kubectl cp). An entry whose
// path would leave dst is an error.
func Extract(r io.Reader, prefix, dst string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			_, _ = io.Copy(io.Discard, r) // the archive's trailing padding
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(h.Name)
		rest := name
		if prefix != "" {
			var ok bool
			if rest, ok = strings.CutPrefix(name, path.Clean(prefix)); !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
				continue
			}
		}
		rest = path.Clean("/" + rest)[1:] // "" for the prefix itself
		if rel := path.Clean(strings.TrimPrefix(name, "/")); path.IsAbs(h.Name) || rel == ".." || strings.HasPrefix(rel, "../") || strings.Contains("/"+rel+"/", "/../") {
			return fmt.Errorf("%q: a path outside the destination", h.Name)
		}
		target := filepath.Join(dst, filepath.FromSlash(rest))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode).Perm()|0o200)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, tr); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
	}
}
