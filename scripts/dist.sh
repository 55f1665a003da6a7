#!/usr/bin/env bash
# dist.sh (make dist): the release tarball for Linux amd64 machines,
# dist/skiff-<version>-linux-amd64.tar.gz, holding
#   bin/       skiff-apiserver, skiff-controller-manager, skiff-scheduler,
#              skiff-node-agent, skiffctl (static: CGO_ENABLED=0)
#   systemd/   a unit per component and its default settings (*.env, for
#              /etc/skiff), from deploy/systemd
#   install.sh deploy/install.sh: installs them and starts a role
#   INSTALL.md docs/install.md
# Environment: VERSION (git describe), LDFLAGS (the Makefile passes its
# own: the version every binary reports), GO, DIST (dist).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GO=${GO:-go}
VERSION=${VERSION:-$(git -C "$ROOT" describe --tags --always --dirty 2>/dev/null || echo v0.1.0-dev)}
LDFLAGS=${LDFLAGS:-"-s -w -X skiff.dev/internal/version.gitVersion=$VERSION -X skiff.dev/internal/version.gitCommit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || true)"}
DIST=${DIST:-$ROOT/dist}
name=skiff-$VERSION-linux-amd64
stage=$DIST/$name

rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/systemd"
for b in skiff-apiserver skiff-controller-manager skiff-scheduler skiff-node-agent skiffctl; do
  pkg=./services/${b#skiff-}/cmd/$b
  [ "$b" = skiffctl ] && pkg=./services/ctl/cmd/skiffctl
  echo "go build $pkg -> $name/bin/$b" >&2
  CGO_ENABLED=0 GOOS=linux GOARCH=amd64 "$GO" build -C "$ROOT" -trimpath -ldflags "$LDFLAGS" -o "$stage/bin/$b" "$pkg"
done
cp "$ROOT"/deploy/systemd/*.service "$ROOT"/deploy/systemd/*.env "$stage/systemd/"
install -m 0755 "$ROOT/deploy/install.sh" "$stage/install.sh"
cp "$ROOT/docs/install.md" "$stage/INSTALL.md"
# Owned by root in the archive, whoever builds it: it is unpacked as root.
tar -C "$DIST" --owner=0 --group=0 --numeric-owner -czf "$DIST/$name.tar.gz" "$name"
rm -rf "$stage"
echo "$DIST/$name.tar.gz ($(du -h "$DIST/$name.tar.gz" | cut -f1))"
