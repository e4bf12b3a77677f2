#!/usr/bin/env bash
# The bulk-load benchmark (issue #5): `load` against batched `add` into one
# redis-server, at 1e6 and 1e7 items, plus RedisBloom's BF.MADD when
# REDISBLOOM_MODULE names its module file.
#
#   scripts/bench-bulk.sh                     # sizes 1e6,1e7, 3 repetitions (a few minutes)
#   SIZES=1e6 REPS=5 scripts/bench-bulk.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BENCH_BUILD_DIR:-build-bench-bulk}

echo "== build (Release) in $dir"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDBLOOM_BUILD_TESTS=OFF \
  -DREDBLOOM_BUILD_SERVER=OFF -DREDBLOOM_BUILD_CLI=OFF >/dev/null
ninja -C "$dir" bulk_bench

source scripts/lib/redis.sh
start_redis plain
args=(--url "redis://127.0.0.1:$started_port" --reps "${REPS:-3}" --sizes "${SIZES:-1e6,1e7}")
if [ -n "${REDISBLOOM_MODULE:-}" ]; then
  start_redis module --loadmodule "$REDISBLOOM_MODULE"
  args+=(--module-url "redis://127.0.0.1:$started_port")
fi
echo "== $(redis-server --version | cut -d' ' -f1-3), loopback, $(nproc) cores"
"$dir/bench/bulk_bench" "${args[@]}"
