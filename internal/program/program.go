// Package program is the main function the Skiff daemons share: parse the
// flags, make the zap logger, run until SIGTERM or SIGINT, and exit with
// the conventional status (0 for --help and a clean stop, 2 for bad flags,
// 1 when the program fails). --version alone prints the program's name
// and version (internal/version) and exits 0. It owns nothing the programs
// do.
package program

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"skiff.dev/internal/logging"
	"skiff.dev/internal/version"
)

// Spec describes one program.
type Spec[O any] struct {
	Name      string                         // "skiff-scheduler", the prefix of errors on stderr
	Component string                         // "scheduler", the logs' component
	Parse     func(args []string) (O, error) // flags (flag.ErrHelp after printing the usage)
	LogLevel  func(O) string                 // the --log-level of the options
	Run       func(context.Context, O, *zap.Logger) error
}

// Main runs s and exits.
func Main[O any](s Spec[O]) {
	os.Exit(run(s, os.Args[1:]))
}

func run[O any](s Spec[O], args []string) int { return runTo(s, args, os.Stdout) }

func runTo[O any](s Spec[O], args []string, stdout io.Writer) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		v := version.Get()
		fmt.Fprintln(stdout, s.Name, v.GitVersion, v.GitCommit)
		return 0
	}
	o, err := s.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", s.Name, err)
		return 2
	}
	log, err := logging.New(s.Component, s.LogLevel(o))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", s.Name, err)
		return 2
	}
	defer func() { _ = log.Sync() }()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := s.Run(ctx, o, log); err != nil {
		log.Error(s.Component+" exited", zap.Error(err))
		return 1
	}
	return 0
}
