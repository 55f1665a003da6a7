#!/bin/sh
# The cluster's credentials, made once into the "pki" volume by the pki
# service before anything else starts (kept across `make down`/`make up`;
# `make down V=1` deletes them with the volume):
#   /pki/ca/          the cluster CA, the apiserver's serving and client
#                     certificates and the service-account key (the
#                     apiserver's --pki-dir)
#   /pki/<component>/ one client certificate per component, its key and
#                     ca.crt: scheduler (system:kube-scheduler),
#                     controller-manager (system:kube-controller-manager),
#                     node1, node2 (system:node:<node> in system:nodes, also
#                     serving their NodeAgent service) and admin (in
#                     system:masters, for skiffctl on the host).
#   $SKIFF_CLUSTER_TOKEN_FILE  (the HA profile, docker-compose.ha.yml) the
#                     control-plane members' shared secret: the first answers
#                     joins that present it, the others present it; random,
#                     made once, never printed.
set -eu
pki=${SKIFF_PKI:-/pki}
sans=${SKIFF_APISERVER_SANS:-apiserver,localhost,127.0.0.1}
skiff-apiserver certs init --pki-dir "$pki/ca" --tls-san "$sans"

issue() {
  name=$1
  shift
  if [ -s "$pki/$name/$name.crt" ] && [ -s "$pki/$name/$name.key" ]; then
    return 0
  fi
  skiff-apiserver certs issue --pki-dir "$pki/ca" --out "$pki/$name" --name "$name" "$@"
  echo "pki: issued $pki/$name/$name.crt ($*)"
}

issue scheduler --cn system:kube-scheduler
issue controller-manager --cn system:kube-controller-manager
for node in ${SKIFF_NODES:-node1 node2}; do
  issue "$node" --cn "system:node:$node" --o system:nodes --san "$node"
done
issue admin --cn skiff-admin --o system:masters
if [ -n "${SKIFF_CLUSTER_TOKEN_FILE:-}" ] && [ ! -s "$SKIFF_CLUSTER_TOKEN_FILE" ]; then
  mkdir -p "$(dirname "$SKIFF_CLUSTER_TOKEN_FILE")"
  (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$SKIFF_CLUSTER_TOKEN_FILE")
  echo "pki: made the members' token in $SKIFF_CLUSTER_TOKEN_FILE"
fi
# The components run as root in their containers; the admin credentials are
# copied to the host by scripts/compose.sh.
echo "pki: ready"
