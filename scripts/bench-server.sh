#!/usr/bin/env bash
# The redbloomd benchmark (issue #4): wrk against the service and the same
# work through the library, in one run, printed as one table with ratios.
#
#   scripts/bench-server.sh                  # file store, then Redis if redis-server exists
#   STORES=file scripts/bench-server.sh      # only the file store
#   REPS=5 DURATION=10 scripts/bench-server.sh
#
# Workloads, on a 1% filter of capacity 1e6 holding PRELOAD (1e6) items ORD-i:
#   * single-item checks: GET /v1/filters/bench/items/{item}, half added
#     items, half never added (wrk Lua script), wrk --latency for p50/p99;
#   * batch checks: POST /v1/filters/bench/check with 1000 items (500 added,
#     500 never added), the same body every time;
#   * the same batch through BloomFilter::ContainsMany (library, one thread)
#     and through the service's handler without HTTP (bench/server_bench.cc).
# Each measurement is repeated REPS times, interleaved, and the table shows
# medians: the machine is shared and noisy, and interleaving spreads the
# noise over every column alike.
#
# wrk and redbloomd share the machine's cores, so the HTTP figures include
# the cost of the client, as they would on a sidecar deployment.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${BENCH_BUILD_DIR:-build-bench-server}
reps=${REPS:-3}
duration=${DURATION:-5}
conns=${CONNECTIONS:-4}
preload=${PRELOAD:-1000000}
stores=${STORES:-file redis}
threads=${SERVER_THREADS:-8}

source scripts/lib/bench.sh
require_tools bench-server cmake ninja wrk python3
release_build "$dir" "redbloomd server_bench" -DREDBLOOM_BUILD_CLI=OFF -DREDBLOOM_BUILD_SERVER=ON \
  >/dev/null
daemon=$dir/server/redbloomd
driver=$dir/bench/server_bench

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
on_exit cleanup

