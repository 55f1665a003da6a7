#!/usr/bin/env bash
# base-image.sh IMAGE: makes sure the Debian base image IMAGE (default
# debian:bookworm-slim) exists in the local Docker engine. It is used as is
# when present, pulled when a registry is reachable, and otherwise built
# locally, once: debootstrap --variant=minbase bookworm into a temporary
# directory, then `docker import`. Needs root (or sudo) and debootstrap for
# the local build; installs debootstrap with apt-get when missing.
set -euo pipefail

image=${1:-debian:bookworm-slim}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if docker image inspect "$image" >/dev/null 2>&1; then
  exit 0
fi
echo "base image $image: pulling" >&2
if timeout 120 docker pull "$image" >&2; then
  exit 0
fi
echo "base image $image: cannot be pulled, building it with debootstrap (about a minute)" >&2

sudo=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "base-image.sh: need root or sudo for debootstrap" >&2; exit 1; }
  sudo=(sudo)
fi
if ! command -v debootstrap >/dev/null; then
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq debootstrap >/dev/null
fi

dir=$(mktemp -d /tmp/skiff-debootstrap.XXXXXX)
trap '"${sudo[@]}" rm -rf "$dir"' EXIT
"${sudo[@]}" debootstrap --variant=minbase bookworm "$dir" "$mirror" >&2
# As the real slim image: no apt lists or caches, and the same sources.
printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb http://deb.debian.org/debian-security bookworm-security main\n' \
  "$mirror" "$mirror" | "${sudo[@]}" tee "$dir/etc/apt/sources.list" >/dev/null
"${sudo[@]}" rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin "$dir"/var/cache/apt/archives/*.deb
"${sudo[@]}" tar -C "$dir" -c . |
  docker import --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    - "$image" >/dev/null
echo "base image $image: built locally" >&2
