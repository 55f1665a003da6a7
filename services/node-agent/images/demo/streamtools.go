package main

import (
	"archive/tar"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"skiff.dev/internal/tarfiles"
)

// The tools exec, attach and cp need in a FROM-scratch image: cat of
// stdin, a tar of the forms `skiffctl cp` (and kubectl cp) runs, and the
// terminal's size.

// catStdin copies stdin to stdout until its end (cat with no FILE or "-").
func catStdin(stdout io.Writer) int {
	if _, err := io.Copy(stdout, os.Stdin); err != nil {
		return 1
	}
	return 0
}

// tarTool is `tar cf - [-C DIR] PATH...` (an archive of PATHs on stdout)
// and `tar xf - [-C DIR]` (or xmf: stdin's archive extracted under DIR).
func tarTool(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || args[1] != "-" {
		fmt.Fprintln(stderr, "usage: tar cf - [-C DIR] PATH... | tar xf - [-C DIR]")
		return 2
	}
	mode, rest := args[0], args[2:]
	dir := "."
	if len(rest) >= 2 && rest[0] == "-C" {
		dir, rest = rest[1], rest[2:]
	}
	var err error
	switch strings.TrimPrefix(mode, "-") {
	case "cf":
		err = tarCreate(stdout, dir, rest)
	case "xf", "xmf":
		err = tarfiles.Extract(os.Stdin, "", dir)
	default:
		err = fmt.Errorf("mode %q: cf or xf", mode)
	}
	if err != nil {
		fmt.Fprintln(stderr, "tar:", err)
		return 1
	}
	return 0
}

func tarCreate(w io.Writer, dir string, paths []string) error {
	tw := tar.NewWriter(w)
	for _, p := range paths {
		if err := tarfiles.Add(tw, filepath.Join(dir, p), filepath.ToSlash(filepath.Clean(p))); err != nil {
			return err
		}
	}
	return tw.Close()
}

// ttySize prints stdin's terminal size as "ROWSxCOLS" now and after each
// SIGWINCH, until stdin ends.
func ttySize(_ []string, stdout, stderr io.Writer) int {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	show := func() bool {
		var ws struct{ Row, Col, X, Y uint16 }
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, os.Stdin.Fd(), syscall.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws))); e != 0 {
			fmt.Fprintln(stderr, "ttysize:", e)
			return false
		}
		fmt.Fprintf(stdout, "%dx%d\n", ws.Row, ws.Col)
		return true
	}
	if !show() {
		return 1
	}
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	for {
		select {
		case <-winch:
			show()
		case <-done:
			return 0
		}
	}
}

// installTool copies SRC to DST as an executable (`install /demo
// /bin/tar` gives a FROM-scratch container a tar).
func installTool(args []string, _, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: install SRC DST")
		return 2
	}
	b, err := os.ReadFile(args[0])
	if err == nil {
		err = os.WriteFile(args[1], b, 0o755)
	}
	if err != nil {
		fmt.Fprintln(stderr, "install:", err)
		return 1
	}
	return 0
}

// serveBytes answers GET /bytes?n=N with N zero bytes.
func serveBytes(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
	if err != nil || n < 0 {
		http.Error(w, "n: a byte count", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	buf := make([]byte, 256<<10)
	for n > 0 {
		k, err := w.Write(buf[:min(n, int64(len(buf)))])
		if err != nil {
			return
		}
		n -= int64(k)
	}
}
