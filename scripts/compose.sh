#!/usr/bin/env bash
# compose.sh drives the docker compose cluster of deploy/compose (make up,
# make down, make e2e, make e2e-ha). It works with `docker compose` (v2) and
# `docker-compose` (v1), and needs no registry: every image is built here.
#
#   scripts/compose.sh build          binaries and images (only what changed)
#   scripts/compose.sh up             build, start, wait until every component is
#                                     healthy and the nodes Ready, write the
#                                     skiffctl config, say what to type next
#   scripts/compose.sh down [-v]      stop and remove the containers (-v: and the
#                                     volumes, i.e. all the cluster's state)
#   scripts/compose.sh e2e            the end-to-end test (deploy/compose/e2e)
#   scripts/compose.sh e2e-ha         its HA form: three control-plane members,
#                                     the etcd leader's SIGKILLed under load
#   scripts/compose.sh compose ARGS   docker compose with the cluster's files,
#                                     e.g. `compose ps`, `compose logs -f node1`
#
# Environment: SKIFF_API_PORT (6443), SKIFF_REGISTRY_PORT (5000),
# SKIFF_PROMETHEUS_PORT (9090), SKIFF_GRAFANA_PORT (3000) on 127.0.0.1;
# SKIFF_GRAFANA=1 starts Grafana too; SKIFF_UP_TIMEOUT (300 s);
# SKIFF_PROGRESS_INTERVAL (10 s: how often a long build says where it is);
# COMPOSE_PROJECT_NAME (skiff); SKIFFCONFIG (~/.skiff/config).
# SKIFF_HA=1 (make up HA=1): the HA profile, docker-compose.ha.yml (three
# control-plane members; apiserver2 and apiserver3 on SKIFF_API_PORT2 (6445)
# and SKIFF_API_PORT3 (6446); their network SKIFF_HA_NET.0/24).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$ROOT/deploy/compose
BUILD=$DIR/.build
BASE_IMAGE=${SKIFF_BASE_IMAGE:-debian:bookworm-slim}
TAG=${SKIFF_TAG:-dev}
export SKIFF_TAG=$TAG
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-skiff}
API_PORT=${SKIFF_API_PORT:-6443}
HA=${SKIFF_HA:-0}
[ "$HA" = 1 ] || HA=0
REGISTRY_PORT=${SKIFF_REGISTRY_PORT:-5000}
GO=${GO:-go}
VERSION=${VERSION:-$(git -C "$ROOT" describe --tags --always --dirty 2>/dev/null || echo v0.1.0-dev)}
# The version every binary reports (as the Makefile's LDFLAGS; see internal/version).
LDFLAGS="-s -w -X skiff.dev/internal/version.gitVersion=$VERSION -X skiff.dev/internal/version.gitCommit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || true)"

# The workload images: the pause image (the sandbox image), the demo
# server in two versions (rolling updates) and the in-cluster example (a
# pod listing pods as its service account). name|ref|package|version
WORKLOADS=(
  "pause|skiff.local/pause:3.9|./services/node-agent/images/pause|3.9"
  "demo-v1|skiff.local/demo:v1|./services/node-agent/images/demo|v1"
  "demo-v2|skiff.local/demo:v2|./services/node-agent/images/demo|v2"
  "in-cluster|skiff.local/in-cluster:v1|./examples/in-cluster|v1"
)
CONTROL_PLANE=(skiff-apiserver skiff-controller-manager skiff-scheduler)
SERVICES=(apiserver controller-manager scheduler registry prometheus node1 node2)
NODES=(node1 node2)
# The HA profile's control-plane members besides apiserver, and the
# addresses the clients are given: in the compose network, and on the host.
MEMBERS=(apiserver2 apiserver3)
if [ "$HA" = 1 ]; then
  SERVICES+=("${MEMBERS[@]}")
  export SKIFF_APISERVERS=apiserver:6443,apiserver2:6443,apiserver3:6443
fi
HOST_APISERVERS=127.0.0.1:$API_PORT,127.0.0.1:${SKIFF_API_PORT2:-6445},127.0.0.1:${SKIFF_API_PORT3:-6446}

