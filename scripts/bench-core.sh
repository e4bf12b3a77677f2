#!/usr/bin/env bash
# The core benchmark (issues #2 and #17): redbloom's in-memory filters
# (strategies guava64 and block) against Java Guava's BloomFilter, the same
# workload in the same run, with the floors they are made of.
#
#   scripts/bench-core.sh                  # 5 repetitions, medians (5-10 minutes)
#   REPS=3 scripts/bench-core.sh           # quicker
#   BASELINE=fd47e72 scripts/bench-core.sh # also runs that commit's core_bench (A/B)
#   BENCH_BUILD_DIR=/tmp/bb scripts/bench-core.sh
#
# Builds a Release tree of its own (build-bench), runs bench/core_bench.cc
# (Google Benchmark) and bench/java/GuavaBench.java, then prints per workload
# the median CPU ns per item of each and the ratios, and the FPP each
# measured over 1e6 never-added items. With BASELINE, that commit's
# core_bench is built in $dir-baseline (a git worktree of it) and run in the
# same script, so "before" and "after" share the machine's state.
#
# Boost.Bloom (the issue's external reference) is not in Debian and cannot be
# built here; its figures from the issue are printed for reference.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${BENCH_BUILD_DIR:-build-bench}
reps=${REPS:-5}
guava_jar=${GUAVA_JAR:-/usr/share/java/guava.jar}
baseline=${BASELINE:-}

source scripts/lib/bench.sh
require_tools bench-core cmake ninja javac java git
if [ ! -f "$guava_jar" ]; then
  echo "bench-core: $guava_jar is missing; apt-get install libguava-java" >&2
  exit 1
fi
release_build "$dir" "core_bench guava_bench" -DREDBLOOM_BUILD_SERVER=OFF -DREDBLOOM_BUILD_CLI=OFF \
  -DREDBLOOM_BENCH_GUAVA_JAR="$guava_jar"

core_tsv=$dir/core_summary.tsv
guava_tsv=$dir/guava_summary.tsv
base_tsv=$dir/baseline_summary.tsv
: >"$base_tsv"

if [ -n "$baseline" ]; then
  src=$dir-baseline-src
  rm -rf "$src"
  mkdir -p "$src"
  git archive "$baseline" | tar -x -C "$src"
  # Older core_benches timed wall clock (UseRealTime); on a shared machine that
  # counts other processes' time, so the baseline is measured in CPU time too.
  sed -i 's/->UseRealTime()//' "$src/bench/core_bench.cc"
  echo "== baseline $baseline (Release) in $dir-baseline"
  cmake -S "$src" -B "$dir-baseline" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDBLOOM_BUILD_TESTS=OFF \
    -DREDBLOOM_BUILD_SERVER=OFF -DREDBLOOM_BUILD_CLI=OFF >/dev/null
  ninja -C "$dir-baseline" core_bench
  echo "== baseline core_bench ($baseline, $reps repetitions, guava64 rows)"
  "$dir-baseline/bench/core_bench" --benchmark_repetitions="$reps" \
    --benchmark_filter='^(add|contains)' \
    --benchmark_report_aggregates_only=true --summary_out="$base_tsv"
fi

echo "== redbloom (Google Benchmark, $reps repetitions)"
"$dir/bench/core_bench" --benchmark_repetitions="$reps" \
  --benchmark_report_aggregates_only=true --summary_out="$core_tsv"

echo "== Guava BloomFilter (Java $(java -version 2>&1 | head -1 | cut -d'"' -f2), $reps repetitions)"
# A fixed heap: 1e7 item strings take about 0.6 GB, and heap resizing during
# a timed pass would be noise; AlwaysPreTouch faults the heap in before timing.
java -Xms2g -Xmx2g -XX:+AlwaysPreTouch -cp "$guava_jar:$dir/bench/java" GuavaBench --reps="$reps" >"$guava_tsv"