cat >"$tmp/batch.lua" <<'EOF'
local f = assert(io.open(os.getenv("BENCH_BODY"), "r"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
EOF
cat >"$tmp/single.lua" <<'EOF'
local n = 0
local preload = tonumber(os.getenv("BENCH_PRELOAD"))
request = function()
  n = n + 1
  local item
  if n % 2 == 0 then item = "ORD-" .. ((n * 7919) % preload) else item = "NEW-" .. n end
  return wrk.format("GET", "/v1/filters/bench/items/" .. item)
end
EOF

# wrk output -> "requests_per_sec p50_us p99_us errors"
parse_wrk() {
  awk '
    function us(v) {
      if (v ~ /us$/) return v + 0
      if (v ~ /ms$/) return v * 1000
      if (v ~ /s$/) return v * 1000000
      return v
    }
    /^ +50%/ { p50 = us($2) }
    /^ +99%/ { p99 = us($2) }
    /Requests\/sec:/ { rps = $2 }
    /Non-2xx/ { err += $NF }
    /Socket errors/ { err += 1 }
    END { printf "%s %.0f %.0f %d\n", rps, p50, p99, err + 0 }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

hz=$(getconf CLK_TCK)
# utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# run_store LABEL URL CONFIG_JSON: appends rows to $tmp/rows.tsv
run_store() {
  local label=$1 url=$2 config=$3
  echo "== $label: preload $preload items into $url"
  "$driver" setup --store "$url" --preload "$preload" --body-out "$tmp/body.json"
  echo "$config" >"$tmp/redbloomd.json"
  "$daemon" --listen 127.0.0.1:0 --store "$url" --config "$tmp/redbloomd.json" \
    2>"$tmp/redbloomd.log" &
  local pid=$!
  pids+=("$pid")
  local port=""
  for _ in $(seq 100); do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$tmp/redbloomd.log")
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || { cat "$tmp/redbloomd.log" >&2; exit 1; }
  local base=http://127.0.0.1:$port
  export BENCH_BODY=$tmp/body.json BENCH_PRELOAD=$preload
  wrk -t1 -c"$conns" -d1s -s "$tmp/batch.lua" "$base/v1/filters/bench/check" >/dev/null  # warm-up

  : >"$tmp/m.tsv"
  : >"$tmp/cpu.txt"
  for r in $(seq "$reps"); do
    echo "   run $r/$reps"
    read -r rps p50 p99 err < <(wrk -t1 -c"$conns" -d"${duration}s" --latency \
      -s "$tmp/single.lua" "$base" | parse_wrk)
    [ "$err" = 0 ] || { echo "bench-server: $err failed single checks" >&2; exit 1; }
    printf 'single\thttp_c%s\t%s\t%s\t%s\n' "$conns" "$rps" "$p50" "$p99" >>"$tmp/m.tsv"
    read -r rps p50 p99 err < <(wrk -t1 -c1 -d"${duration}s" --latency \
      -s "$tmp/batch.lua" "$base/v1/filters/bench/check" | parse_wrk)
    [ "$err" = 0 ] || { echo "bench-server: $err failed batches" >&2; exit 1; }
    printf 'batch\thttp_c1\t%s\t%s\t%s\n' "$rps" "$p50" "$p99" >>"$tmp/m.tsv"
    local cpu0 cpu1
    cpu0=$(cpu_ticks "$pid")
    read -r rps p50 p99 err < <(wrk -t1 -c"$conns" -d"${duration}s" --latency \
      -s "$tmp/batch.lua" "$base/v1/filters/bench/check" | parse_wrk)
    cpu1=$(cpu_ticks "$pid")
    [ "$err" = 0 ] || { echo "bench-server: $err failed batches" >&2; exit 1; }
    printf 'batch\thttp_c%s\t%s\t%s\t%s\n' "$conns" "$rps" "$p50" "$p99" >>"$tmp/m.tsv"
    # redbloomd's own CPU time per batch (user + system), without wrk's.
    awk -v d="$((cpu1 - cpu0))" -v hz="$hz" -v rps="$rps" -v s="$duration" \
      'BEGIN { printf "%.1f\n", d / hz * 1e6 / (rps * s) }' >>"$tmp/cpu.txt"
    "$driver" measure --store "$url" --seconds "$duration" |
      awk -F'\t' '{ split($1, w, "_"); printf "%s\t%s\t%s\t%s\t%s\n", w[2], w[1], $3, $4, $5 }' \
        >>"$tmp/m.tsv"
  done
  kill -TERM "$pid"
  wait "$pid" || true

  # The server's CPU per batch against the library's time per batch: the
  # overhead without the client's share of the cores.
  local cpu lib_us
  cpu=$(median <"$tmp/cpu.txt")
  lib_us=$(awk -F'\t' '$1 == "batch" && $2 == "library"' "$tmp/m.tsv" | cut -f3 | median |
    awk '{ printf "%.1f", 1e6 / $1 }')
  printf '%s\t%s\t%s\t%s\n' "$label" "$cpu" "$lib_us" \
    "$(awk -v a="$cpu" -v b="$lib_us" 'BEGIN { printf "%.2f", a / b }')" >>"$tmp/cpu_rows.tsv"

  # Medians per (workload, path); ratio = library ops/s / path ops/s.
  for workload in single batch; do
    local lib
    lib=$(awk -F'\t' -v w="$workload" '$1 == w && $2 == "library"' "$tmp/m.tsv" | cut -f3 | median)
    for path in library service http_c1 "http_c$conns"; do
      local rows
      rows=$(awk -F'\t' -v w="$workload" -v p="$path" '$1 == w && $2 == p' "$tmp/m.tsv")
      [ -n "$rows" ] || continue
      local ops p50 p99
      ops=$(cut -f3 <<<"$rows" | median)
      p50=$(cut -f4 <<<"$rows" | median)
      p99=$(cut -f5 <<<"$rows" | median)
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$workload" "$path" "$ops" "$p50" "$p99" \
        "$(awk -v a="$lib" -v b="$ops" 'BEGIN { printf "%.2f", a / b }')" >>"$tmp/rows.tsv"
    done
  done
}

base_config='"access_log":"'$tmp'/access.log","threads":'$threads
: >"$tmp/rows.tsv"
: >"$tmp/cpu_rows.tsv"
for store in $stores; do
  case $store in
    file)
      run_store "file" "file:$tmp/store" "{$base_config}"
      # The same with the stored config re-read once a second instead of on
      # every request (see docs/http-api.md, filter_revalidate_ms).
      run_store "file/reval1s" "file:$tmp/store" "{$base_config,\"filter_revalidate_ms\":1000}"
      ;;
    redis)
      if ! command -v redis-server >/dev/null; then
        echo "bench-server: redis-server is not installed; skipping the Redis rows" >&2
        continue
      fi
      source scripts/lib/redis.sh
      start_redis bench-server
      run_store "redis" "redis://127.0.0.1:$started_port" "{$base_config}"
      ;;
  esac
done

echo
echo "== redbloomd vs library: medians of $reps runs of ${duration}s, $(nproc) cores shared with wrk"
echo "   1% filter, capacity 1e6, $preload items; batch = 1000 items (500 added, 500 not)"
echo "   ratio = library ops/s / this path's ops/s (time per op as a multiple of the library's)"
awk -F'\t' -v conns="$conns" '
  BEGIN {
    name["library"] = "library, 1 thread"
    name["service"] = "service handler, no HTTP"
    name["http_c1"] = "redbloomd HTTP, wrk -c1"
    name["http_c" conns] = "redbloomd HTTP, wrk -c" conns
    printf "%-13s %-7s %-26s %12s %9s %9s %7s\n", "store", "work", "path", "ops/s", "p50 us", "p99 us", "ratio"
  }
  {
    printf "%-13s %-7s %-26s %12.0f %9.1f %9.1f %7s\n", $1, $2, name[$3], $4, $5, $6, $7
    if ($2 == "batch" && $3 == "http_c" conns) verdict[$1] = $7
  }
  END {
    print ""
    for (s in verdict) {
      printf "target (HTTP batches within 2x of the library), %s: %sx, %s\n", s, verdict[s],
             (verdict[s] < 2 ? "met" : "NOT met")
    }
  }' "$tmp/rows.tsv"
echo
echo "== redbloomd CPU per 1000-item batch (user+system, wrk -c$conns run) vs the library's time per batch"
awk -F'\t' '
  BEGIN { printf "%-13s %18s %18s %7s\n", "store", "redbloomd CPU us", "library us", "ratio" }
  { printf "%-13s %18s %18s %7s\n", $1, $2, $3, $4 }' "$tmp/cpu_rows.tsv"
