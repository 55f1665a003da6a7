#!/usr/bin/env bash
# install.sh: installs Skiff from the dist tarball (make dist) on a Linux
# machine with systemd, as root. docs/install.md walks through a cluster.
#
#   ./install.sh
#       the files only: binaries into /usr/local/bin, systemd units into
#       /etc/systemd/system, default settings into /etc/skiff (an existing
#       file there is kept); nothing is started
#   ./install.sh control-plane --init [--address IP] [--name NAME]
#           [--apiservers A:6443,B:6443,C:6443] [--tls-san NAMES]
#       the first control-plane member: makes the members' token
#       (/etc/skiff/cluster-token) when missing, starts skiff-apiserver with
#       --cluster-init, issues the controller-manager's and the scheduler's
#       client certificates and starts them; writes the CA's hash into
#       /etc/skiff/ca-cert-hash
#   ./install.sh control-plane --join MEMBER:6443 --ca-cert-hash sha256:HEX
#           [--address IP] [--name NAME] [--apiservers ...] [--tls-san ...]
#       another member: needs /etc/skiff/cluster-token copied from the first
#   ./install.sh node --join ADDR:6443 --token TOKEN --ca-cert-hash sha256:HEX
#           [--server A:6443,B:6443,C:6443] [--node-name NAME] [--node-ip IP]
#           [--pod-network-backend routes|vxlan]
#       a node: the arguments `skiff-apiserver token create
#       --print-join-command` prints, and every member with --server
#
# --address is the IP the other machines reach this one by (default: the
# first address of `hostname -I`); --name the etcd member's name (default:
# the hostname). --apiservers is what the controller-manager and the
# scheduler are given (default: this member alone, 127.0.0.1:6443).
# It downloads nothing: the prerequisites it checks (containerd, runc, the
# CNI plugins on a node) come from the distribution's packages.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PREFIX=${SKIFF_PREFIX:-/usr/local/bin}
UNITS=${SKIFF_UNIT_DIR:-/etc/systemd/system}
ETC=${SKIFF_ETC:-/etc/skiff}
BINARIES=(skiff-apiserver skiff-controller-manager skiff-scheduler skiff-node-agent skiffctl)
COMPONENTS=(apiserver controller-manager scheduler node-agent)

log() { printf 'install.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

# ---------------------------------------------------------------- checks
# missing: what this machine lacks for ROLE, one "  - " line each with
# the package that brings it.
missing() {
  local role=$1 c
  [ "$(uname -s)" = Linux ] || echo "  - Linux (this is $(uname -s))"
  [ "$(uname -m)" = x86_64 ] || echo "  - an amd64 machine (this is $(uname -m)): the binaries are linux-amd64"
  [ -d /run/systemd/system ] || echo "  - systemd as the init system (/run/systemd/system is missing)"
  command -v systemctl >/dev/null || echo "  - systemctl (package systemd)"
  if [ "$role" = node ]; then
    command -v containerd >/dev/null || echo "  - containerd (package containerd)"
    command -v runc >/dev/null || echo "  - runc (package runc)"
    for c in bridge host-local portmap loopback; do
      [ -x "/usr/lib/cni/$c" ] || [ -x "/opt/cni/bin/$c" ] ||
        echo "  - the CNI plugin $c in /usr/lib/cni or /opt/cni/bin (package containernetworking-plugins)"
    done
    command -v nft >/dev/null || echo "  - nft, for the Services' rules (package nftables)"
    command -v ip >/dev/null || echo "  - ip (package iproute2)"
    command -v iptables >/dev/null || echo "  - iptables (package iptables)"
  fi
  return 0
}

check() {
  local role=$1 lacks
  [ "$(id -u)" = 0 ] || die "run me as root (I write /usr/local/bin, /etc/systemd/system and /etc/skiff)"
  lacks=$(missing "$role")
  if [ -n "$lacks" ]; then
    log "this machine lacks what a $role needs:"
    echo "$lacks" >&2
    case $role in
    node) log "on Debian or Ubuntu: apt-get install containerd runc containernetworking-plugins nftables iproute2 iptables" ;;
    esac
    exit 1
  fi
}

# ---------------------------------------------------------------- files
install_files() {
  local b c
  for b in "${BINARIES[@]}"; do
    [ -x "$HERE/bin/$b" ] || die "$HERE/bin/$b is missing: run me from the unpacked tarball (make dist)"
  done
  install -d -m 0755 "$PREFIX" "$UNITS"
  install -d -m 0700 "$ETC"
  for b in "${BINARIES[@]}"; do
    install -m 0755 "$HERE/bin/$b" "$PREFIX/$b"
  done
  for c in "${COMPONENTS[@]}"; do
    install -m 0644 "$HERE/systemd/skiff-$c.service" "$UNITS/skiff-$c.service"
    # Settings a user edited are theirs: only a missing file is written,
    # and a variable a newer version added (the unit names it) is
    # appended to an existing one with its default.
    if [ ! -e "$ETC/$c.env" ]; then
      install -m 0600 "$HERE/systemd/$c.env" "$ETC/$c.env"
    else
      add_missing_vars "$HERE/systemd/$c.env" "$ETC/$c.env"
    fi
  done
  systemctl daemon-reload
  log "installed ${BINARIES[*]} into $PREFIX, the units into $UNITS, the settings into $ETC"
}

