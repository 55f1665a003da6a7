package imagebuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// compile builds the main package pkg into out, statically. go build
// relinks only when out is stale (it compares build IDs), and Go's build
// cache covers the compile, so an unchanged package costs little.
func compile(ctx context.Context, dir, pkg, ldflags, out string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("imagebuild: building %s needs the go command: %w", pkg, err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	flags := strings.TrimSpace("-s -w " + ldflags)
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-buildvcs=false", "-ldflags", flags, "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0",
		"GOOS=linux",
		"GOARCH="+runtime.GOARCH,
		// The caller's GOFLAGS (say -race, which needs cgo) must not
		// change the image.
		"GOFLAGS=",
	)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("imagebuild: go build %s (in %s): %w\n%s", pkg, dir, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
