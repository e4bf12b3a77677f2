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

source scripts/lib/bench.sh
source scripts/lib/redis.sh
redis_bench_setup bench-bulk "$dir" bulk_bench
"$dir/bench/bulk_bench" "${bench_redis_args[@]}" --reps "${REPS:-3}" --sizes "${SIZES:-1e6,1e7}"