# add_missing_vars DEFAULTS FILE: appends to FILE each variable of
# DEFAULTS it does not assign, with its default.
add_missing_vars() {
  local line key
  while IFS= read -r line; do
    case $line in [A-Z]*=*) ;; *) continue ;; esac
    key=${line%%=*}
    grep -q "^$key=" "$2" && continue
    printf '# added by install.sh (%s), its default:\n%s\n' "$(date -u +%F)" "$line" >>"$2"
    log "$2: added $key (new in this version), its default"
  done <"$1"
}

# set_env FILE KEY VALUE: KEY's line of FILE becomes KEY="VALUE" (the
# files stay valid for systemd's EnvironmentFile and for a shell).
set_env() {
  local file=$1 key=$2 value=$3 tmp
  case $value in *'"'* | *\\* | *'$'* | *'`'*) die "$key: a value with \" \\ \$ or \` is not supported: $value" ;; esac
  tmp=$(mktemp "$file.XXXXXX")
  awk -v k="$key" -v line="$key=\"$value\"" '
    index($0, k "=") == 1 {print line; done=1; next} {print}
    END {if (!done) print line}' "$file" >"$tmp"
  chmod 0600 "$tmp"
  mv "$tmp" "$file"
}

first_address() { hostname -I 2>/dev/null | awk '{print $1}'; }

# healthz PORT: the apiserver's /healthz on 127.0.0.1:PORT answers 200
# (plain HTTP/1.0 through bash's /dev/tcp: no curl needed).
healthz() {
  local status
  status=$(exec 2>/dev/null 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET /healthz HTTP/1.0\r\n\r\n' >&3 && head -1 <&3) 2>/dev/null || return 1
  [[ $status == *" 200 "* ]]
}

# wait_apiserver PORT SECONDS: until this member serves (after a join: once
# its etcd member is promoted, so that the next member may join); its log
# otherwise.
wait_apiserver() {
  local deadline=$((SECONDS + $2))
  until healthz "$1"; do
    if [ $SECONDS -ge $deadline ]; then
      journalctl -u skiff-apiserver --no-pager -n 30 >&2 || true
      die "skiff-apiserver does not answer on 127.0.0.1:$1/healthz after $2 s (its log above)"
    fi
    sleep 1
  done
}

# ---------------------------------------------------------------- roles
control_plane() {
  local init=0 join="" hash="" address="" name="" apiservers="" sans=""
  while [ $# -gt 0 ]; do
    case $1 in
    --init) init=1 ;;
    --join) join=${2:?--join needs MEMBER:PORT}; shift ;;
    --ca-cert-hash) hash=${2:?--ca-cert-hash needs sha256:HEX}; shift ;;
    --address) address=${2:?}; shift ;;
    --name) name=${2:?}; shift ;;
    --apiservers) apiservers=${2:?}; shift ;;
    --tls-san) sans=${2:?}; shift ;;
    *) log "control-plane: unknown argument $1"; usage ;;
    esac
    shift
  done
  [ "$init" = 1 ] || [ -n "$join" ] || die "control-plane: give --init (the first member) or --join MEMBER:6443 --ca-cert-hash sha256:..."
  [ "$init" = 0 ] || [ -z "$join" ] || die "control-plane: --init or --join, not both"
  [ -z "$join" ] || [ -n "$hash" ] || die "control-plane --join: --ca-cert-hash is required (the first member's install printed it)"
  INIT=$init check control-plane
  address=${address:-$(first_address)}
  [ -n "$address" ] || die "control-plane: no address found: give --address IP"
  name=${name:-$(hostname)}
  apiservers=${apiservers:-127.0.0.1:6443}
  install_files

  local env=$ETC/apiserver.env token_file pki metrics
  # shellcheck disable=SC1090 # the installed settings
  token_file=$(. "$env" && echo "$SKIFF_CLUSTER_TOKEN_FILE")
  # shellcheck disable=SC1090
  pki=$(. "$env" && echo "$SKIFF_PKI_DIR")
  # shellcheck disable=SC1090
  metrics=$(. "$env" && echo "${SKIFF_METRICS_LISTEN##*:}")
  [ -n "$metrics" ] || die "$env: SKIFF_METRICS_LISTEN is empty: install.sh waits on its /healthz"
  if [ ! -s "$token_file" ]; then
    [ "$init" = 1 ] || die "control-plane --join: $token_file is missing: copy it from the first member (it holds the members' shared secret)"
    (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$token_file")
    log "made the members' token $token_file: copy it to every other member, mode 0600"
  fi
  chmod 0600 "$token_file"
  set_env "$env" SKIFF_ETCD_NAME "$name"
  set_env "$env" SKIFF_ETCD_PEER_URL "https://$address:2380"
  set_env "$env" SKIFF_TLS_SAN "$address${sans:+,$sans}"
  if [ "$init" = 1 ]; then
    set_env "$env" SKIFF_CLUSTER_ARGS "--cluster-init"
  else
    set_env "$env" SKIFF_CLUSTER_ARGS "--join=$join --ca-cert-hash=$hash"
  fi
  systemctl enable --now skiff-apiserver.service
  log "skiff-apiserver started (member $name, peer URL https://$address:2380); waiting until it serves"
  # The first member makes the CA at its first start; a joining one
  # receives it with its join, and serves once its etcd member votes.
  wait_apiserver "$metrics" 300
  [ -s "$pki/ca.key" ] || die "skiff-apiserver serves but $pki/ca.key is missing"

  # The controller-manager's and the scheduler's client certificates, from
  # the cluster CA on this machine.
  local c cn
  for c in controller-manager scheduler; do
    cn=system:kube-$c
    if [ ! -s "$ETC/pki/$c/$c.crt" ]; then
      skiff-apiserver certs issue --pki-dir "$pki" --cn "$cn" --out "$ETC/pki/$c" --name "$c" >/dev/null
      log "issued $ETC/pki/$c/$c.crt ($cn)"
    fi
    set_env "$ETC/$c.env" SKIFF_SERVER "$apiservers"
  done
  systemctl enable --now skiff-controller-manager.service skiff-scheduler.service
  log "skiff-controller-manager and skiff-scheduler started (apiservers $apiservers)"
  if [ "$init" = 1 ]; then
    skiff-apiserver certs hash --pki-dir "$pki" >"$ETC/ca-cert-hash"
    log "the first member serves. The CA's hash is in $ETC/ca-cert-hash; join the others with:"
    log "  ./install.sh control-plane --join $address:6443 --ca-cert-hash $(cat "$ETC/ca-cert-hash")"
  fi
}

