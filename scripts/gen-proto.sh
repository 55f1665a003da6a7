#!/usr/bin/env bash
# Regenerates the Go code of proto/ with pinned tool versions.
# protoc comes from Debian's protobuf-compiler (3.21); the Go plugins are
# installed with `go install` at the versions below into .tools/.
set -euo pipefail
cd "$(dirname "$0")/.."
PROTOC_GEN_GO_VERSION=v1.36.11
PROTOC_GEN_GO_GRPC_VERSION=v1.6.0
tools="$PWD/.tools"
mkdir -p "$tools"
if ! command -v protoc >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "protoc missing: installing Debian's protobuf-compiler" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler >/dev/null
  else
    echo "protoc is missing: install it (Debian/Ubuntu: apt-get install protobuf-compiler)" >&2
    exit 1
  fi
fi
GOBIN="$tools" go install "google.golang.org/protobuf/cmd/protoc-gen-go@${PROTOC_GEN_GO_VERSION}"
GOBIN="$tools" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@${PROTOC_GEN_GO_GRPC_VERSION}"
# Each kind's List, WatchEvent, WatchResponse and service, and the Go code
# that needs the kinds' types, from the declarations in internal/kinds/decl.
(cd internal && go run ./kinds/gen -root ..)
cd proto
find . -name '*.pb.go' -not -path './skiff/*' -delete
protoc -I . \
  --plugin=protoc-gen-go="$tools/protoc-gen-go" \
  --plugin=protoc-gen-go-grpc="$tools/protoc-gen-go-grpc" \
  --go_out=. --go_opt=module=skiff.dev/proto \
  --go-grpc_out=. --go-grpc_opt=module=skiff.dev/proto,require_unimplemented_servers=false \
  $(find skiff -name '*.proto' | sort)
echo "proto: generated $(find . -name '*.pb.go' | wc -l) files"
cd ..
gofmt -w internal/client/kinds.gen.go internal/kinds/bindings.gen.go services/apiserver/apiserver/kinds.gen.go services/controller-manager/garbagecollector/kinds.gen.go
