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
echo "== build (RelWithDebInfo)"
# -g1 (line tables only) keeps backtraces useful at a fraction of the compile
# time of full debug info; CI must stay well under 20 minutes on 2 cores.
bash scripts/build.sh build -DREDBLOOM_BUILD_TESTS=ON -DREDBLOOM_BUILD_BENCH=ON -DREDBLOOM_SANITIZE= \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
echo "== tests"
(cd build && ctest --output-on-failure --no-tests=error -j"$jobs")

echo "== sizing under clang"
# The Java-exact sizing must not depend on the compiler: the sizing test,
# built with clang against the same sources, must pin the same checksum.
clang++ -std=c++20 -O2 -Iinclude tests/sizing_test.cc src/sizing.cc src/status.cc \
  -lgtest -lgtest_main -pthread -o build/sizing_test_clang
build/sizing_test_clang --gtest_brief=1

echo "== build (ASan + UBSan)"
bash scripts/build.sh build-asan -DREDBLOOM_BUILD_TESTS=ON -DREDBLOOM_SANITIZE=address,undefined \
  -DREDBLOOM_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1"
echo "== tests under ASan + UBSan"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure --no-tests=error -j"$jobs")

echo "== all tests passed in $(( $(date +%s) - start )) s"