log() { printf '%s\n' "$*" >&2; }
die() { log "compose.sh: $*"; exit 1; }
# step: a heading, with the time since this command started.
step() { printf '==> [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }

# ---------------------------------------------------------------- progress
# A cold build downloads Go modules and Debian packages for minutes: each
# long step runs as a job whose output goes to a log file, and wait_jobs
# says when each job ends, and meanwhile, every SKIFF_PROGRESS_INTERVAL
# seconds, what is still running and the last line of its output (the
# "go: downloading ..." or docker build step it is at).
PROGRESS_INTERVAL=${SKIFF_PROGRESS_INTERVAL:-10}
LOGS=$BUILD/logs
JOBS=()           # NAME|PID of the jobs started, not waited for
declare -A JOB_T0 # NAME -> SECONDS at its start

# job NAME CMD...: runs CMD in the background, its output in $LOGS.
job() {
  local name=$1
  shift
  mkdir -p "$LOGS"
  log "   $name ..."
  "$@" >"$(job_log "$name")" 2>&1 &
  JOBS+=("$name|$!")
  JOB_T0[$name]=$SECONDS
}

job_log() { printf '%s/%s.log' "$LOGS" "${1//[^A-Za-z0-9._-]/_}"; }

# last_line FILE: its last non-empty line, progress bars' carriage returns
# cut, at most 100 characters.
last_line() {
  tr '\r' '\n' <"$1" 2>/dev/null | awk 'NF {l = $0} END {print substr(l, 1, 100)}'
}

# wait_jobs: waits for every job; a failed job's output is shown, and then
# the script fails.
wait_jobs() {
  local j name pid running failed=() next=$((SECONDS + PROGRESS_INTERVAL))
  while [ ${#JOBS[@]} -gt 0 ]; do
    running=()
    for j in "${JOBS[@]}"; do
      name=${j%|*} pid=${j##*|}
      if kill -0 "$pid" 2>/dev/null; then
        running+=("$j")
      elif wait "$pid"; then
        log "   $name: done in $((SECONDS - JOB_T0[$name])) s"
      else
        log "   $name: FAILED after $((SECONDS - JOB_T0[$name])) s; its output ($(job_log "$name")):"
        sed 's/^/   | /' "$(job_log "$name")" >&2
        failed+=("$name")
      fi
    done
    JOBS=("${running[@]}")
    if [ ${#JOBS[@]} -gt 0 ] && [ $SECONDS -ge $next ]; then
      for j in "${JOBS[@]}"; do
        name=${j%|*}
        log "   ... $name ($((SECONDS - JOB_T0[$name])) s): $(last_line "$(job_log "$name")")"
      done
      next=$((SECONDS + PROGRESS_INTERVAL))
    fi
    [ ${#JOBS[@]} -eq 0 ] || sleep 1
  done
  [ ${#failed[@]} -eq 0 ] || die "failed: ${failed[*]} (output above)"
}

# ---------------------------------------------------------------- compose
COMPOSE=()
find_compose() {
  [ ${#COMPOSE[@]} -gt 0 ] && return
  command -v docker >/dev/null || die "docker is missing: install Docker (https://docs.docker.com/engine/install/)"
  docker info >/dev/null 2>&1 || die "the Docker engine does not answer (is it running, and may this user use it?)"
  if docker compose version >/dev/null 2>&1; then
    COMPOSE=(docker compose)
  elif command -v docker-compose >/dev/null; then
    COMPOSE=(docker-compose)
  else
    die "neither 'docker compose' nor 'docker-compose' is installed"
  fi
}

# compose runs docker compose with the cluster's files: the cgroup v1
# override on cgroup v1 hosts, the HA profile when SKIFF_HA=1 or the
# cluster has its volumes (so that `down -v` removes them too), the grafana
# profile when SKIFF_GRAFANA=1.
compose() {
  find_compose
  local args=(-f "$DIR/docker-compose.yml")
  if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ]; then
    args+=(-f "$DIR/docker-compose.cgroup-v1.yml")
  fi
  if [ "$HA" = 1 ] || has_volume apiserver2-data; then
    args+=(-f "$DIR/docker-compose.ha.yml")
  fi
  if [ "${SKIFF_GRAFANA:-0}" = 1 ]; then
    args+=(--profile grafana)
  fi
  "${COMPOSE[@]}" "${args[@]}" "$@"
}

# container SERVICE: the id of the service's container ("" if none), by
# the labels both compose versions set (much faster than `compose ps`).
container() {
  docker ps -aq --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME" \
    --filter "label=com.docker.compose.service=$1" | head -1
}

# has_volume NAME: the project has the compose volume NAME.
has_volume() {
  [ -n "$(docker volume ls -q --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME" \
    --filter "label=com.docker.compose.volume=$1")" ]
}

# check_profile: a cluster's etcd data is of one profile, one member or
# three: starting the other over it would break it. Say so instead.
check_profile() {
  if [ "$HA" = 1 ] && has_volume apiserver-data && ! has_volume apiserver2-data; then
    die "project $COMPOSE_PROJECT_NAME has a single apiserver's state: make up (without HA=1), or make down V=1 first"
  fi
  if [ "$HA" = 0 ] && has_volume apiserver2-data; then
    die "project $COMPOSE_PROJECT_NAME has the HA profile's state: make up HA=1, or make down V=1 first"
  fi
}

# ---------------------------------------------------------------- build
gobuild() { # gobuild OUT PACKAGE [extra ldflags]: a job named "go build OUT's name"
  job "go build $(basename "$1")" env CGO_ENABLED=0 "$GO" build -C "$ROOT" -trimpath -ldflags "$LDFLAGS ${3:-}" -o "$1" "$2"
}

build_probe() {
  cd "$DIR/probe" && GOWORK=off CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w" -o "$BUILD/control-plane/bin/skiff-probe" .
}

has_node_agent() { compgen -G "$ROOT/services/node-agent/cmd/skiff-node-agent/*.go" >/dev/null; }

build_binaries() {
  step "binaries (go build, static)"
  command -v "$GO" >/dev/null || die "Go is missing: install Go 1.26 or newer (https://go.dev/dl/)"
  mkdir -p "$BUILD/control-plane/bin" "$BUILD/node/bin" "$BUILD/node/images" "$ROOT/bin"
  local b
  for b in "${CONTROL_PLANE[@]}"; do
    gobuild "$BUILD/control-plane/bin/$b" "./services/${b#skiff-}/cmd/$b"
  done
  # skiff-probe: the healthcheck of the FROM-scratch images, a module of its
  # own (standard library only) outside the workspace.
  job "go build skiff-probe" build_probe
  if has_node_agent; then
    gobuild "$BUILD/node/bin/skiff-node-agent" ./services/node-agent/cmd/skiff-node-agent
  else
    rm -f "$BUILD/node/bin/skiff-node-agent"
    log "   (no services/node-agent/cmd/skiff-node-agent yet: the node image runs containerd only)"
  fi
  if [ -d "$ROOT/services/ctl/cmd/skiffctl" ]; then
    gobuild "$ROOT/bin/skiffctl" ./services/ctl/cmd/skiffctl
  fi
  local w name ref pkg ver
  for w in "${WORKLOADS[@]}"; do
    IFS='|' read -r name ref pkg ver <<<"$w"
    mkdir -p "$BUILD/workloads/$name/tmp"
    job "go build $name" env CGO_ENABLED=0 "$GO" build -C "$ROOT" -trimpath -ldflags "-s -w -X main.version=$ver" \
      -o "$BUILD/workloads/$name/$(basename "$pkg")" "$pkg"
  done
  wait_jobs
  cp "$BUILD/control-plane/bin/skiff-probe" "$BUILD/node/bin/skiff-probe"
  # The pki service (node image, which has a shell) issues the credentials.
  cp "$BUILD/control-plane/bin/skiff-apiserver" "$BUILD/node/bin/skiff-apiserver"
}

# image TAG CONTEXT [docker build args...]: builds (a job: its progress
# shown as it goes, BuildKit's in plain text), says whether it changed.
image() {
  local tag=$1 ctx=$2 before after
  shift 2
  before=$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
  job "docker build $tag" env BUILDKIT_PROGRESS=plain docker build -t "$tag" "$@" "$ctx"
  wait_jobs
  after=$(docker image inspect -f '{{.Id}}' "$tag")
  if [ "$before" = "$after" ]; then log "   $tag: up to date"; else log "   $tag: new image ${after:7:12}"; fi
}

build_images() {
  step "base image $BASE_IMAGE"
  job "base image $BASE_IMAGE" "$DIR/base-image.sh" "$BASE_IMAGE"
  wait_jobs
  step "images"
  local w name ref pkg ver bin
  for w in "${WORKLOADS[@]}"; do
    IFS='|' read -r name ref pkg ver <<<"$w"
    bin=$(basename "$pkg")
    cat >"$BUILD/workloads/$name/Dockerfile" <<EOF
# Generated by scripts/compose.sh: $pkg at version $ver.
FROM scratch
COPY $bin /$bin
COPY tmp/ /tmp/
$([ "$bin" = demo ] && echo "EXPOSE 8080/tcp")
ENTRYPOINT ["/$bin"]
EOF
    image "$ref" "$BUILD/workloads/$name"
    # The node image carries the tarballs (the pause image is imported at
    # start; the demo ones are a fallback, SKIFF_PRELOAD_IMAGES): saved
    # again only when the image changed, so that the node image's build
    # cache holds.
    local id
    id=$(docker image inspect -f '{{.Id}}' "$ref")
    local tar=$BUILD/node/images/$name.tar idfile=$BUILD/workloads/$name.id
    if [ "$(cat "$idfile" 2>/dev/null)" != "$id" ] || [ ! -f "$tar" ]; then
      log "   docker save $ref -> node image's images/$name.tar"
      docker save -o "$tar" "$ref"
      echo "$id" >"$idfile"
    fi
  done
  image "skiff/control-plane:$TAG" "$BUILD/control-plane" -f "$DIR/images/control-plane/Dockerfile"
  cp -a "$DIR/images/node/." "$BUILD/node/"
  image "skiff/node:$TAG" "$BUILD/node" --build-arg "BASE=$BASE_IMAGE"
  image "skiff/registry:$TAG" "$DIR/images/registry" --build-arg "BASE=$BASE_IMAGE"
  image "skiff/prometheus:$TAG" "$DIR/images/prometheus" --build-arg "BASE=$BASE_IMAGE"
  if [ "${SKIFF_GRAFANA:-0}" = 1 ] && [ -d "$DIR/images/grafana" ]; then
    image "skiff/grafana:$TAG" "$DIR/images/grafana" --build-arg "BASE=$BASE_IMAGE"
  fi
}

build() {
  mkdir -p "$BUILD"
  build_binaries
  build_images
}

# ---------------------------------------------------------------- up
# health SERVICE: healthy, starting, unhealthy, running (no healthcheck),
# exited, restarting... or "missing".
health() {
  local id
  id=$(container "$1")
  [ -n "$id" ] || { echo missing; return; }
  docker inspect -f '{{if .State.Health}}{{if eq .State.Status "running"}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}{{else}}{{.State.Status}}{{end}}' "$id" 2>/dev/null || echo missing
}

# wait_healthy SERVICE...: until each is healthy; fails at the deadline,
# or when a service has not been running for a minute (a crash loop).
wait_healthy() {
  local deadline=$((SECONDS + ${SKIFF_UP_TIMEOUT:-300})) s st pending last="" failing=""
  declare -A down=()
  while :; do
    pending=()
    for s in "$@"; do
      st=$(health "$s")
      [ "$st" = healthy ] || pending+=("$s:$st")
      case $st in
      healthy | starting | unhealthy | running) down[$s]=0 ;;
      *) down[$s]=$((${down[$s]:-0} + 1)); [ "${down[$s]}" -lt 30 ] || failing=$s ;;
      esac
    done
    [ ${#pending[@]} -eq 0 ] && return 0
    if [ "${pending[*]}" != "$last" ]; then log "   waiting for ${pending[*]}"; last="${pending[*]}"; fi
    if [ $SECONDS -ge $deadline ] || [ -n "$failing" ]; then
      for s in "${pending[@]}"; do
        log "--- last logs of ${s%%:*}:"; docker logs --tail 30 "$(container "${s%%:*}")" >&2 || true
      done
      [ -z "$failing" ] || die "$failing keeps exiting (see its logs above)"
      die "not healthy after ${SKIFF_UP_TIMEOUT:-300} s: ${pending[*]}"
    fi
    sleep 2
  done
}

skiffctl() { "$ROOT/bin/skiffctl" --context skiff-compose "$@"; }

# The admin's credentials (group system:masters), copied out of the pki
# volume (through the apiserver container, which mounts it) for skiffctl.
CREDS=${SKIFF_CREDENTIALS_DIR:-${SKIFF_HOME:-$HOME/.skiff}/compose-$COMPOSE_PROJECT_NAME}
copy_credentials() {
  local c
  c=$(container apiserver)
  [ -n "$c" ] || die "no apiserver container to copy the credentials from"
  mkdir -p "$CREDS"
  chmod 700 "$CREDS"
  for f in admin.crt admin.key ca.crt; do
    docker cp "$c:/pki/admin/$f" "$CREDS/$f" >/dev/null || die "copying /pki/admin/$f out of the apiserver container failed"
  done
  chmod 600 "$CREDS/admin.key"
}

# wait_nodes_ready: until every node of NODES is Ready (needs the agent).
wait_nodes_ready() {
  [ -x "$ROOT/bin/skiffctl" ] || { log "   (no skiffctl: not waiting for the nodes to be Ready)"; return 0; }
  has_node_agent || { log "   (no node agent yet: the nodes will not register)"; return 0; }
  local deadline=$((SECONDS + ${SKIFF_UP_TIMEOUT:-300})) out n notready last=""
  while :; do
    out=$(skiffctl get nodes --no-headers 2>/dev/null || true)
    notready=()
    for n in "${NODES[@]}"; do
      awk -v n="$n" '$1 == n && $2 == "Ready" {ok=1} END {exit !ok}' <<<"$out" || notready+=("$n")
    done
    [ ${#notready[@]} -eq 0 ] && return 0
    if [ "${notready[*]}" != "$last" ]; then log "   waiting for nodes to be Ready: ${notready[*]}"; last="${notready[*]}"; fi
    [ $SECONDS -lt $deadline ] || { log "$out"; die "nodes not Ready after ${SKIFF_UP_TIMEOUT:-300} s: ${notready[*]}"; }
    sleep 2
  done
}

# push_workloads: the workload images into the cluster's registry, through
# its published port (Docker treats 127.0.0.1 registries as plain HTTP).
push_workloads() {
  step "workload images into the registry (127.0.0.1:$REGISTRY_PORT)"
  local w name ref pkg ver repo
  for w in "${WORKLOADS[@]}"; do
    IFS='|' read -r name ref pkg ver <<<"$w"
    repo=127.0.0.1:$REGISTRY_PORT/${ref#skiff.local/}
    docker tag "$ref" "$repo"
    docker push -q "$repo" >/dev/null 2>"$BUILD/push.log" || { cat "$BUILD/push.log" >&2; die "docker push $repo failed"; }
    docker rmi "$repo" >/dev/null
    log "   $ref"
  done
}

# write_config: the skiffctl context skiff-compose. With HA=1 its server
# is the three members (skiffctl moves to another when one fails), which
# kubectl cannot read: the context skiff-compose-kubectl names apiserver
# alone, for kubectl and Helm.
write_config() {
  [ -x "$ROOT/bin/skiffctl" ] || { log "   (no skiffctl: no config written)"; return 0; }
  local ctl=("$ROOT/bin/skiffctl") server="https://127.0.0.1:$API_PORT"
  copy_credentials
  [ "$HA" = 0 ] || server="https://$HOST_APISERVERS"
  "${ctl[@]}" config set-cluster skiff-compose --server "$server" --certificate-authority "$CREDS/ca.crt" >/dev/null
  "${ctl[@]}" config set-credentials skiff-compose-admin --client-certificate "$CREDS/admin.crt" --client-key "$CREDS/admin.key" >/dev/null
  "${ctl[@]}" config set-context skiff-compose --cluster skiff-compose --user skiff-compose-admin --namespace default >/dev/null
  if [ "$HA" = 1 ]; then
    "${ctl[@]}" config set-cluster skiff-compose-kubectl --server "https://127.0.0.1:$API_PORT" --certificate-authority "$CREDS/ca.crt" >/dev/null
    "${ctl[@]}" config set-context skiff-compose-kubectl --cluster skiff-compose-kubectl --user skiff-compose-admin --namespace default >/dev/null
  fi
  "${ctl[@]}" config use-context skiff-compose >/dev/null
  log "   context skiff-compose (${server#https://}, user skiff-admin in system:masters, credentials in $CREDS) in ${SKIFFCONFIG:-~/.skiff/config}"
}

up() {
  find_compose
  check_profile
  build
  step "starting the cluster (${COMPOSE[*]}, project $COMPOSE_PROJECT_NAME$([ "$HA" = 0 ] || echo ", HA: three control-plane members"))"
  compose up -d --remove-orphans
  step "waiting for the registry, then pushing the workload images"
  wait_healthy registry
  push_workloads
  step "waiting for every component to be healthy"
  local want=("${SERVICES[@]}")
  [ "${SKIFF_GRAFANA:-0}" = 1 ] && want+=(grafana)
  wait_healthy "${want[@]}"
  step "skiffctl config"
  write_config
  wait_nodes_ready
  cat >&2 <<EOF

Skiff is up: apiserver$([ "$HA" = 0 ] && echo " 127.0.0.1:$API_PORT" || echo "s ${HOST_APISERVERS//,/, }"), Prometheus http://127.0.0.1:${SKIFF_PROMETHEUS_PORT:-9090}$(
  [ "${SKIFF_GRAFANA:-0}" = 1 ] && echo ", Grafana http://127.0.0.1:${SKIFF_GRAFANA_PORT:-3000}").
Next:
  export PATH=\$PWD/bin:\$PATH
  skiffctl get nodes
  skiffctl apply -f deploy/compose/examples/demo-deployment.yml
  skiffctl get pods -o wide
  scripts/compose.sh compose ps            # or: logs -f node1
  make down                                # make down V=1 also deletes the cluster's state
The config is a standard kubeconfig: kubectl, Helm and k9s use it as it is$([ "$HA" = 0 ] || echo " with the context skiff-compose-kubectl (apiserver alone: they read one server, not three)"):
  KUBECONFIG=${SKIFFCONFIG:-\$HOME/.skiff/config} kubectl get nodes$([ "$HA" = 0 ] || echo " --context skiff-compose-kubectl")
EOF
}

down() {
  local v=()
  [ "${1:-}" = -v ] && v=(-v)
  step "stopping the cluster${v:+ and removing its volumes}"
  compose down --remove-orphans "${v[@]}"
  # With the volumes went the cluster CA: the copied admin credentials are void.
  [ ${#v[@]} -eq 0 ] || rm -rf "$CREDS"
  # cgroup v1: the nodes' pod cgroups live in the host's hierarchy
  # (SKIFF_CGROUP_ROOT); remove the empty ones they leave (rmdir fails on a
  # cgroup in use, and without the rights to: both are ignored).
  local d
  for d in /sys/fs/cgroup/*/skiff/"$COMPOSE_PROJECT_NAME"-node*; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  return 0
}

case "${1:-}" in
build) build ;;
up) up ;;
down) shift; down "$@" ;;
e2e) shift; exec "$DIR/e2e/run.sh" "$@" ;;
e2e-ha) shift; SKIFF_HA=1 exec "$DIR/e2e/run.sh" "$@" ;;
compose) shift; compose "$@" ;;
*) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
