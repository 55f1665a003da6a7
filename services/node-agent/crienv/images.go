package crienv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/services/node-agent/imagebuild"
)

// The images every Env has.
const (
	// PauseImage is the sandbox image containerd is configured with.
	PauseImage = "skiff.local/pause:3.9"
	// DemoRepository is the demo server's repository; DemoImage adds a tag.
	DemoRepository = "skiff.local/demo"
)

// DemoVersions are the demo image tags every Env imports.
var DemoVersions = []string{"v1", "v2"}

// PauseSpec is the build of PauseImage.
func PauseSpec() imagebuild.Spec {
	return imagebuild.Spec{
		Package: "skiff.dev/services/node-agent/images/pause",
		Ref:     PauseImage,
		LDFlags: "-X main.version=3.9",
	}
}

// DemoSpec is the build of the demo image at version (its GET / answers
// "demo <version> on <hostname>").
func DemoSpec(version string) imagebuild.Spec {
	return imagebuild.Spec{
		Package:      "skiff.dev/services/node-agent/images/demo",
		Ref:          DemoRepository + ":" + version,
		LDFlags:      "-X main.version=" + version,
		ExposedPorts: []string{"8080/tcp"},
	}
}

// buildAll builds the specs in parallel and returns their tarballs in order.
func buildAll(ctx context.Context, specs []imagebuild.Spec) ([]string, error) {
	tars := make([]string, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tars[i], errs[i] = imagebuild.Build(ctx, s)
		}()
	}
	wg.Wait()
	return tars, errors.Join(errs...)
}

// importAll imports the tarballs in parallel, then waits for the CRI to
// see every ref.
func (e *Env) importAll(ctx context.Context, tars, refs []string) error {
	errs := make([]error, len(tars))
	var wg sync.WaitGroup
	for i := range tars {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.ImportImage(ctx, tars[i], refs[i])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ImportImage imports a docker-archive or OCI tarball into the Env's
// containerd (namespace k8s.io, unpacked for the Env's snapshotter) with
// ctr, and returns once the CRI's ImageStatus reports ref.
func (e *Env) ImportImage(ctx context.Context, tarPath, ref string) error {
	cmd := exec.CommandContext(ctx, "ctr", "--address", e.Socket, "--namespace", "k8s.io",
		"images", "import", "--snapshotter", e.Snapshotter, tarPath)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("crienv: ctr images import %s: %w\n%s", tarPath, err, strings.TrimSpace(out.String()))
	}
	return e.waitImage(ctx, ref)
}

// BuildImage builds spec with imagebuild and imports it.
func (e *Env) BuildImage(ctx context.Context, spec imagebuild.Spec) error {
	tar, err := imagebuild.Build(ctx, spec)
	if err != nil {
		return err
	}
	return e.ImportImage(ctx, tar, spec.Ref)
}

// waitImage returns once the CRI's ImageStatus knows ref. containerd's CRI
// plugin learns of images imported by ctr from containerd's event stream,
// asynchronously, and offers no way to wait for it: this polls every 10 ms
// for at most 10 s.
func (e *Env) waitImage(ctx context.Context, ref string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		resp, err := e.Images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err == nil && resp.GetImage() != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errors.New("not found")
			}
			return fmt.Errorf("crienv: image %s imported but not seen by CRI ImageStatus: %v", ref, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
