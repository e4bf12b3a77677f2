#!/usr/bin/env bash
# Builds the Debian packages into build-package/ (cmake/packaging.cmake says
# what goes where):
#   redbloom_<version>_<arch>.deb         the CLI, redbloomd, its systemd unit,
#                                         /etc/redbloom/redbloomd.json, man pages
#   libredbloom-dev_<version>_<arch>.deb  the static library, headers, CMake files
#
# Usage: scripts/package.sh [BUILD_DIR]
#   Without BUILD_DIR: configures and builds build-release (Release, no tests
#   or benchmarks), then packages it.
#   With BUILD_DIR (CI passes build): packages that tree as it is built, with
#   cpack, without compiling again. It must be configured with
#   -DCMAKE_INSTALL_PREFIX=/usr (the Debian library directory follows the
#   prefix) and without sanitizers.
# scripts/check-package.sh checks the result.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:-}
if [ -z "$dir" ]; then
  bash scripts/install-deps.sh
  dir=build-release
  bash scripts/build.sh "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
    -DREDBLOOM_BUILD_TESTS=OFF -DREDBLOOM_BUILD_BENCH=OFF -DREDBLOOM_SANITIZE=
else
  cache="$dir/CMakeCache.txt"
  if [ ! -f "$cache" ]; then
    echo "package: $dir is not a configured build tree" >&2
    exit 2
  fi
  if ! grep -qx 'CMAKE_INSTALL_PREFIX:PATH=/usr' "$cache"; then
    echo "package: $dir is not configured with -DCMAKE_INSTALL_PREFIX=/usr" >&2
    exit 2
  fi
  if grep -q '^REDBLOOM_SANITIZE:STRING=..*' "$cache"; then
    echo "package: $dir is built with sanitizers; package a normal build" >&2
    exit 2
  fi
  ninja -C "$dir" >/dev/null  # up to date: CI has just built it
fi

out=build-package
rm -rf "$out"
cpack --config "$dir/CPackConfig.cmake" -B "$out" >"$dir/cpack.log" 2>&1 || {
  cat "$dir/cpack.log" >&2
  exit 1
}
ls -l "$out"/*.deb
