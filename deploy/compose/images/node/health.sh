#!/usr/bin/env bash
# Healthcheck of a node container: containerd answers, and so does the
# node agent's /healthz when the agent is in the image.
set -euo pipefail
ctr version >/dev/null
if command -v skiff-node-agent >/dev/null; then
  skiff-probe "http://127.0.0.1:${SKIFF_AGENT_METRICS_PORT:-10248}/healthz"
fi
