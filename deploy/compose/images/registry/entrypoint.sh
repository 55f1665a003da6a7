#!/bin/sh
# Two registries over one storage: :5000 open (the workload images),
# :5001 behind basic auth (imagePullSecrets). The container stops when
# either stops.
set -e
/usr/bin/docker-registry serve /etc/docker/registry/config-auth.yml &
auth=$!
/usr/bin/docker-registry serve /etc/docker/registry/config.yml &
open=$!
trap 'kill $auth $open 2>/dev/null' TERM INT
# wait -n is not POSIX: poll both children.
while kill -0 $auth 2>/dev/null && kill -0 $open 2>/dev/null; do
  sleep 2
done
kill $auth $open 2>/dev/null || true
exit 1
