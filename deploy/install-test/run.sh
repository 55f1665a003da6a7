#!/usr/bin/env bash
# run.sh (make e2e-install): docs/install.md followed on six simulated
# machines (and a router between their two networks). Builds the machine image (deploy/compose/images/machine: Debian
# with systemd, containerd, runc and the CNI plugins; the pause and demo
# images taken from the compose node image, built first when missing),
# then runs TestInstall (deploy/compose/e2e/install_test.go) with the
# newest dist tarball (make dist first: the Makefile's e2e-install does).
#
# Docker names: containers skiff-install-<machine> and skiff-install-router,
# networks skiff-install (SKIFF_INSTALL_NET.0/24, default 10.211.62.0/24)
# and skiff-install-other (node3's: SKIFF_INSTALL_OTHER_NET.0/24, default
# 10.211.63.0/24), image
# skiff-install/machine:<SKIFF_TAG>; nothing published on the host. They
# are removed at the end (SKIFF_INSTALL_KEEP=1 keeps them for a look).
# Arguments go to `go test`.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TAG=${SKIFF_TAG:-dev}
BASE_IMAGE=${SKIFF_BASE_IMAGE:-debian:bookworm-slim}
NODE_IMAGE=skiff/node:$TAG
MACHINE_IMAGE=${SKIFF_INSTALL_IMAGE:-skiff-install/machine:$TAG}
start=$SECONDS

tarball=$(ls -t "$ROOT"/dist/skiff-*-linux-amd64.tar.gz 2>/dev/null | head -1 || true)
[ -n "$tarball" ] || { echo "run.sh: no dist/skiff-*-linux-amd64.tar.gz: make dist first" >&2; exit 1; }

echo "== images ($MACHINE_IMAGE)"
"$ROOT/deploy/compose/base-image.sh" "$BASE_IMAGE"
# The pause and demo images' tarballs are the compose node image's
# (make e2e built it in CI); built here when missing.
docker image inspect "$NODE_IMAGE" >/dev/null 2>&1 || "$ROOT/scripts/compose.sh" build
docker build -q -t "$MACHINE_IMAGE" --build-arg "BASE=$BASE_IMAGE" --build-arg "NODE_IMAGE=$NODE_IMAGE" \
  "$ROOT/deploy/compose/images/machine" >/dev/null

echo "== TestInstall ($(basename "$tarball")) after $((SECONDS - start)) s"
SKIFF_INSTALL_TARBALL=$tarball SKIFF_INSTALL_IMAGE=$MACHINE_IMAGE SKIFF_INSTALL_DOC=$ROOT/docs/install.md \
  GOWORK=off CGO_ENABLED=0 go -C "$ROOT/deploy/compose/e2e" test -count=1 -v -timeout 15m -run '^TestInstall$' . "$@"
echo "== e2e-install passed in $((SECONDS - start)) s"
