#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: once in a normal
# build, then again under AddressSanitizer + UndefinedBehaviorSanitizer.
# Redis tests start their own redis-server on loopback ports; interop tests run
# real Java against Debian's Guava. `.ci/run` calls this script.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

bash scripts/install-deps.sh

echo "== format check (.clang-format)"
files=$(git ls-files '*.cc' '*.h')
if ! clang-format --dry-run --Werror $files; then
  echo "test: files above are not formatted; run: clang-format -i \$(git ls-files '*.cc' '*.h')" >&2
  exit 1
fi

jobs=$(nproc)
# The gcc pass runs one test more than there are cores: its tests wait on
# servers they start, on Java, on TTLs to pass. At -j$(nproc) a clean-clone
# run used 1.48 of 2 cores in its test phases and took 1,195 s of the
# 20-minute budget (2026-12-07); at -j3 the gcc pass's tests took 229 s
# where they took 254, but the sanitizer pass's, busier per test, 334 where
# they took 292: that one stays at -j$(nproc).
test_jobs=$((jobs + 1))
echo "== build (RelWithDebInfo)"
# -g1 (line tables only) keeps backtraces useful at a fraction of the compile
# time of full debug info; CI must stay well under 20 minutes on 2 cores.
# The /usr prefix is the Debian package's (its library directory follows it);
# nothing is installed there: the steps below install into temporary prefixes.
# The test programs' own code is built at -O0 (REDBLOOM_TEST_COMPILE_OPTIONS):
# what they test, the library, CLI and service, keeps the release flags.
# core_bench is built (it must keep compiling); the benchmarks against servers
# are left to their scripts (bench/CMakeLists.txt says why).
bash scripts/build.sh build -DREDBLOOM_BUILD_TESTS=ON -DREDBLOOM_BUILD_BENCH=ON -DREDBLOOM_SANITIZE= \
  -DREDBLOOM_BUILD_SERVER_BENCH=OFF \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_INSTALL_PREFIX=/usr \
  -DREDBLOOM_TEST_COMPILE_OPTIONS=-O0
# The sanitizer pass's build (clang, below) starts now, at the lowest CPU
# priority, beside the gcc pass's tests: they wait on servers, Java and TTLs
# and left a core half idle (1.48 of 2 used), which the build takes; a test
# that wants the CPU has it first. Its output goes to a log, shown if it
# fails. It stays in this script's process group (a runner that kills the
# group kills it too), and an early exit stops it: its cmake or ninja (which
# stops its compilers), then itself, only while it runs (a finished job's
# pid may be another process's by then).
asan_log=$(mktemp)
asan_build_pid=
stop_asan_build() {
  if [ -n "$asan_build_pid" ] && jobs -rp | grep -qx "$asan_build_pid"; then
    pkill -TERM -P "$asan_build_pid" 2>/dev/null || true
    kill "$asan_build_pid" 2>/dev/null || true
    wait "$asan_build_pid" 2>/dev/null || true
  fi
  rm -f "$asan_log"
}
trap stop_asan_build EXIT
echo "== build (clang, ASan + UBSan), in the background at nice 19: $asan_log"
# The second pass is clang's: it builds the library, CLI, service and tests
# with the other compiler CI would otherwise never run (scripts/fuzz.sh and
# clang users build with it; clang before 16, for one, cannot capture a
# structured binding in a lambda), and java_log_test, built by clang, must pin
# the same sizing checksum as under GCC (#17.6). clang also builds this pass
# in about two thirds of GCC's time (5m42 against 8m34 on 2 cores).
# The slowest fault tests (a cluster and a sentinel set-up killed and failed
# over, servers restarted) run once, in the normal build: under the
# sanitizers they doubled in time and kept CI near its 20-minute budget, so
# this pass does not even build them (REDBLOOM_SKIP_TEST_LABEL). To run them
# under the sanitizers too, configure build-asan without it and run
# (cd build-asan && ctest -L fault).
CC=clang CXX=clang++ nice -n 19 bash scripts/build.sh build-asan -DREDBLOOM_BUILD_TESTS=ON \
  -DREDBLOOM_SANITIZE=address,undefined -DREDBLOOM_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DREDBLOOM_TEST_COMPILE_OPTIONS=-O0 \
  -DREDBLOOM_SKIP_TEST_LABEL=fault >"$asan_log" 2>&1 &
