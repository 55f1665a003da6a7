// Command skiff-node-agent runs the pods bound to this machine's Node
// through a CRI runtime (see --help).
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
	"skiff.dev/services/node-agent/app"
)

func main() {
	o, err := app.ParseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "skiff-node-agent:", err)
		os.Exit(2)
	}
	log, err := logging.New("node-agent", o.LogLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "skiff-node-agent:", err)
		os.Exit(2)
	}
	defer func() { _ = log.Sync() }()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := app.Run(ctx, o, log, nil); err != nil {
		log.Error("node agent exited", zap.Error(err))
		stop()
		os.Exit(1)
	}
}
