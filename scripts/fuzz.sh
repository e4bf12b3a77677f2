#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang with ASan + UBSan, build-fuzz/)
# and runs each for FUZZ_SECONDS (default 60) from seeds made here by the CLI
# of the same build: the HTTP items body (against nlohmann::json), HTTP
# request heads, PUT bodies through redbloomd's item routes, dump and
# Guava-file imports, file headers, stored configs, Redis URLs, Redis
# replies (read from a redis-server it starts on 127.0.0.1), and the readers
# of the numbers, durations, byte sizes and addresses in flags and configs.
# Usage: scripts/fuzz.sh [TARGET...]   (default: every target)
# A failure leaves its input in build-fuzz/fuzz/TARGET-crash-* (or -oom-,
# -leak-); replay it with build-fuzz/fuzz/TARGET FILE, and add it to the unit
# tests once fixed.
# Corpora grow in build-fuzz/corpus/TARGET and are reused by the next run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}

bash scripts/install-deps.sh

echo "== build (clang, libFuzzer, ASan + UBSan)"
CC=clang CXX=clang++ bash scripts/build.sh build-fuzz -DREDBLOOM_BUILD_FUZZ=ON \
  -DREDBLOOM_BUILD_TESTS=OFF -DREDBLOOM_BUILD_BENCH=OFF \
  -DREDBLOOM_SANITIZE=fuzzer-no-link,address,undefined -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1"

corpus=$PWD/build-fuzz/corpus
seeds=$(mktemp -d)
redis_pid=
cleanup() {
  if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null; fi
  rm -rf "$seeds"
}
trap cleanup EXIT
mkdir -p "$corpus"/{items_body_fuzz,request_head_fuzz,import_fuzz,file_header_fuzz,config_fuzz,redis_url_fuzz,reply_fuzz,decimal_fuzz,put_filter_fuzz,numbers_fuzz}

echo "== seeds"
# Each seed starts with the byte its target reads as flags (see its source).
printf '\x01{"items":["a","\\u00e9\\n",1,-2]}' >"$corpus/items_body_fuzz/seed-ints"
printf '\x00 {"items" : [ "ORD-99821" , "" ] }' >"$corpus/items_body_fuzz/seed-strings"
# At the harness's limits (4 items of at most 8 bytes), and one past each.
printf '\x00{"items":["12345678","b","c","d"]}' >"$corpus/items_body_fuzz/seed-limits"
printf '\x00{"items":["123456789","b","c","d","e"]}' >"$corpus/items_body_fuzz/seed-past-limits"
# Heads (the first byte: how many bytes an earlier request left before it).
printf '\x00POST /v1/filters/a/items HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\nExpect: 100-continue\r\nAuthorization: Bearer a%%41\r\nAccept-Encoding: gzip;q=0.5, br\r\nConnection: Keep-Alive, close\r\nRange: bytes=1-\r\n\r\n{"items":[]}' \
  >"$corpus/request_head_fuzz/seed-post"
printf '\x04\r\n\r\nGET http://h:1?x=1 HTTP/1.0\r\nContent-Length: 3\r\nContent-Length: 03\r\nTransfer-Encoding: chunke%%64\r\n fold\r\n\r\n' \
  >"$corpus/request_head_fuzz/seed-odd"
for url in 'redis://user:pw@127.0.0.1:6379/2?timeout=2s' 'rediss://[::1]:6380?keys=jdk' \
  'redis-cluster://127.0.0.1:7000,127.0.0.1:7001' 'redis-sentinel://127.0.0.1:26379/mymaster' \
  'redis+unix://app:p%40w@/run/redis/redis%20x.sock?db=2&keys=jdk'; do
  printf '%s' "$url" >"$corpus/redis_url_fuzz/seed-$(printf '%s' "$url" | md5sum | cut -c1-8)"
