#!/usr/bin/env bash
# The Redis benchmark (issue #3): redbloom's Redis store with batches of 1, 100
# and 1000 against the seed's way (k blocking SETBIT/GETBIT round trips per
# item) and pipelined SETBIT/GETBIT, all on one redis-server in one run.
#
#   scripts/bench-redis.sh                          # 3 repetitions (about a minute)
#   REPS=5 scripts/bench-redis.sh
#   REDISBLOOM_MODULE=/path/redisbloom.so scripts/bench-redis.sh   # adds BF.MADD/BF.MEXISTS
#   BENCH_BUILD_DIR=/tmp/bb scripts/bench-redis.sh
#
# The script starts its own redis-server(s) on free loopback ports, with no
# persistence, and stops them on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${BENCH_BUILD_DIR:-build-bench-redis}
reps=${REPS:-3}
scale=${SCALE:-1}

for tool in cmake ninja redis-server redis-cli; do
  if ! command -v "$tool" >/dev/null; then
    echo "bench-redis: $tool is missing; run scripts/install-deps.sh" >&2
    exit 1
  fi
done

echo "== build (Release) in $dir"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDBLOOM_BUILD_TESTS=OFF \
  -DREDBLOOM_BUILD_SERVER=OFF -DREDBLOOM_BUILD_CLI=OFF >/dev/null
ninja -C "$dir" redis_bench

source scripts/lib/redis.sh

start_redis plain
args=(--url "redis://127.0.0.1:$started_port" --reps "$reps" --scale "$scale")
if [ -n "${REDISBLOOM_MODULE:-}" ]; then
  start_redis module --loadmodule "$REDISBLOOM_MODULE"
  args+=(--module-url "redis://127.0.0.1:$started_port")
fi

echo "== $(redis-server --version | cut -d' ' -f1-3), loopback, $(nproc) cores"
"$dir/bench/redis_bench" "${args[@]}"
