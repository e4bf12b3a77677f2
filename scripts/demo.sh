#!/usr/bin/env bash
# The blog posts' order blacklist, through the CLI on the embedded file store.
# Usage: scripts/demo.sh [BUILD_DIR]   (store: $REDBLOOM_STORE or file:./redbloom-data)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build}/redbloom"
store="${REDBLOOM_STORE:-file:./redbloom-data}"
rb() { echo "\$ redbloom $*" >&2; "$bin" --store "$store" "$@"; }

echo "== order blacklist demo on $store"
# The Portuguese post: 1000 order ids at 1%, shared with its Java helper, so
# strategy seed and the utf8 funnel.
rb create blacklist:pedidos --capacity 1000 --error 0.01 --strategy seed --encoding utf8
rb add blacklist:pedidos ORD-99821 ORD-99822 ORD-99823
set +e
rb check blacklist:pedidos ORD-99821 ORD-12345
echo "(exit $?: 1 means at least one order is surely not blacklisted)" >&2
set -e
seq -f 'ORD-%g' 1 800 | rb add blacklist:pedidos --quiet --file -
rb info blacklist:pedidos