node() {
  local join="" token="" hash="" server="" name="" ip="" backend=""
  while [ $# -gt 0 ]; do
    case $1 in
    --join) join=${2:?--join needs ADDR:PORT}; shift ;;
    --token) token=${2:?}; shift ;;
    --ca-cert-hash) hash=${2:?}; shift ;;
    --server) server=${2:?}; shift ;;
    --node-name) name=${2:?}; shift ;;
    --node-ip) ip=${2:?}; shift ;;
    --pod-network-backend) backend=${2:?}; shift ;;
    *) log "node: unknown argument $1"; usage ;;
    esac
    shift
  done
  if [ -z "$join" ] || [ -z "$token" ] || [ -z "$hash" ]; then
    die "node: give --join ADDR:6443 --token TOKEN --ca-cert-hash sha256:... (skiff-apiserver token create --print-join-command prints them)"
  fi
  check node
  # Pods on other nodes are reached through this machine: it forwards.
  if [ "$(cat /proc/sys/net/ipv4/ip_forward)" != 1 ]; then
    echo net.ipv4.ip_forward=1 >/etc/sysctl.d/90-skiff.conf
    sysctl -q -w net.ipv4.ip_forward=1 || die "cannot turn on net.ipv4.ip_forward (pods on other nodes would be unreachable)"
    log "turned on net.ipv4.ip_forward (/etc/sysctl.d/90-skiff.conf)"
  fi
  systemctl is-active -q containerd.service || systemctl enable --now containerd.service ||
    die "containerd.service does not start: journalctl -u containerd"
  install_files
  local env=$ETC/node-agent.env
  set_env "$env" SKIFF_JOIN "$join"
  set_env "$env" SKIFF_TOKEN "$token"
  set_env "$env" SKIFF_CA_CERT_HASH "$hash"
  set_env "$env" SKIFF_SERVER "${server:-$join}"
  set_env "$env" SKIFF_NODE_NAME "${name:-$(hostname)}"
  [ -z "$ip" ] || set_env "$env" SKIFF_NODE_IP "$ip"
  [ -z "$backend" ] || set_env "$env" SKIFF_POD_NETWORK_BACKEND "$backend"
  systemctl enable --now skiff-node-agent.service
  log "skiff-node-agent started: node ${name:-$(hostname)} joins through $join"
}

case "${1:-}" in
"") check files; install_files ;;
control-plane) shift; control_plane "$@" ;;
node) shift; node "$@" ;;
-h | --help | help) usage ;;
*) log "unknown role $1"; usage ;;
esac
