package tarfiles

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tree goes in under a name and comes out under another directory, with
// its contents and modes; entries of other names are left out.
func TestAddExtract(t *testing.T) {
	src := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "d", "e"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "d", "a.txt"), []byte("alpha"), 0o640))
	must(t, os.WriteFile(filepath.Join(src, "d", "e", "b.bin"), bytes.Repeat([]byte{7}, 70000), 0o600))
	must(t, os.WriteFile(filepath.Join(src, "other"), []byte("not copied"), 0o644))
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	must(t, Add(tw, filepath.Join(src, "d"), "d"))
	must(t, Add(tw, filepath.Join(src, "other"), "other"))
	must(t, tw.Close())

	dst := filepath.Join(t.TempDir(), "copy")
	must(t, Extract(bytes.NewReader(buf.Bytes()), "d", dst))
	for name, want := range map[string]string{"a.txt": "alpha", "e/b.bin": strings.Repeat("\x07", 70000)} {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(got) != want {
			t.Errorf("%s: %d bytes, %v", name, len(got), err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dst, "a.txt")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("a.txt's mode: %v, %v, want 0640", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(dst, "other")); !os.IsNotExist(err) {
		t.Errorf("an entry of another name was extracted: %v", err)
	}

	all := t.TempDir()
	must(t, Extract(bytes.NewReader(buf.Bytes()), "", all))
	if got, err := os.ReadFile(filepath.Join(all, "other")); err != nil || string(got) != "not copied" {
		t.Errorf("without a prefix, other: %q, %v", got, err)
	}
}

// An archive may not write outside the destination.
func TestExtractRefusesEscapes(t *testing.T) {
	for _, name := range []string{"../evil", "d/../../evil", "/etc/evil"} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}))
		_, _ = tw.Write([]byte("x"))
		must(t, tw.Close())
		if err := Extract(&buf, "", t.TempDir()); err == nil || !strings.Contains(err.Error(), "outside the destination") {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
