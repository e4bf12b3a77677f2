#!/usr/bin/env bash
# Installs the Debian 12 packages redbloom needs to build, test and run.
# Only what is missing is installed; run as root (or with sudo available).
set -euo pipefail

packages=(
  # build; clang's sanitizer runtimes are only recommended by clang, and
  # recommends are not installed here (CI's second pass and scripts/fuzz.sh
  # link them)
  g++ clang libclang-rt-dev cmake ninja-build pkg-config make
  # libraries
  libhiredis-dev libssl-dev libcli11-dev nlohmann-json3-dev libcpp-httplib-dev libfmt-dev zlib1g-dev
  libhighwayhash-dev libxxhash-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev redis-server redis-tools wrk curl clang-format
  # cli_test kills an export at a known write (strace's fault injection)
  strace
  # TLS tests make their CA and certificates at run time
  openssl
  # docs/openapi.json's test validates real answers with Debian's JSON Schema library
  python3 python3-jsonschema
  # Debian packages (scripts/package.sh, scripts/check-package.sh): cpack's
  # dpkg-shlibdeps and file, strip, the unit's checks, the man pages' checks
  dpkg-dev file binutils systemd man-db groff-base bsdextrautils
  # Java interop: javac and Debian's Guava
  openjdk-17-jdk-headless libguava-java
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "install-deps: missing ${missing[*]}; run as root to install them" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The redis-server package starts a system instance where systemd runs; the
# tests start their own servers on free ports, so it is not needed here.
