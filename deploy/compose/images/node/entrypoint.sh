#!/usr/bin/env bash
# Entrypoint of a Skiff node container: prepares cgroups (v1 and v2) and
# mounts as kind's entrypoint does, starts containerd, imports the images
# baked into the image, masquerades pod traffic leaving the cluster CIDR,
# then runs skiff-node-agent, which sets up the pod network itself
# (--manage-pod-network). The container exits when containerd or the agent
# does (its restart policy starts it again).
#
# Environment (set by deploy/compose/docker-compose.yml):
#   NODE_NAME            the Node's name (default: the hostname)
#   SKIFF_SERVER         the apiserver's gRPC address (default apiserver:6443)
#   SKIFF_CLUSTER_CIDR   every node's pod subnets (default 10.244.0.0/16;
#                        the controller-manager's --cluster-cidr): the
#                        agent's --cluster-cidr, and traffic from pods to
#                        elsewhere is masqueraded
#   SKIFF_PRELOAD_IMAGES names under /opt/skiff/images (without .tar) to
#                        import at start (default "pause"; the rest is
#                        pulled from the registry)
#   SKIFF_CGROUP_ROOT    parent cgroup of this node's pods (the agent's
#                        --cgroup-root), unique per node and cluster
#   SKIFF_PKI            where the pki service put the credentials (default
#                        /pki: $SKIFF_PKI/$NODE_NAME/$NODE_NAME.crt, .key, ca.crt)
#   SKIFF_NODE_AGENT_ARGS extra flags for skiff-node-agent
set -euo pipefail

log() { echo "node-entrypoint: $*" >&2; }

NODE_NAME=${NODE_NAME:-$(hostname)}
SKIFF_SERVER=${SKIFF_SERVER:-apiserver:6443}
SKIFF_PRELOAD_IMAGES=${SKIFF_PRELOAD_IMAGES:-pause}
NODE_IP=${NODE_IP:-$(hostname -i | awk '{print $1}')}

# --- cgroups ---------------------------------------------------------------
# writable DIR: a cgroup directory can be created in DIR (cgroupfs takes no
# regular files).
writable() { mkdir "$1/.skiff-probe" 2>/dev/null && rmdir "$1/.skiff-probe"; }

# cgroup v2 (unified): kind's recipe. The container must see its own
# subtree writable (a private cgroup namespace, Docker's default on v2, with
# /sys/fs/cgroup remounted read-write); its processes move into a child
# cgroup ("init") so that every controller can be enabled in
# cgroup.subtree_control for containerd's pod cgroups beside it (a cgroup
# with processes cannot delegate controllers: "no internal processes").
setup_cgroup_v2() {
  if ! writable /sys/fs/cgroup; then
    mount -o remount,rw /sys/fs/cgroup 2>/dev/null ||
      { umount /sys/fs/cgroup 2>/dev/null; mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup; } ||
      { log "cannot make /sys/fs/cgroup writable"; exit 1; }
  fi
  local self base
  self=$(sed -n 's/^0:://p' /proc/self/cgroup)
  base=/sys/fs/cgroup
  # A host cgroup namespace shows our path; use our own subtree then.
  if [ -n "$self" ] && [ "$self" != / ] && [ -d "/sys/fs/cgroup$self" ]; then
    base=/sys/fs/cgroup$self
  fi
  mkdir -p "$base/init"
  local pid
  while read -r pid; do
    echo "$pid" >"$base/init/cgroup.procs" 2>/dev/null || true
  done <"$base/cgroup.procs"
  local c ctrls
  read -r -a ctrls <"$base/cgroup.controllers"
  for c in "${ctrls[@]}"; do
    echo "+$c" >"$base/cgroup.subtree_control" 2>/dev/null || log "cgroup v2: controller $c not enabled"
  done
  log "cgroup v2: processes in $base/init, controllers: $(cat "$base/cgroup.subtree_control")"
}

