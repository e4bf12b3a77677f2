#!/usr/bin/env bash
# The Redis Cluster benchmark (issue #12): one redis-server against a Redis
# Cluster of $MASTERS masters (default 3), same load, same run; the cluster
# with one unsharded filter and with filters of $SHARDS shards (default: as
# many as masters, and four times that).
#
#   scripts/bench-cluster.sh                        # 3 reps, 4 client threads
#   MASTERS=3 SHARDS=3,12 THREADS=4 REPS=5 ITEMS=400000 scripts/bench-cluster.sh
#
# Every server runs on loopback on a free port, without persistence, and is
# stopped on exit. On a host with fewer cores than masters + 1 the items/s
# are bound by the host; read the server CPU per item and the ceiling column
# (see docs/scaling.md).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BENCH_BUILD_DIR:-build-bench-cluster}

source scripts/lib/bench.sh
source scripts/lib/redis.sh
require_tools bench-cluster cmake ninja redis-server redis-cli
release_build "$dir" cluster_bench -DREDBLOOM_BUILD_SERVER=OFF -DREDBLOOM_BUILD_CLI=OFF
start_redis single
single_port=$started_port
masters=${MASTERS:-3}
start_cluster cluster "$masters"
echo "== $(redis-server --version | cut -d' ' -f1-3), loopback, $(nproc) cores"
"$dir/bench/cluster_bench" --single "redis://127.0.0.1:$single_port" \
  --single-node "127.0.0.1:$single_port" --cluster "$cluster_url" --nodes "$cluster_nodes" \
  --shards "${SHARDS:-$masters,$((masters * 4))}" --threads "${THREADS:-4}" --items "${ITEMS:-400000}" --reps "${REPS:-3}"
