// Command skiffctl is the Skiff CLI (see package cmd).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"skiff.dev/services/ctl/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.Execute(ctx, os.Args[1:], cmd.OSEnv())
	stop()
	os.Exit(code)
}
