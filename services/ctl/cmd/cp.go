package cmd

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"skiff.dev/internal/tarfiles"
	corev1 "skiff.dev/proto/core/v1"
)

// cp copies files to and from containers as kubectl cp does: a tar
// stream over exec. From a pod: `tar cf - -C DIR BASE` in the container,
// unpacked here; to a pod: a tar made here, unpacked in the container
// by `tar xmf - -C DIR`. The container needs a tar of those forms.

// fileSpec is one side of cp: a local path, or [NAMESPACE/]POD:PATH.
type fileSpec struct {
	namespace, pod string // pod "": local
	path           string
}

func parseFileSpec(s string) (fileSpec, error) {
	i := strings.Index(s, ":")
	if i <= 0 || strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") {
		return fileSpec{path: s}, nil
	}
	pod, p := s[:i], s[i+1:]
	if p == "" {
		return fileSpec{}, fmt.Errorf("filespec %q: the path in the pod must not be empty", s)
	}
	fs := fileSpec{pod: pod, path: p}
	if ns, name, ok := strings.Cut(pod, "/"); ok {
		fs.namespace, fs.pod = ns, name
	}
	return fs, nil
}

func (r *root) cpCmd() *cobra.Command {
	var container string
	c := &cobra.Command{
		Use:   "cp SRC DST [-c CONTAINER]",
		Short: "Copy files and directories to and from containers",
		Long: `Copy a file or a directory between this machine and a container: one of
SRC and DST is [NAMESPACE/]POD:PATH. It runs tar in the container through
exec (Pods.Exec), so the container needs tar.`,
		Example: `  skiffctl cp ./data.bin web:/tmp/data.bin
  skiffctl cp team-a/web:/var/log/app ./app-logs -c app`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := parseFileSpec(args[0])
			if err != nil {
				return err
			}
			dst, err := parseFileSpec(args[1])
			if err != nil {
				return err
			}
			switch {
			case src.pod != "" && dst.pod == "":
				return r.copyFromPod(cmd.Context(), src, dst.path, container)
			case src.pod == "" && dst.pod != "":
				return r.copyToPod(cmd.Context(), src.path, dst, container)
			default:
				return errors.New("one of src or dest must be a local file specification and the other a remote one ([NAMESPACE/]POD:PATH)")
			}
		},
	}
	c.Flags().StringVarP(&container, "container", "c", "", "the container (needed when the pod has several)")
	return c
}

// cpExec runs a tar command in the pod and fails with its stderr when it
// exits non-zero.
func (r *root) cpExec(ctx context.Context, spec fileSpec, container string, command []string, stdin io.Reader, stdout io.Writer) error {
	ns := spec.namespace
	if ns == "" {
		var err error
		if ns, err = r.namespace(); err != nil {
			return err
		}
	}
	conn, err := r.connect()
	if err != nil {
		return err
	}
	var errOut bytes.Buffer
	o := &corev1.PodExecOptions{Namespace: ns, Name: spec.pod, Container: container, Command: command,
		Stdin: stdin != nil, Stdout: stdout != nil, Stderr: true}
	code, err := streamExec(ctx, conn, false, o, execIO{stdin: stdin, stdout: stdout, stderr: &errOut})
	if err != nil {
		return err
	}
	if code != nil && *code != 0 {
		return fmt.Errorf("%s in %s/%s exited with code %d: %s", command[0], ns, spec.pod, *code, strings.TrimSpace(errOut.String()))
	}
	return nil
}

func (r *root) copyFromPod(ctx context.Context, src fileSpec, dst, container string) error {
	clean := path.Clean(src.path)
	dir, base := path.Dir(clean), path.Base(clean)
	// An existing local directory receives the copy under its own name.
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		dst = filepath.Join(dst, base)
	}
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := tarfiles.Extract(pr, base, dst)
		pr.CloseWithError(err)
		errc <- err
	}()
	err := r.cpExec(ctx, src, container, []string{"tar", "cf", "-", "-C", dir, base}, nil, pw)
	pw.CloseWithError(err)
	if uerr := <-errc; err == nil && uerr != nil && !errors.Is(uerr, io.ErrClosedPipe) {
		// The stream ended well but the archive did not: say which side
		// failed (a truncated archive is tar's "unexpected EOF").
		err = fmt.Errorf("extracting the archive of %s that %s sent: %w", src.path, src.pod, uerr)
	}
	return err
}

func (r *root) copyToPod(ctx context.Context, src string, dst fileSpec, container string) error {
	if _, err := os.Stat(src); err != nil {
		return err
	}
	clean := path.Clean(dst.path)
	dir, base := path.Dir(clean), path.Base(clean)
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarFrom(pw, src, base)) }()
	err := r.cpExec(ctx, dst, container, []string{"tar", "xmf", "-", "-C", dir}, pr, io.Discard)
	pr.Close()
	return err
}

// tarFrom writes an archive of src (a file or a directory) with its
// entries named base[/...].
func tarFrom(w io.Writer, src, base string) error {
	tw := tar.NewWriter(w)
	if err := tarfiles.Add(tw, src, base); err != nil {
		return err
	}
	return tw.Close()
}