asan_build_pid=$!

echo "== tests"
(cd build && ctest --output-on-failure --no-tests=error -j"$test_jobs")

echo "== install, and build tests/consumer against it with find_package(redbloom) and pkg-config"
step=$(date +%s)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"; stop_asan_build' EXIT
cmake --install build --prefix "$prefix/usr" >/dev/null
cmake -S tests/consumer -B "$prefix/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix/usr" >/dev/null
ninja -C "$prefix/consumer" >/dev/null
"$prefix/consumer/redbloom_consumer"
# And without CMake, through the installed redbloom.pc.
PKG_CONFIG_PATH=$(dirname "$(find "$prefix/usr" -name redbloom.pc)")
export PKG_CONFIG_PATH
# shellcheck disable=SC2046 # the flags are words
g++ -o "$prefix/consumer/pkg_config_consumer" tests/consumer/main.cc $(pkg-config --cflags --libs redbloom)
unset PKG_CONFIG_PATH
"$prefix/consumer/pkg_config_consumer"
echo "== consumer: $(( $(date +%s) - step )) s"

echo "== Debian packages from build/ (cpack, no new compile), then their checks"
step=$(date +%s)
bash scripts/package.sh build
bash scripts/check-package.sh build-package
echo "== packages: $(( $(date +%s) - step )) s"

echo "== build (clang, ASan + UBSan): waiting for it"
step=$(date +%s)
if ! wait "$asan_build_pid"; then
  asan_build_pid=
  tail -n 100 "$asan_log" >&2
  echo "test: the clang ASan + UBSan build failed (its last 100 lines above)" >&2
  exit 1
fi
asan_build_pid=
grep -E "warning:" "$asan_log" || true
echo "== build (clang): $(( $(date +%s) - step )) s more after the packages"
echo "== tests under clang, ASan + UBSan (the fault tests, label 'fault', ran above)"
# Three cases ran above and are left out here, for time: under the
# sanitizers they took 67, 25 and 22 s of the 20-minute budget (2026-12-07):
# the CLI run at every step for each of 15 ACL permissions, and 36 MB and
# 46 MiB filters rebuilt and read through Redis, paths the other tests here
# run with fewer processes and smaller filters.
asan_skip=RedisAclTest.ACallRefusedForAMissingPermissionLeavesNoHalfFilter
asan_skip+=:Stores/KindsTest.ReadPartsNeverJoinsTheFiltersOfARebuild/*
asan_skip+=:RedisStoreTest.BulkReadAndOrWorkInPiecesAndLeaveNoUpload
# And the kinds suite on a Redis Cluster (about 20 s of the gcc pass, most of
# it the cluster's own start and slot waits): every kind runs here on the
# other three stores, and the Cluster store's code under the sanitizers in
# the store suite (store_test's cluster cases, which stay).
asan_skip+=:Stores/KindsTest.*/cluster
# And four cases whose point is a bound on memory or a race's answers,
# checked in the gcc pass, over paths the cases here run in smaller shapes:
# under the sanitizers they took 20, 19, 13 and 11 s (2026-12-07): a file:
# create racing drops for its 20 s cap, a 48 MB import, a window handle in
# steady use, PUT bodies of many fields. The CI run before this cut took
# 1,174-1,220 s.
asan_skip+=:Stores/KindsTest.ACreateThatLosesEveryRetryToDropsIsRetryable/*
asan_skip+=:ImportBoundsTest.ImportMemoryIsBoundedByTheFilterNotAMultipleOfIt
asan_skip+=:Stores/KindsTest.AWindowHandleInSteadyUseKeepsNoMemoryPerSlice/*
asan_skip+=:Stores/ServerApiTest.APutBodyOfManyFieldsIsRefusedUnparsed/*
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 GTEST_FILTER="-$asan_skip" \
  ctest --output-on-failure --no-tests=error -j"$jobs" -LE fault)

echo "== all tests passed in $(( $(date +%s) - start )) s"
