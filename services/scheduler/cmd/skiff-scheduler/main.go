// Command skiff-scheduler places pods on nodes (see --help).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"skiff.dev/internal/logging"
	"skiff.dev/services/scheduler/app"
)

func main() {
	o, err := app.ParseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "skiff-scheduler:", err)
		os.Exit(2)
	}
	// A bad policy file stops here, with every problem and its line.
	if o.Policy, err = app.LoadPolicy(o); err != nil {
		fmt.Fprintln(os.Stderr, "skiff-scheduler: invalid --config:")
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	log, err := logging.New("scheduler", o.LogLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "skiff-scheduler:", err)
		os.Exit(2)
	}
	defer func() { _ = log.Sync() }()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := app.Run(ctx, o, log, nil); err != nil {
		log.Error("scheduler exited", zap.Error(err))
		stop()
		os.Exit(1)
	}
}
