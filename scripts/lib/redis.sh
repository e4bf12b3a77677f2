# Shell helpers for the benchmark scripts: start throwaway redis-servers on
# free loopback ports and stop them on exit. Source it; it sets a trap.
#   start_redis NAME [redis-server args...]   -> sets $started_port
redis_tmp=$(mktemp -d)
redis_pids=()
redis_cleanup() {
  for pid in "${redis_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${redis_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$redis_tmp"
}
trap redis_cleanup EXIT

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

start_redis() {
  local name=$1 port
  shift
  port=$(free_port)
  mkdir -p "$redis_tmp/$name"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$redis_tmp/$name" \
    --daemonize no --logfile "$redis_tmp/$name/redis.log" "$@" </dev/null >/dev/null 2>&1 &
  redis_pids+=($!)
  for _ in $(seq 200); do
    if redis-cli -p "$port" PING 2>/dev/null | grep -q PONG; then
      started_port=$port
      return
    fi
    sleep 0.05
  done
  echo "redis-server ($name) did not start; see its log:" >&2
  cat "$redis_tmp/$name/redis.log" >&2
  exit 1
}
