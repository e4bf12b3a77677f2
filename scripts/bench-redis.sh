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

tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# A port nothing listens on (bash's /dev/tcp connects if something does).
free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
}

# start_redis NAME EXTRA_ARGS... : starts a server and sets $started_port. (Not
# a $(...) function: the server would inherit the substitution's pipe, and
# bash would wait for it to exit.)
start_redis() {
  local name=$1 port
  shift
  port=$(free_port)
  mkdir -p "$tmp/$name"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$tmp/$name" \
    --daemonize no --logfile "$tmp/$name/redis.log" "$@" </dev/null >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do
    if redis-cli -p "$port" PING 2>/dev/null | grep -q PONG; then
      started_port=$port
      return
    fi
    sleep 0.05
  done
  echo "bench-redis: redis-server ($name) did not start; see its log:" >&2
  cat "$tmp/$name/redis.log" >&2
  exit 1
}

start_redis plain
args=(--url "redis://127.0.0.1:$started_port" --reps "$reps" --scale "$scale")
if [ -n "${REDISBLOOM_MODULE:-}" ]; then
  start_redis module --loadmodule "$REDISBLOOM_MODULE"
  args+=(--module-url "redis://127.0.0.1:$started_port")
fi

echo "== $(redis-server --version | cut -d' ' -f1-3), loopback, $(nproc) cores"
"$dir/bench/redis_bench" "${args[@]}"
