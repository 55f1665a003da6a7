package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
)

// exec and attach: one Pods.Exec (or Pods.Attach) stream through the
// apiserver, which proxies it to the pod's node agent. The first request
// carries the options; stdin goes in pieces and its end as stdin_close;
// with -t on a terminal, the local terminal is raw and its size follows
// SIGWINCH. The command's exit code is skiffctl's.

// stdinChunk is the largest stdin piece one request carries: the message
// fits gRPC's 32 KiB receive buffers (a larger one takes, and zeroes, a
// 1 MiB buffer at the apiserver and the agent).
const stdinChunk = 32<<10 - 64

// execIO is where a stream's ends go.
type execIO struct {
	stdin          io.Reader // nil: no stdin
	stdout, stderr io.Writer
	// sizes, with a terminal, delivers its sizes (the first at once).
	sizes <-chan *corev1.TerminalSize
}

// streamExec runs one exec or attach stream to its end and returns the
// command's exit code (nil: none was sent, as for attach).
func streamExec(ctx context.Context, conn grpc.ClientConnInterface, attach bool, o *corev1.PodExecOptions, io_ execIO) (*int32, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pc := corev1.NewPodsClient(conn)
	var s grpc.BidiStreamingClient[corev1.ExecRequest, corev1.ExecResponse]
	var err error
	if attach {
		s, err = pc.Attach(ctx)
	} else {
		s, err = pc.Exec(ctx)
	}
	if err != nil {
		return nil, apierrors.FromError(err)
	}
	var sendMu sync.Mutex
	send := func(m *corev1.ExecRequest) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return s.Send(m)
	}
	if err := send(&corev1.ExecRequest{Options: o}); err != nil && !errors.Is(err, io.EOF) {
		return nil, apierrors.FromError(err)
	}
	if io_.sizes != nil {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case sz := <-io_.sizes:
					if send(&corev1.ExecRequest{Resize: sz}) != nil {
						return
					}
				}
			}
		}()
	}
	if io_.stdin != nil {
		go func() {
			buf := make([]byte, stdinChunk)
			for {
				n, err := io_.stdin.Read(buf)
				if n > 0 {
					if send(&corev1.ExecRequest{Stdin: buf[:n]}) != nil {
						return
					}
				}
				if err != nil {
					_ = send(&corev1.ExecRequest{StdinClose: true})
					return
				}
			}
		}()
	}
	var code *int32
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return code, nil
		}
		if err != nil {
			return code, apierrors.FromError(err)
		}
		if len(m.GetStdout()) > 0 && io_.stdout != nil {
			if _, err := io_.stdout.Write(m.GetStdout()); err != nil {
				return code, err
			}
		}
		if len(m.GetStderr()) > 0 && io_.stderr != nil {
			if _, err := io_.stderr.Write(m.GetStderr()); err != nil {
				return code, err
			}
		}
		if m.ExitCode != nil {
			code = m.ExitCode
		}
	}
}

// terminal makes stdin raw when it is a terminal and -t asked for one; it
// returns the sizes to send (nil without a terminal), whether there is a
// terminal, and the restore to defer.
func (r *root) terminal(ctx context.Context, tty bool) (<-chan *corev1.TerminalSize, bool, func()) {
	if !tty {
		return nil, false, func() {}
	}
	in, ok := r.env.In.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		fmt.Fprintln(r.env.Err, "Unable to use a TTY - input is not a terminal or the right kind of file")
		return nil, false, func() {}
	}
	state, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		fmt.Fprintf(r.env.Err, "Unable to use a TTY: %v\n", err)
		return nil, false, func() {}
	}
	sizes := make(chan *corev1.TerminalSize, 1)
	size := func() {
		fd := int(in.Fd())
		if out, ok := r.env.Out.(*os.File); ok && term.IsTerminal(int(out.Fd())) {
			fd = int(out.Fd())
		}
		if w, h, err := term.GetSize(fd); err == nil {
			select {
			case sizes <- &corev1.TerminalSize{Width: uint32(w), Height: uint32(h)}:
			default:
			}
		}
	}
	size()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-winch:
				size()
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	var once sync.Once
	return sizes, true, func() {
		once.Do(func() {
			signal.Stop(winch)
			close(done)
			_ = term.Restore(int(in.Fd()), state)
		})
	}
}