done
cli=build-fuzz/redbloom
store="file:$seeds/store"
export ASAN_OPTIONS=detect_leaks=0
quiet() { local out; out=$("$@" 2>&1) || { echo "$out" >&2; return 1; }; }
quiet "$cli" --store "$store" create plain --capacity 100 --error 0.01 --strategy guava64
quiet "$cli" --store "$store" add plain a b c
quiet "$cli" --store "$store" create counting --capacity 50 --error 0.05 --counting
quiet "$cli" --store "$store" add counting x y
quiet "$cli" --store "$store" create scaling --capacity 10 --error 0.01 --scaling
quiet "$cli" --store "$store" add scaling 1 2 3 4 5 6 7 8 9 10 11 12
for name in plain counting; do
  quiet "$cli" --store "$store" export "$name" --format redbloom --file "$seeds/$name.dump"
  # 0x02: the harness sets the CRCs right, so mutations reach the fields.
  { printf '\x00'; cat "$seeds/$name.dump"; } >"$corpus/import_fuzz/seed-$name"
  { printf '\x02'; cat "$seeds/$name.dump"; } >"$corpus/import_fuzz/seed-$name-crc"
done
quiet "$cli" --store "$store" export plain --format guava --file "$seeds/plain.guava"
{ printf '\x01'; cat "$seeds/plain.guava"; } >"$corpus/import_fuzz/seed-guava"
for file in "$seeds"/store/*.rbf; do
  # The file's size (top bit: set the CRC right), then its header.
  python3 - "$file" "$corpus/file_header_fuzz/seed-$(basename "$file")" <<'EOF'
import os, struct, sys
data = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(data) | 1 << 63) + data[:4096])
EOF
  python3 - "$file" "$corpus/config_fuzz/seed-$(basename "$file")" <<'EOF'
import struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<I", data[40:44])[0]
open(sys.argv[2], "wb").write(data[64:64 + n])
EOF
done

# Replies: every key of filters the CLI made on a real redis-server (started
# here on 127.0.0.1, stopped by its PID), read as the stores read them; then
# shapes one server does not give (CLUSTER SLOTS, redirects, the create
# script's codes).
# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh
port=$(free_port)
redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$seeds" \
  >"$seeds/redis.log" 2>&1 &
redis_pid=$!
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis="redis://127.0.0.1:$port"
quiet "$cli" --store "$redis" create plain --capacity 100 --error 0.01 --strategy guava64
quiet "$cli" --store "$redis" add plain a b c
quiet "$cli" --store "$redis" create sharded --capacity 100 --error 0.01 --shards 3
quiet "$cli" --store "$redis" create scaling --capacity 10 --error 0.01 --scaling
quiet "$cli" --store "$redis" add scaling 1 2 3 4 5 6 7 8 9 10 11 12
quiet "$cli" --store "$redis" create rsn --capacity 1000 --error 0.01 --strategy redisson
quiet "$cli" --store "$redis" add rsn x y
python3 scripts/lib/capture_replies.py "$port" "$corpus/reply_fuzz"
kill "$redis_pid" && wait "$redis_pid" 2>/dev/null || true
redis_pid=
slots='*3\r\n*4\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n'
slots+='*3\r\n$9\r\n127.0.0.1\r\n:7003\r\n$1\r\n?\r\n*3\r\n:5461\r\n:10922\r\n*2\r\n$0\r\n\r\n'
slots+=':7001\r\n*3\r\n:10923\r\n:16383\r\n*2\r\n$3\r\n::1\r\n:7002\r\n'
printf "\\x05$slots" >"$corpus/reply_fuzz/seed-cluster-slots"
printf '\x00-MOVED 3999 127.0.0.1:6381\r\n-ASK 1 [::1]:7002\r\n-TRYAGAIN x\r\n-CLUSTERDOWN y\r\n' \
  >"$corpus/reply_fuzz/seed-redirects"
printf '\x80*3\r\n:10\r\n$4\r\n9586\r\n$1\r\n7\r\n*2\r\n:8\r\n$4\r\nnone\r\n*2\r\n:9\r\n$3\r\nset\r\n' \
  >"$corpus/reply_fuzz/seed-script-codes"
# What sentinels answer (as redis-sentinel 7 sends it): get-master-addr-by-name,
# SENTINEL replicas (fields shortened), a +switch-master message.
printf '\x00*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6380\r\n$-1\r\n*2\r\n*6\r\n$2\r\nip\r\n$3\r\n::1\r\n$4\r\nport\r\n$4\r\n6381\r\n$5\r\nflags\r\n$5\r\nslave\r\n*4\r\n$2\r\nip\r\n$8\r\n10.0.0.2\r\n$4\r\nport\r\n$4\r\n6382\r\n$38\r\nmymaster 127.0.0.1 6379 127.0.0.1 6380\r\n' \
  >"$corpus/reply_fuzz/seed-sentinel"
# Decimals at the edges of the fast sum (9 and 18 digits) and of the ranges.
for d in 999999999 -2147483648 +2147483647 2147483648 999999999999999999 \
  -9223372036854775808 9223372036854775808 +-1 007; do
  printf '%s' "$d" >"$corpus/decimal_fuzz/seed$d"
done
# PUT bodies: every kind, strategy and encoding, and options at their edges.
i=0
for body in '{"capacity":1000,"error_rate":0.01}' \
  '{"capacity":100,"error_rate":0.05,"kind":"counting","encoding":"int64"}' \
  '{"capacity":10,"error_rate":0.01,"kind":"scaling","expansion":2}' \
  '{"capacity":100,"error_rate":0.01,"kind":"window","window_ms":60000,"slices":4,"ttl_seconds":3600}' \
  '{"capacity":1e3,"error_rate":1e-3,"strategy":"redisson","shards":3}' \
  '{"capacity":500,"error_rate":0.001,"strategy":"guava64","encoding":"int32"}' \
  '{"capacity":100,"error_rate":0.01,"strategy":"seed","kind":"scaling","expansion":4}' \
  '{"capacity":100,"error_rate":0.01,"strategy":"block","kind":"window","window_ms":1000,"slices":10}' \
  '{"capacity":900000,"error_rate":0.01,"kind":"counting"}'; do
  printf '%s' "$body" >"$corpus/put_filter_fuzz/seed-$((i++))"
done
# Numbers (the first byte picks the reader: 0 ParseUint64, 1 a duration,
# 2 a byte size, 3 a listen address).
i=0
for text in '\x001e6' '\x002.5e1' '\x0018446744073709551615' '\x0018446744073709551616' \
  '\x0010e-1' '\x000.5' '\x0190m' '\x01500ms' '\x017d' '\x0118446744073709551s' \
  '\x021GiB' '\x02512m' '\x029223372036854775807' '\x028T' '\x03127.0.0.1:8080' \
  '\x03[::1]:0' '\x03[fe80::1%%lo]:80' '\x03localhost:65536'; do
  printf "$text" >"$corpus/numbers_fuzz/seed-$((i++))"
done
unset ASAN_OPTIONS

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(items_body_fuzz request_head_fuzz import_fuzz file_header_fuzz config_fuzz
  redis_url_fuzz reply_fuzz decimal_fuzz put_filter_fuzz numbers_fuzz)
cd build-fuzz/fuzz
for t in "${targets[@]}"; do
  echo "== $t, $seconds s"
  log=$seeds/$t.log
  # -malloc_limit_mb: an allocation the input does not justify is a failure.
  set +e
  "./$t" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -artifact_prefix="$PWD/$t-" -print_final_stats=1 "$corpus/$t" >"$log" 2>&1
  rc=$?
  set -e
  grep -E '^stat::number_of_executed_units|DONE' "$log" || true
  if [ "$rc" -ne 0 ]; then
    tail -n 40 "$log" >&2
    echo "fuzz: $t failed (exit $rc); its input is in $PWD/$t-*" >&2
    exit 1
  fi
done
echo "== fuzzing done: no failing input"
