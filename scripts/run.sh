#!/usr/bin/env bash
# The main job: installs what is missing, builds, runs the order-blacklist demo
# through the CLI, then starts redbloomd on the embedded file store
# (file:./redbloom-data) in the foreground. Ctrl-C (SIGINT) or SIGTERM stops it
# gracefully.
# Environment: REDBLOOM_STORE (store URL), REDBLOOMD_LISTEN (default 127.0.0.1:8080),
# REDBLOOMD_TOKEN (optional bearer token).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/build.sh build-run -DREDBLOOM_BUILD_TESTS=OFF -DREDBLOOM_BUILD_BENCH=OFF
bash scripts/demo.sh build-run

daemon=build-run/server/redbloomd
if [ ! -x "$daemon" ]; then
  echo "run: $daemon was not built" >&2
  exit 1
fi
listen="${REDBLOOMD_LISTEN:-127.0.0.1:8080}"
store="${REDBLOOM_STORE:-file:./redbloom-data}"
auth=""
[ -n "${REDBLOOMD_TOKEN:-}" ] && auth=" -H \"Authorization: Bearer \$REDBLOOMD_TOKEN\""
json="-H 'Content-Type: application/json'"
cat <<EOT

== starting redbloomd on http://$listen (store $store); try, from another terminal:
  curl -s$auth $json -X PUT http://$listen/v1/filters/orders -d '{"capacity":1000000,"error_rate":0.01}'
  curl -s$auth $json -X POST http://$listen/v1/filters/orders/items -d '{"items":["ORD-1","ORD-2"]}'
  curl -s$auth $json -X POST http://$listen/v1/filters/orders/check -d '{"items":["ORD-1","ORD-404"]}'
  curl -s$auth http://$listen/v1/filters/orders/items/ORD-1
  curl -s$auth http://$listen/v1/filters/orders
  curl -s$auth http://$listen/metrics
Stop it with Ctrl-C (or SIGTERM): in-flight requests finish, bits are flushed.
EOT
exec "$daemon" --listen "$listen" --store "$store"