echo
echo "== medians of $reps, CPU ns per item, 1% filters, items ORD-i, batches of 1000"
awk -F'\t' '
  FILENAME == ARGV[1] { guava[$1] = $2; guava_fpp[$1] = $3; guava_bpk[$1] = $4; next }
  FILENAME == ARGV[2] {  # baseline: op/store/strategy/size (op/store/size before strategies)
    n = split($1, p, "/")
    if (n == 3) base[p[1] "/" p[2] "/" p[3]] = $2
    if (n == 4 && p[3] == "guava64") base[p[1] "/" p[2] "/" p[4]] = $2
    next
  }
  $1 ~ /^paired_/ {  # paired_what/store/strategy/size: B / A, A ns, B ns
    split($1, p, "/")
    paired[++pairs] = sprintf("%-27s %-4s %-5s %-8s %7.2fx   (%.1f / %.1f ns)", p[1], p[4], p[2], p[3], $2, $4, $3)
    next
  }
  {
    n = split($1, p, "/")
    if (n == 4) {  # op/store/strategy/size
      key = p[1] "/" p[2] "/" p[4]
      ns[key "/" p[3]] = $2; fpp[p[3] "/" p[4]] = $3; bpk[p[3] "/" p[4]] = $4
      if (!(key in seen)) { seen[key] = 1; order[++count] = key }
    } else if (n == 2) {
      floor_ns[$1] = $2; floor_order[++floors] = $1
    }
  }
  function guava_key(op, size) {
    sub(/_(single|batch)$/, "", op)
    return (op == "add" || op == "contains_hit" || op == "contains_miss") ? op "/" size : ""
  }
  function cell(v) { return v == "" ? sprintf("%9s", "-") : sprintf("%9.1f", v) }
  function ratio(a, b) { return (a == "" || b == "" || b == 0) ? sprintf("%8s", "-") : sprintf("%7.2fx", a / b) }
  END {
    printf "%-22s %-4s %-5s %9s %9s %9s %9s %8s %8s %8s\n", "workload", "n", "store",
           "before", "guava64", "block", "Guava", "g64 A/B", "G/g64", "G/block"
    for (i = 1; i <= count; i++) {
      split(order[i], p, "/")
      g = guava_key(p[1], p[3])
      gv = (g in guava) ? guava[g] : ""
      b = (order[i] in base) ? base[order[i]] : ""
      g64 = ns[order[i] "/guava64"]; blk = ns[order[i] "/block"]
      printf "%-22s %-4s %-5s %s %s %s %s %s %s %s\n", p[1], p[3], p[2], cell(b), cell(g64),
             cell(blk), cell(gv), ratio(b, g64), ratio(gv, g64), ratio(gv, blk)
    }
    print ""
    print "before: the BASELINE commit (guava64); g64 A/B: before / guava64; G/x: Guava / x (above 1: redbloom is faster)"
    for (s in bpk) printf "%-14s bits per key %.3f, FPP %.3f%%\n", s, bpk[s], 100 * fpp[s]
    for (s in guava_bpk) if (s ~ /^add/) printf "Guava/%-8s bits per key %.3f, FPP %.3f%%\n", substr(s, 5), guava_bpk[s], 100 * guava_fpp[s]
    print ""
    print "== floors (same run): what the filters are made of"
    for (i = 1; i <= floors; i++) printf "%-28s %9.2f\n", floor_order[i], floor_ns[floor_order[i]]
    print ""
    print "== against the floors, 1e7 (batched, mem:)"
    f = "/1e7"
    hb = "contains_hit_batch/mem/1e7"; ab = "add_batch/mem/1e7"
    printf "guava64 check %.1f ns = %.2fx (batched murmur3 + offsets + %s lines)\n", ns[hb "/guava64"],
           ns[hb "/guava64"] / (floor_ns["murmur3_128_many" f] + floor_ns["offsets_guava64" f] + floor_ns["floor_lines_guava64" f]), "k"
    printf "block   check %.1f ns = %.2fx (xxh3 + offsets + one line)\n", ns[hb "/block"],
           ns[hb "/block"] / (floor_ns["xxh3_128" f] + floor_ns["offsets_block" f] + floor_ns["floor_line" f])
    printf "guava64 add   %.1f ns, block add %.1f ns; single-item check / batched: guava64 %.2fx, block %.2fx\n",
           ns[ab "/guava64"], ns[ab "/block"],
           ns["contains_hit_single/mem/1e7/guava64"] / ns[hb "/guava64"],
           ns["contains_hit_single/mem/1e7/block"] / ns[hb "/block"]
    for (z = 1; z <= 2; z++) {
      sz = z == 1 ? "1e6" : "1e7"
      printf "single check %s: block %.1f ns, guava64 %.1f ns; one awaited random line alone (floor_line_latency) %.1f ns = %.2fx block batched;\n",
             sz, ns["contains_hit_single/mem/" sz "/block"], ns["contains_hit_single/mem/" sz "/guava64"],
             floor_ns["floor_line_latency/" sz], floor_ns["floor_line_latency/" sz] / ns["contains_hit_batch/mem/" sz "/block"]
      printf "  a block check with no call path, items independent (floor_single) %.1f ns = %.2fx block batched\n",
             floor_ns["floor_single/" sz], floor_ns["floor_single/" sz] / ns["contains_hit_batch/mem/" sz "/block"]
      if (("floor_single_pad60/" sz) in floor_ns)
        printf "  the same with 60 / 120 / 180 instructions more per item (floor_single_padN): %.1f / %.1f / %.1f ns\n",
               floor_ns["floor_single_pad60/" sz], floor_ns["floor_single_pad120/" sz], floor_ns["floor_single_pad180/" sz]
      if (("floor_single_pad0_l1/1e6") in floor_ns)
        printf "  and on a 16 KiB array (in L1), 0 / 60 / 120 / 180 more: %.1f / %.1f / %.1f / %.1f ns\n",
               floor_ns["floor_single_pad0_l1/1e6"], floor_ns["floor_single_pad60_l1/1e6"],
               floor_ns["floor_single_pad120_l1/1e6"], floor_ns["floor_single_pad180_l1/1e6"]
    }
    print ""
    print "== ratios of passes timed side by side (median over 5 pairs per repetition, then over repetitions)"
    print "   paired_load_add: load / batched add (at most 1 meets issue #17.5)"
    print "   paired_single_batch_check: single-item checks / batched checks (at most 2 meets #17.4)"
    print "   paired_single_batch_add: single-item adds / batched adds (at most 2 meets #17.4)"
    print "   paired_floor_single_check: guava64, a single check with no call path (Murmur3, offsets, k words) / batched"
    print "   paired_hash_many_check: a batched check, items hashed all at once / one at a time (guava64: eight at once; block: XXH3 and the ASCII check in one loop)"
    print "   paired_int64_utf8_check: 10-digit decimals checked in batches, int64 filter / utf8 filter"
    print "   paired_int64_single_batch_check: int64 single checks / int64 batched checks (at most 2 meets #17.4)"
    for (i = 1; i <= pairs; i++) print "  " paired[i]
    print ""
    print "Boost.Bloom 1.89 (issue #17, this kind of machine, 1e7, bulk API; not buildable here):"
    print "  classic filter, same m and k as guava64: add 15-19 ns, check 15-24 ns"
    print "  fast_multiblock64<7>:                    add 5-8 ns,   check 6-10 ns"
  }' "$guava_tsv" "$base_tsv" "$core_tsv"
