#!/usr/bin/env bash
# The Redis benchmark (issue #3): redbloom's Redis store with batches of 1, 100
# and 1000 against the seed's way (k blocking SETBIT/GETBIT round trips per
# item) and pipelined SETBIT/GETBIT, all on one redis-server in one run.
#
#   scripts/bench-redis.sh                          # 3 repetitions (about a minute)
#   REPS=5 scripts/bench-redis.sh
#   REDISBLOOM_MODULE=/path/redisbloom.so scripts/bench-redis.sh   # adds BF.MADD/BF.MEXISTS
#   TLS=1 scripts/bench-redis.sh                    # adds redbloom over TLS (same server)
#   scripts/bench-redis.sh --windows-only           # only the window filters' checks
#   BENCH_BUILD_DIR=/tmp/bb scripts/bench-redis.sh
#
# The script starts its own redis-server(s) on free loopback ports, with no
# persistence, and stops them on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${BENCH_BUILD_DIR:-build-bench-redis}
reps=${REPS:-3}
scale=${SCALE:-1}

source scripts/lib/bench.sh
source scripts/lib/redis.sh
redis_bench_setup bench-redis "$dir" redis_bench
"$dir/bench/redis_bench" "${bench_redis_args[@]}" --reps "$reps" --scale "$scale" "$@"
