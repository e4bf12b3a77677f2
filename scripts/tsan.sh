#!/usr/bin/env bash
# Installs what is missing, builds under ThreadSanitizer (build-tsan/), and
# runs every test there, the fault tests (a cluster and a sentinel set-up
# failed over, servers restarted) included. Any race TSan sees fails the test
# that ran it: in the test process itself, or in a redbloomd or redbloom it
# started, whose exit code 66 the test reports.
#
# Not part of scripts/test.sh (CI): on 2 cores the build and the run take
# about 9 minutes, and CI must stay under 20 with its normal and ASan passes.
# Run it after changing anything that threads share: the word kernels and the
# writer gate, the stores' connection pools, the service. The vector kernels
# are off in this build (src/word_bits.cc, kThreadSanitizer): their torn reads
# are by design, and the portable kernels share their synchronisation.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

bash scripts/install-deps.sh

echo "== build (ThreadSanitizer)"
bash scripts/build.sh build-tsan -DREDBLOOM_BUILD_TESTS=ON -DREDBLOOM_SANITIZE=thread \
  -DREDBLOOM_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DREDBLOOM_TEST_COMPILE_OPTIONS=-O0
echo "== tests under ThreadSanitizer"
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --output-on-failure --no-tests=error -j"$(nproc)")

echo "== all tests passed under ThreadSanitizer in $(( $(date +%s) - start )) s"
