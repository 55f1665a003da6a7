// Command skiff-controller-manager runs Skiff's controllers (see --help).
package main

import (
	"context"
	"os"

	"go.uber.org/zap"

	"skiff.dev/internal/program"
	"skiff.dev/services/controller-manager/app"
)

func main() {
	program.Main(program.Spec[*app.Options]{
		Name:      "skiff-controller-manager",
		Component: "controller-manager",
		Parse:     func(args []string) (*app.Options, error) { return app.ParseFlags(args, os.Stderr) },
		LogLevel:  func(o *app.Options) string { return o.LogLevel },
		Run: func(ctx context.Context, o *app.Options, log *zap.Logger) error {
			return app.Run(ctx, o, log, nil)
		},
	})
}
