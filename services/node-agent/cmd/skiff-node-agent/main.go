// Command skiff-node-agent runs the pods bound to this machine's Node
// through a CRI runtime (see --help).
package main

import (
	"context"
	"os"

	"go.uber.org/zap"

	"skiff.dev/internal/program"
	"skiff.dev/services/node-agent/app"
)

func main() {
	program.Main(program.Spec[*app.Options]{
		Name:      "skiff-node-agent",
		Component: "node-agent",
		Parse:     func(args []string) (*app.Options, error) { return app.ParseFlags(args, os.Stderr) },
		LogLevel:  func(o *app.Options) string { return o.LogLevel },
		Run: func(ctx context.Context, o *app.Options, log *zap.Logger) error {
			return app.Run(ctx, o, log, nil)
		},
	})
}
