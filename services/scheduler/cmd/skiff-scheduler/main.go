// Command skiff-scheduler places pods on nodes (see --help).
package main

import (
	"context"
	"fmt"
	"os"

	"go.uber.org/zap"

	"skiff.dev/internal/program"
	"skiff.dev/services/scheduler/app"
)

func main() {
	program.Main(program.Spec[*app.Options]{
		Name:      "skiff-scheduler",
		Component: "scheduler",
		Parse: func(args []string) (*app.Options, error) {
			o, err := app.ParseFlags(args, os.Stderr)
			if err != nil {
				return nil, err
			}
			// A bad policy file stops here, with every problem and its line.
			if o.Policy, err = app.LoadPolicy(o); err != nil {
				return nil, fmt.Errorf("invalid --config:\n%w", err)
			}
			return o, nil
		},
		LogLevel: func(o *app.Options) string { return o.LogLevel },
		Run: func(ctx context.Context, o *app.Options, log *zap.Logger) error {
			return app.Run(ctx, o, log, nil)
		},
	})
}
