#!/usr/bin/env bash
# Builds kubectl and helm at the versions hack/tools/go.mod pins into one
# directory (default .tools/bin), for the tests of Kubernetes' HTTP API
# (tests/kubeclients). `make tools` runs it.
#
# A build is skipped when both binaries exist and a stamp beside them holds
# the hash of what they were built from (go.mod, go.sum, the kubectl main
# and this script). Binaries land by rename, so a concurrent build never
# leaves a half-written one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../.tools/bin}
go=${GO:-go}
stamp="$out/.hack-tools.sha256"
sum=$(cat "$here/go.mod" "$here/go.sum" "$here/cmd/kubectl/main.go" "$here/build.sh" | sha256sum | cut -d' ' -f1)
if [[ -x $out/kubectl && -x $out/helm && "$(cat "$stamp" 2>/dev/null)" == "$sum" ]]; then
  exit 0
fi
mkdir -p "$out"
export GOWORK=off CGO_ENABLED=0
version() { "$go" -C "$here" list -m -f '{{.Version}}' "$1"; }

# k8s.io/kubectl v0.X.Y is Kubernetes v1.X.Y. kubectl version reads
# component-base's version; client-go's goes into the User-Agent.
kube=$(version k8s.io/kubectl)
kube=v1.${kube#v0.}
minor=$(cut -d. -f2 <<<"$kube")
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kflags+=" -X $pkg.gitVersion=$kube -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  kflags+=" -X $pkg.gitCommit= -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
done

# Helm's Makefile sets its version and the Kubernetes version its
# templates see by default (.Capabilities.KubeVersion, from client-go's).
helm=$(version helm.sh/helm/v3)
client=$(version k8s.io/client-go)
hflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm -X helm.sh/helm/v3/internal/version.metadata="
hflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
cminor=$(cut -d. -f2 <<<"$client")
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  hflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$cminor"
done

echo "building kubectl $kube and helm $helm into $out" >&2
"$go" -C "$here" build -trimpath -ldflags "$kflags" -o "$out/.kubectl.$$" ./cmd/kubectl
"$go" -C "$here" build -trimpath -ldflags "$hflags" -o "$out/.helm.$$" helm.sh/helm/v3/cmd/helm
mv -f "$out/.kubectl.$$" "$out/kubectl"
mv -f "$out/.helm.$$" "$out/helm"
echo "$sum" >"$stamp"
