package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type image struct {
	id     string // sha256:<hex>
	name   string // normalized reference, e.g. docker.io/library/demo:v1
	digest string // <repo>@sha256:<hex>
}

// ref is what containerd reports as a container's imageRef: the repo digest.
func (i *image) ref() string { return i.digest }

func (i *image) api() *runtimeapi.Image {
	return &runtimeapi.Image{
		Id: i.id, RepoTags: []string{i.name}, RepoDigests: []string{i.digest}, Size: 1 << 20,
		Spec: &runtimeapi.ImageSpec{Image: i.id},
	}
}

// NormalizeImage returns the fully qualified reference containerd would
// use for ref: "demo:v1" is "docker.io/library/demo:v1", "x/y" is
// "docker.io/x/y:latest", "localhost:5000/a:1" stays as it is.
func NormalizeImage(ref string) string {
	name, digest, _ := strings.Cut(ref, "@")
	first, _, hasSlash := strings.Cut(name, "/")
	switch {
	case !hasSlash:
		name = "docker.io/library/" + name
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		name = "docker.io/" + name
	}
	if digest != "" {
		return name + "@" + digest
	}
	if i := strings.LastIndexByte(name, ':'); i < 0 || strings.Contains(name[i:], "/") {
		name += ":latest"
	}
	return name
}

func repoOf(normalized string) string {
	if i := strings.LastIndexByte(normalized, ':'); i >= 0 && !strings.Contains(normalized[i:], "/") {
		return normalized[:i]
	}
	return normalized
}

func (r *Runtime) addImageLocked(ref string) *image {
	name := NormalizeImage(ref)
	if img, ok := r.images[name]; ok {
		return img
	}
	sum := sha256.Sum256([]byte(name))
	hexsum := hex.EncodeToString(sum[:])
	img := &image{id: "sha256:" + hexsum, name: name, digest: repoOf(name) + "@sha256:" + hexsum}
	r.images[name] = img
	r.images[img.id] = img
	return img
}

func (r *Runtime) findImageLocked(ref string) (*image, bool) {
	if img, ok := r.images[ref]; ok {
		return img, true
	}
	img, ok := r.images[NormalizeImage(ref)]
	return img, ok
}

// ListImages implements ImageService.
func (r *Runtime) ListImages(context.Context, *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Image
	for key, img := range r.images {
		if key == img.id {
			out = append(out, img.api())
		}
	}
	slices.SortFunc(out, func(a, b *runtimeapi.Image) int { return strings.Compare(a.RepoTags[0], b.RepoTags[0]) })
	return &runtimeapi.ListImagesResponse{Images: out}, nil
}

// ImageStatus implements ImageService: an absent image is a nil image and
// no error, as the CRI says.
func (r *Runtime) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	img, ok := r.findImageLocked(req.GetImage().GetImage())
	if !ok {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: img.api()}, nil
}

// PullImage implements ImageService: at once, unless the image was
// declared missing.
func (r *Runtime) PullImage(_ context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, fmt.Errorf("%w: image reference is empty", errInvalid)
	}
	name := NormalizeImage(ref)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.missing[name] {
		return nil, fmt.Errorf("%w: failed to pull and unpack image %q: failed to resolve reference %q: %s: not found",
			errNotFound, name, name, name)
	}
	img := r.addImageLocked(ref)
	return &runtimeapi.PullImageResponse{ImageRef: img.id}, nil
}

// RemoveImage implements ImageService; removing one that is gone succeeds.
func (r *Runtime) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if img, ok := r.findImageLocked(req.GetImage().GetImage()); ok {
		delete(r.images, img.id)
		delete(r.images, img.name)
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo implements ImageService (nothing to report).
func (r *Runtime) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{}, nil
}
