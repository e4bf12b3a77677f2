#!/usr/bin/env bash
# The core benchmark (issue #2): redbloom's in-memory filter against Java
# Guava's BloomFilter, same workload, same run, one table.
#
#   scripts/bench-core.sh            # 5 repetitions, medians (about 2-3 minutes)
#   REPS=3 scripts/bench-core.sh     # quicker
#   BENCH_BUILD_DIR=/tmp/bb scripts/bench-core.sh
#
# Builds a Release tree of its own (build-bench), runs bench/core_bench.cc
# (Google Benchmark) and bench/java/GuavaBench.java, then prints per workload
# the median ns per item of each, the ratio Guava/redbloom (above 1: redbloom
# is faster) and the FPP each measured over 1e6 never-added items.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${BENCH_BUILD_DIR:-build-bench}
reps=${REPS:-5}
guava_jar=${GUAVA_JAR:-/usr/share/java/guava.jar}

source scripts/lib/bench.sh
require_tools bench-core cmake ninja javac java
if [ ! -f "$guava_jar" ]; then
  echo "bench-core: $guava_jar is missing; apt-get install libguava-java" >&2
  exit 1
fi
release_build "$dir" "core_bench guava_bench" -DREDBLOOM_BUILD_SERVER=OFF -DREDBLOOM_BUILD_CLI=OFF \
  -DREDBLOOM_BENCH_GUAVA_JAR="$guava_jar"

core_tsv=$dir/core_summary.tsv
guava_tsv=$dir/guava_summary.tsv

echo "== redbloom (Google Benchmark, $reps repetitions)"
"$dir/bench/core_bench" --benchmark_repetitions="$reps" \
  --benchmark_report_aggregates_only=true --summary_out="$core_tsv"

echo "== Guava BloomFilter (Java $(java -version 2>&1 | head -1 | cut -d'"' -f2), $reps repetitions)"
# A fixed heap: 1e7 item strings take about 0.6 GB, and heap resizing during
# a timed pass would be noise; AlwaysPreTouch faults the heap in before timing.
java -Xms2g -Xmx2g -XX:+AlwaysPreTouch -cp "$guava_jar:$dir/bench/java" GuavaBench --reps="$reps" >"$guava_tsv"

echo
echo "== redbloom vs Guava: medians of $reps, ns per item, 1% filters, items ORD-i"
awk -F'\t' '
  NR == FNR { guava_ns[$1] = $2; guava_fpp[$1] = $3; guava_bpk[$1] = $4; next }
  {
    n = split($1, part, "/")
    op = part[1]; size = part[n]; store = (n == 3) ? part[2] : "-"
    key = ""
    if (op ~ /^add/) key = "add/" size
    else if (op ~ /^contains_hit/) key = "contains_hit/" size
    else if (op ~ /^contains_miss/) key = "contains_miss/" size
    label = op
    sub(/_single$/, " (single)", label); sub(/_batch$/, " (batch 1000)", label)
    sub(/_hit/, " hit", label); sub(/_miss/, " miss", label)
    if (op == "murmur3_128") label = "murmur3_128 alone"
    if (op == "offsets_guava64") label = "guava64 offsets alone"
    rows[++count] = sprintf("%-26s %-4s %-5s %10.1f", label, size, store, $2)
    if (key in guava_ns) {
      rows[count] = rows[count] sprintf(" %10.1f %8.2fx %9.3f%% %9.3f%%", guava_ns[key],
                                        guava_ns[key] / $2, 100 * $3, 100 * guava_fpp[key])
    } else {
      rows[count] = rows[count] sprintf(" %10s %9s %10s %10s", "-", "-", "-", "-")
    }
    if (op == "murmur3_128") hash[size] = $2
    if (op == "contains_hit_batch" && store == "mem") hit_batch[size] = $2
    bpk[size] = $4
  }
  END {
    printf "%-26s %-4s %-5s %10s %10s %9s %10s %10s\n", "workload", "n", "store",
           "redbloom", "Guava", "ratio", "FPP rb", "FPP Guava"
    for (i = 1; i <= count; i++) print rows[i]
    print ""
    for (s in bpk) {
      printf "n=%s: bits per key redbloom %.3f, Guava %.3f", s, bpk[s], guava_bpk["add/" s]
      if ((s in hash) && (s in hit_batch) && hit_batch[s] > 0)
        printf "; murmur3_128 is %.0f%% of a batched hit", 100 * hash[s] / hit_batch[s]
      printf "\n"
    }
  }' "$guava_tsv" "$core_tsv"
