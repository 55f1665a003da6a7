// Package imagebuild makes container images out of the project's Go main
// packages without Docker and without a registry, for tests and benchmarks
// that run a real containerd (see package crienv).
//
// Build runs the pipeline, each stage in its own file:
//
//	compile.go  CGO_ENABLED=0 go build -trimpath of Spec.Package into the
//	            cache (Go's build cache makes an unchanged package cheap)
//	archive.go  WriteArchive: a docker-archive tarball (manifest.json, the
//	            image config with architecture, os, rootfs.diff_ids,
//	            Entrypoint, Env, ExposedPorts, and one uncompressed layer
//	            holding the binary at /<name> and the empty directories /dev,
//	            /etc, /proc, /run, /sys and /tmp); byte-for-byte
//	            reproducible, so the same binary gives the same image ID
//	cache.go    the cache directory ($SKIFF_IMAGE_CACHE, else
//	            $XDG_CACHE_HOME/skiff/imagebuild or ~/.cache/...): binaries
//	            keyed by what builds them, tarballs keyed by the binary's
//	            digest and the image fields; a file lock per key so that
//	            parallel test processes build once
//
// The tarball is what `ctr -n k8s.io images import` takes: ctr drops images
// whose config lacks architecture or os ("image might be filtered out"),
// which WriteArchive always sets (GOARCH, linux).
//
// It does not import, push or run images: crienv imports them into its
// private containerd.
package imagebuild
