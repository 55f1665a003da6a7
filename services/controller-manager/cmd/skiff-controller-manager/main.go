// Command skiff-controller-manager runs Skiff's controllers (see --help).
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
	"skiff.dev/services/controller-manager/app"
)

func main() {
	o, err := app.ParseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "skiff-controller-manager:", err)
		os.Exit(2)
	}
	log, err := logging.New("controller-manager", o.LogLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "skiff-controller-manager:", err)
		os.Exit(2)
	}
	defer func() { _ = log.Sync() }()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := app.Run(ctx, o, log, nil); err != nil {
		log.Error("controller-manager exited", zap.Error(err))
		os.Exit(1)
	}
}
