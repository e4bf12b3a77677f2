# Shell helpers for the benchmark scripts: throwaway redis-servers on free
# loopback ports, stopped when the script exits. Source scripts/lib/bench.sh
# first.
#   start_redis NAME [redis-server args...]   -> sets $started_port
#   start_bench_servers                       -> sets bench_redis_args (--url, and
#       --module-url when $REDISBLOOM_MODULE names a RedisBloom module file, and
#       --tls-url when $TLS is 1: a TLS port on the same server, with a CA and
#       certificate made by openssl in the temporary directory)
#   redis_bench_setup NAME DIR TARGET         -> checks the tools, builds TARGET (the
#       library only, Release) in DIR, then start_bench_servers
redis_tmp=$(mktemp -d)
redis_pids=()
redis_cleanup() {
  for pid in "${redis_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${redis_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$redis_tmp"
}
on_exit redis_cleanup

start_redis() {
  local name=$1 port=${redis_port:-}
  shift
  [ -n "$port" ] || port=$(free_port)
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

# A throwaway CA and a server certificate for 127.0.0.1 in $redis_tmp/tls.
make_bench_certs() {
  local d=$redis_tmp/tls
  mkdir -p "$d"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -keyout "$d/ca.key" -out "$d/ca.crt" -subj /CN=bench-ca 2>/dev/null
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$d/server.key" -out "$d/server.csr" -subj /CN=bench 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\n' >"$d/ext"
  openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -set_serial 1 \
    -days 1 -out "$d/server.crt" -extfile "$d/ext" 2>/dev/null
}

start_bench_servers() {
  if [ "${TLS:-0}" = 1 ]; then
    require_tools bench openssl
    make_bench_certs
    local tls_port
    tls_port=$(free_port)
    start_redis plain --tls-port "$tls_port" --tls-cert-file "$redis_tmp/tls/server.crt" \
      --tls-key-file "$redis_tmp/tls/server.key" --tls-ca-cert-file "$redis_tmp/tls/ca.crt" \
      --tls-auth-clients no
    bench_redis_args=(--url "redis://127.0.0.1:$started_port"
      --tls-url "rediss://127.0.0.1:$tls_port?cacert=$redis_tmp/tls/ca.crt")
  else
    start_redis plain
    bench_redis_args=(--url "redis://127.0.0.1:$started_port")
  fi
  if [ -n "${REDISBLOOM_MODULE:-}" ]; then
    start_redis module --loadmodule "$REDISBLOOM_MODULE"
    bench_redis_args+=(--module-url "redis://127.0.0.1:$started_port")
  fi
  echo "== $(redis-server --version | cut -d' ' -f1-3), loopback, $(nproc) cores"
}

redis_bench_setup() {
  local name=$1 dir=$2 target=$3
  require_tools "$name" cmake ninja redis-server redis-cli
  release_build "$dir" "$target" -DREDBLOOM_BUILD_SERVER=OFF -DREDBLOOM_BUILD_CLI=OFF
  start_bench_servers
}

# start_cluster NAME MASTERS  -> sets $cluster_url (redis-cluster://, two seeds)
#   and $cluster_nodes (host:port,... of every master). Masters only, no
#   replicas, no persistence; each node is stopped on exit like the others.
start_cluster() {
  local name=$1 masters=$2 i ports=() addrs=()
  local port bus
  for i in $(seq "$masters"); do
    # Neither port listens until the node starts, so free_port alone could
    # hand out the same one twice.
    port=$(free_port)
    bus=$(free_port)
    while [ "$bus" = "$port" ]; do bus=$(free_port); done
    redis_port=$port start_redis "$name-$i" --cluster-enabled yes --cluster-config-file nodes.conf \
      --cluster-port "$bus"
    ports+=("$started_port")
    addrs+=("127.0.0.1:$started_port")
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$redis_tmp/$name.create" 2>&1 || {
    cat "$redis_tmp/$name.create" >&2
    exit 1
  }
  for _ in $(seq 300); do
    if redis-cli -p "${ports[0]}" CLUSTER INFO | grep -q cluster_state:ok &&
      redis-cli -p "${ports[-1]}" CLUSTER INFO | grep -q cluster_state:ok; then
      cluster_url="redis-cluster://${addrs[0]},${addrs[1]:-${addrs[0]}}"
      cluster_nodes=$(IFS=,; echo "${addrs[*]}")
      return
    fi
    sleep 0.1
  done
  echo "cluster $name did not reach cluster_state:ok" >&2
  exit 1
}