func (r *root) execCmd() *cobra.Command {
	var (
		container  string
		stdin, tty bool
		quiet      bool
	)
	c := &cobra.Command{
		Use:   "exec (POD | TYPE/NAME) [-c CONTAINER] [-i] [-t] -- COMMAND [args...]",
		Short: "Execute a command in a container",
		Long: `Run a command in a container of a pod, through the apiserver and the pod's
node agent. -i passes stdin (its end reaches the command), -t gives the
command a terminal (raw when stdin is one; its size follows the window).
skiffctl exits with the command's exit code. Interrupting skiffctl without
-t ends the command; with -t, ^C goes to the command.`,
		Example: `  skiffctl exec web -- /demo env
  skiffctl exec -it web -c app -- sh
  echo hello | skiffctl exec -i deploy/web -- cat`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 {
				if len(args) < 2 {
					return errors.New("you must specify at least one command for the container")
				}
				dash = 1
			}
			if dash != 1 || len(args) < 2 {
				return errors.New("exec: give one POD, then -- and the command")
			}
			return r.runExec(cmd.Context(), false, args[0], container, args[1:], stdin, tty, quiet)
		},
	}
	f := c.Flags()
	f.StringVarP(&container, "container", "c", "", "the container (needed when the pod has several)")
	f.BoolVarP(&stdin, "stdin", "i", false, "pass stdin to the container")
	f.BoolVarP(&tty, "tty", "t", false, "stdin is a TTY")
	f.BoolVarP(&quiet, "quiet", "q", false, "only print output from the remote session")
	return c
}

func (r *root) attachCmd() *cobra.Command {
	var (
		container  string
		stdin, tty bool
		quiet      bool
	)
	c := &cobra.Command{
		Use:   "attach (POD | TYPE/NAME) [-c CONTAINER] [-i] [-t]",
		Short: "Attach to a running container",
		Long: `Attach to the main process of a running container: its output, and with
-i its stdin (the container must have stdin: true; with -t, tty: true).`,
		Example: `  skiffctl attach web
  skiffctl attach -it web -c app`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.runExec(cmd.Context(), true, args[0], container, nil, stdin, tty, quiet)
		},
	}
	f := c.Flags()
	f.StringVarP(&container, "container", "c", "", "the container (needed when the pod has several)")
	f.BoolVarP(&stdin, "stdin", "i", false, "pass stdin to the container")
	f.BoolVarP(&tty, "tty", "t", false, "stdin is a TTY")
	f.BoolVarP(&quiet, "quiet", "q", false, "only print output from the remote session")
	return c
}

func (r *root) runExec(ctx context.Context, attach bool, target, container string, command []string, stdin, tty, quiet bool) error {
	ns, err := r.namespace()
	if err != nil {
		return err
	}
	pod, err := r.logsPod(ctx, ns, target)
	if err != nil {
		return err
	}
	conn, err := r.connect()
	if err != nil {
		return err
	}
	sizes, isTerm, restore := r.terminal(ctx, tty && stdin)
	defer restore()
	tty = tty && stdin && isTerm
	o := &corev1.PodExecOptions{Namespace: ns, Name: pod, Container: container, Command: command,
		Stdin: stdin, Stdout: true, Stderr: !tty, Tty: tty}
	eio := execIO{stdout: r.env.Out, stderr: r.env.Err, sizes: sizes}
	if stdin {
		eio.stdin = r.env.In
	}
	code, err := streamExec(ctx, conn, attach, o, eio)
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: 130, silent: true} // interrupted: the stream ended
		}
		return err
	}
	if code != nil && *code != 0 {
		restore()
		if !quiet {
			fmt.Fprintf(r.env.Err, "command terminated with exit code %d\n", *code)
		}
		return &exitError{code: int(*code), silent: true}
	}
	return nil
}
