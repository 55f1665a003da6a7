#!/usr/bin/env bash
# run.sh (make e2e, scripts/compose.sh e2e): starts a compose cluster of its
# own (project skiff-e2e on other ports, so that a cluster started by
# `make up` is left alone), with short node grace and toleration periods,
# runs the Go story of this directory against it, and removes it with its
# volumes (SKIFF_E2E_KEEP=1 keeps it for a look; remove it then with
# COMPOSE_PROJECT_NAME=skiff-e2e scripts/compose.sh down -v). Arguments go to
# `go test`, e.g. -skip "TestCluster/a_stopped_node" or -run "TestCluster/scale".
#
# With SKIFF_HA=1 (make e2e-ha, scripts/compose.sh e2e-ha) the cluster is the
# HA profile's (project skiff-e2e-ha, ports 17443-17446, 17000, 17001,
# 17090, network 10.211.54.0/24) and the story is TestHA (ha_test.go), with
# TestInCluster (a pod reaching the API through the kubernetes Service).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
tests='^(TestCluster|TestServices|TestSecretsAndExec|TestInCluster|TestWorkloads|TestKubeClients)$'
if [ "${SKIFF_HA:-0}" = 1 ]; then
  export SKIFF_HA=1
  export COMPOSE_PROJECT_NAME=${SKIFF_E2E_PROJECT:-skiff-e2e-ha}
  export SKIFF_API_PORT=${SKIFF_E2E_API_PORT:-17443}
  export SKIFF_API_PORT2=${SKIFF_E2E_API_PORT2:-17445}
  export SKIFF_API_PORT3=${SKIFF_E2E_API_PORT3:-17446}
  export SKIFF_REGISTRY_PORT=${SKIFF_E2E_REGISTRY_PORT:-17000}
  export SKIFF_REGISTRY_AUTH_PORT=${SKIFF_E2E_REGISTRY_AUTH_PORT:-17001}
  export SKIFF_PROMETHEUS_PORT=${SKIFF_E2E_PROMETHEUS_PORT:-17090}
  export SKIFF_GRAFANA_PORT=${SKIFF_E2E_GRAFANA_PORT:-17300}
  export SKIFF_HA_NET=${SKIFF_E2E_HA_NET:-10.211.54}
  # The members as the test reaches them, in the order of their services.
  export SKIFF_E2E_MEMBERS=apiserver=127.0.0.1:$SKIFF_API_PORT,apiserver2=127.0.0.1:$SKIFF_API_PORT2,apiserver3=127.0.0.1:$SKIFF_API_PORT3
  tests='^(TestHA|TestInCluster)$'
else
  export COMPOSE_PROJECT_NAME=${SKIFF_E2E_PROJECT:-skiff-e2e}
  export SKIFF_API_PORT=${SKIFF_E2E_API_PORT:-16443}
  export SKIFF_REGISTRY_PORT=${SKIFF_E2E_REGISTRY_PORT:-15000}
  export SKIFF_REGISTRY_AUTH_PORT=${SKIFF_E2E_REGISTRY_AUTH_PORT:-15001}
  export SKIFF_PROMETHEUS_PORT=${SKIFF_E2E_PROMETHEUS_PORT:-19090}
  export SKIFF_GRAFANA_PORT=${SKIFF_E2E_GRAFANA_PORT:-13000}
fi
# A stopped node is NotReady after 20 s, and its pods are evicted 10 s
# later; the agents renew their Lease every 5 s to stay well inside that.
export SKIFF_NODE_MONITOR_GRACE_PERIOD=20s
export SKIFF_DEFAULT_TOLERATION_SECONDS=10
export SKIFF_NODE_AGENT_ARGS="--lease-renew-interval=5s --node-status-update-frequency=5s"
tmp=$(mktemp -d /tmp/skiff-e2e.XXXXXX)
export SKIFFCONFIG=$tmp/config
export SKIFF_CREDENTIALS_DIR=$tmp/credentials

compose() { "$ROOT/scripts/compose.sh" compose "$@"; }

cleanup() {
  local rc=$?
  if [ $rc != 0 ]; then
    echo "== e2e failed ($rc): the last logs of every component" >&2
    compose logs --no-color --tail 40 >&2 || true
  fi
  if [ "${SKIFF_E2E_KEEP:-0}" = 1 ]; then
    echo "== kept: COMPOSE_PROJECT_NAME=$COMPOSE_PROJECT_NAME, SKIFFCONFIG=$SKIFFCONFIG" >&2
  else
    "$ROOT/scripts/compose.sh" down -v || true
    rm -rf "$tmp"
  fi
  exit $rc
}
trap cleanup EXIT

start=$SECONDS
echo "== up (project $COMPOSE_PROJECT_NAME, apiserver 127.0.0.1:$SKIFF_API_PORT)"
"$ROOT/scripts/compose.sh" up
if [ "${SKIFF_HA:-0}" != 1 ]; then
  echo "== kubectl and helm (make tools; a no-op when built)"
  "$ROOT/hack/tools/build.sh" "$ROOT/.tools/bin"
fi
echo "== the story (deploy/compose/e2e, $tests) after $((SECONDS - start)) s"
SKIFF_E2E_SKIFFCTL=$ROOT/bin/skiffctl SKIFF_E2E_KUBECTL=$ROOT/.tools/bin/kubectl SKIFF_E2E_HELM=$ROOT/.tools/bin/helm GOWORK=off CGO_ENABLED=0 \
  go -C "$ROOT/deploy/compose/e2e" test -count=1 -v -timeout 20m -run "$tests" . "$@"
echo "== e2e passed in $((SECONDS - start)) s (before the teardown)"