setup_cgroup_v1() {
  # /sys/fs/cgroup is bind-mounted read-write from the host (see the
  # compose file's cgroup-v1 override): the host's hierarchy, shared by
  # every node container. Pods' cgroups go under this node's own
  # SKIFF_CGROUP_ROOT (the agent's --cgroup-root); those left by an earlier
  # run of this node (its processes died with its container) are removed
  # here, deepest first (rmdir fails on a cgroup still in use).
  if ! writable /sys/fs/cgroup/memory; then
    log "cgroup v1: /sys/fs/cgroup/memory is read-only; mount /sys/fs/cgroup:/sys/fs/cgroup:rw (docker-compose.cgroup-v1.yml)"
    exit 1
  fi
  if [ -n "${SKIFF_CGROUP_ROOT:-}" ]; then
    local d
    for d in /sys/fs/cgroup/*"$SKIFF_CGROUP_ROOT"; do
      [ -d "$d" ] && find "$d" -depth -mindepth 1 -type d -exec rmdir {} + 2>/dev/null
    done
  fi
  log "cgroup v1${SKIFF_CGROUP_ROOT:+, pods under $SKIFF_CGROUP_ROOT}"
}

if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  setup_cgroup_v2
else
  setup_cgroup_v1
fi

# --- mounts ----------------------------------------------------------------
# Volumes with mount propagation need shared mounts (kind does the same).
mount --make-rshared / 2>/dev/null || log "mount --make-rshared / failed (mount propagation disabled)"
mkdir -p /var/lib/containerd /var/log/pods /etc/cni/net.d /var/lib/skiff-node-agent

# --- containerd ------------------------------------------------------------
# overlayfs needs a real filesystem under /var/lib/containerd (a volume: an
# overlay on the container's own overlay is refused); native otherwise.
snapshotter=native
probe=/var/lib/containerd/.overlay-probe
rm -rf "$probe" && mkdir -p "$probe"/{l,u,w,m}
if mount -t overlay overlay -o "lowerdir=$probe/l,upperdir=$probe/u,workdir=$probe/w" "$probe/m" 2>/dev/null; then
  umount "$probe/m"
  snapshotter=overlayfs
fi
rm -rf "$probe"
sed "s/@SNAPSHOTTER@/$snapshotter/" /etc/containerd/config.toml.in >/etc/containerd/config.toml

pids=()
containerd --config /etc/containerd/config.toml >>/var/log/containerd.log 2>&1 &
pids+=($!)
log "containerd started (snapshotter $snapshotter, log /var/log/containerd.log)"

# shellcheck disable=SC2317 # called by the trap
terminate() {
  log "stopping"
  kill -TERM "${pids[@]}" 2>/dev/null || true
  wait || true
  exit 0
}
trap terminate TERM INT

for _ in $(seq 1 300); do
  ctr version >/dev/null 2>&1 && break
  kill -0 "${pids[0]}" 2>/dev/null || { tail -20 /var/log/containerd.log >&2; exit 1; }
  sleep 0.1
done
ctr version >/dev/null || { log "containerd did not answer in 30 s"; exit 1; }

for name in $SKIFF_PRELOAD_IMAGES; do
  tar=/opt/skiff/images/$name.tar
  [ -f "$tar" ] || { log "no $tar to preload"; continue; }
  ctr -n k8s.io images import --snapshotter "$snapshotter" "$tar" >/dev/null
  log "imported $tar"
done

# --- pod network -----------------------------------------------------------
# The node agent writes the CNI configuration for its Node's spec.podCIDR
# (assigned by the controller-manager's nodeipam controller) and keeps the
# routes to the other nodes' pod subnets (--manage-pod-network). Pods reach
# other pods by their own addresses; what leaves the cluster CIDR (the
# compose network: apiserver, registry) goes out as the node's address.
cluster=${SKIFF_CLUSTER_CIDR:-10.244.0.0/16}
iptables -t nat -C POSTROUTING -s "$cluster" ! -d "$cluster" -j MASQUERADE 2>/dev/null ||
  iptables -t nat -A POSTROUTING -s "$cluster" ! -d "$cluster" -j MASQUERADE

# --- the node agent --------------------------------------------------------
if ! command -v skiff-node-agent >/dev/null; then
  log "skiff-node-agent is not in this image (not built yet): running containerd only"
else
  # shellcheck disable=SC2086 # SKIFF_NODE_AGENT_ARGS is a list of flags
  # Its credentials, from the pki service (images/node/pki-init.sh): the
  # client certificate of system:node:<node>, which also serves the
  # NodeAgent service to the apiserver.
  creds=${SKIFF_PKI:-/pki}/$NODE_NAME
  [ -s "$creds/$NODE_NAME.crt" ] || { log "no credentials for $NODE_NAME in $creds (the pki service makes them)"; exit 1; }
  skiff-node-agent \
    --server "$SKIFF_SERVER" \
    --tls-ca-file "$creds/ca.crt" --tls-cert-file "$creds/$NODE_NAME.crt" --tls-key-file "$creds/$NODE_NAME.key" \
    --node-name "$NODE_NAME" \
    --node-ip "$NODE_IP" \
    --container-runtime-endpoint unix:///run/containerd/containerd.sock \
    --listen 0.0.0.0:10250 \
    --metrics-listen "0.0.0.0:${SKIFF_AGENT_METRICS_PORT:-10248}" \
    --manage-pod-network --cluster-cidr "$cluster" --cni-conf-dir /etc/cni/net.d \
    ${SKIFF_CGROUP_ROOT:+--cgroup-root "$SKIFF_CGROUP_ROOT"} \
    ${SKIFF_NODE_AGENT_ARGS:-} &
  pids+=($!)
  log "skiff-node-agent started for node $NODE_NAME ($NODE_IP)"
fi

# Whichever of containerd and the agent ends first ends the container.
set +e
wait -n "${pids[@]}"
rc=$?
log "a process exited ($rc): stopping"
kill -TERM "${pids[@]}" 2>/dev/null
wait
exit "$rc"
