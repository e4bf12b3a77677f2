#!/usr/bin/env bash
# Checks the Debian packages that scripts/package.sh wrote, without installing
# them: they are extracted (dpkg-deb -x) into a temporary root and run from
# there, so a failed run leaves nothing on the machine and no test can pick
# up a system-wide /usr/bin/redbloom by accident.
#
# Usage: scripts/check-package.sh [PACKAGE_DIR]   (default build-package)
#
# 1. each package holds exactly the expected files; the conffile, the
#    maintainer scripts and the computed Depends are there;
# 2. the systemd unit passes `systemd-analyze verify` (with the packaged
#    binary and man page) and keeps its hardening (`systemd-analyze security`);
# 3. the man pages render without warnings and name every subcommand and
#    flag of the packaged binaries' --help;
# 4. the packaged binaries print the package version, run the demo against a
#    temporary store, and redbloomd serves with the packaged config on
#    loopback and refuses it beyond loopback (placeholder token);
# 5. tests/consumer builds against the extracted -dev package.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgdir=${1:-build-package}

step_start=$(date +%s)
step() {
  local now
  now=$(date +%s)
  echo "   ($(( now - step_start )) s)"
  step_start=$now
  echo "-- $*"
}
fail() {
  echo "check-package: $*" >&2
  exit 1
}

arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
runtime=$(ls "$pkgdir"/redbloom_*_"$arch".deb 2>/dev/null || true)
dev=$(ls "$pkgdir"/libredbloom-dev_*_"$arch".deb 2>/dev/null || true)
[ -f "$runtime" ] || fail "no $pkgdir/redbloom_<version>_$arch.deb; run scripts/package.sh"
[ -f "$dev" ] || fail "no $pkgdir/libredbloom-dev_<version>_$arch.deb; run scripts/package.sh"
version=$(dpkg-deb -f "$runtime" Version)
[ "$(basename "$runtime")" = "redbloom_${version}_${arch}.deb" ] || fail "odd file name $runtime"

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
root="$tmp/root"
mkdir -p "$root"

echo "-- contents of $(basename "$runtime") and $(basename "$dev")"
dpkg-deb -c "$runtime" >"$tmp/runtime.list"
dpkg-deb -c "$dev" >"$tmp/dev.list"
files() { awk '{print $6}' "$1" | grep -v '/$' | sed 's|^\./|/|' | sort; }
{
  printf '%s\n' /etc/redbloom/redbloomd.json /usr/bin/redbloom /usr/bin/redbloomd \
    /usr/lib/systemd/system/redbloomd.service /usr/share/doc/redbloom/README.md \
    /usr/share/doc/redbloom/http-api.md /usr/share/doc/redbloom/openapi.json \
    /usr/share/man/man1/redbloom.1.gz /usr/share/man/man8/redbloomd.8.gz
} | sort >"$tmp/runtime.expected"
{
  git ls-files include/redbloom | sed 's|^|/usr/|'
  printf "/usr/lib/$multiarch/%s\n" libredbloom.a cmake/redbloom/redbloomConfig.cmake \
    cmake/redbloom/redbloomConfigVersion.cmake cmake/redbloom/redbloomTargets.cmake \
    cmake/redbloom/redbloomTargets-CONFIG.cmake pkgconfig/redbloom.pc
} | sort >"$tmp/dev.expected"
files "$tmp/runtime.list" >"$tmp/runtime.actual"
files "$tmp/dev.list" | sed 's|redbloomTargets-[a-z]*\.cmake$|redbloomTargets-CONFIG.cmake|' | sort \
  >"$tmp/dev.actual"
diff -u "$tmp/runtime.expected" "$tmp/runtime.actual" || fail "redbloom package: files differ (- expected, + packaged)"
diff -u "$tmp/dev.expected" "$tmp/dev.actual" || fail "libredbloom-dev package: files differ (- expected, + packaged)"
grep -q '^-rw------- root/root .* \./etc/redbloom/redbloomd.json$' "$tmp/runtime.list" ||
  fail "/etc/redbloom/redbloomd.json must be root's, mode 0600 (it holds the token)"

depends=$(dpkg-deb -f "$runtime" Depends)
echo "   Depends: $depends"
for lib in libc6 libstdc\\+\\+6 libhiredis libssl3 libhighwayhash0 libcpp-httplib zlib1g init-system-helpers; do
  echo "$depends" | grep -Eq "(^|, )$lib" || fail "redbloom Depends lacks $lib: $depends"
done
dpkg-deb -e "$runtime" "$tmp/control"
grep -qx /etc/redbloom/redbloomd.json "$tmp/control/conffiles" || fail "redbloomd.json is not a conffile"
for script in postinst prerm postrm; do
  [ -x "$tmp/control/$script" ] || fail "no executable $script"
  sh -n "$tmp/control/$script" || fail "$script: syntax error"
done
dev_depends=$(dpkg-deb -f "$dev" Depends)
for pkg in libhiredis-dev libssl-dev libhighwayhash-dev zlib1g-dev pkg-config; do
  echo "$dev_depends" | grep -q "$pkg" || fail "libredbloom-dev Depends lacks $pkg: $dev_depends"
done
dpkg-deb -x "$runtime" "$root"
dpkg-deb -x "$dev" "$root"
bin="$root/usr/bin"

step "systemd unit"
# verify wants the unit's binary and man page where the unit names them;
# point both at the extracted package instead of installing it.
mkdir -p "$tmp/unit"
sed "s|/usr/bin/redbloomd|$bin/redbloomd|" "$root/usr/lib/systemd/system/redbloomd.service" \
  >"$tmp/unit/redbloomd.service"
# verify exits 0 on settings it ignores ("Failed to parse ..., ignoring"), so
# any message at all is a failure.
MANPATH="$root/usr/share/man" systemd-analyze verify "$tmp/unit/redbloomd.service" >"$tmp/verify.txt" 2>&1 ||
  { cat "$tmp/verify.txt" >&2; fail "systemd-analyze verify failed"; }
[ ! -s "$tmp/verify.txt" ] || { cat "$tmp/verify.txt" >&2; fail "systemd-analyze verify complained"; }
for directive in DynamicUser=yes StateDirectory=redbloom ProtectSystem=strict NoNewPrivileges=yes \
  Restart=on-failure LoadCredential=redbloomd.json:/etc/redbloom/redbloomd.json; do
  grep -qx "$directive" "$tmp/unit/redbloomd.service" || fail "the unit lacks $directive"
done
# Exposure 0-10 (shown), threshold in tenths: today's unit scores 1.1.
systemd-analyze security --offline=yes --threshold=15 "$tmp/unit/redbloomd.service" >"$tmp/security.txt" ||
  { grep '✗' "$tmp/security.txt" >&2; fail "the unit's exposure rose above 1.5 (systemd-analyze security)"; }
grep 'Overall exposure' "$tmp/security.txt" | sed 's/^/   /'

step "man pages"
for page in man1/redbloom.1.gz man8/redbloomd.8.gz; do
  zcat "$root/usr/share/man/$page" >"$tmp/page"
  warnings=$(groff -man -Tutf8 -ww -z "$tmp/page" 2>&1)
  [ -z "$warnings" ] || fail "$page: groff warnings: $warnings"
done
render() { zcat "$root/usr/share/man/$1" | MANWIDTH=200 man -l - 2>/dev/null | col -b; }
render man1/redbloom.1.gz >"$tmp/redbloom.txt"
render man8/redbloomd.8.gz >"$tmp/redbloomd.txt"
flags() { grep -oE -- '--[a-z][a-z0-9-]*' | sort -u; }
subcommands=$("$bin/redbloom" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && NF {print $1}')
[ -n "$subcommands" ] || fail "redbloom --help lists no subcommands"
for sub in $subcommands; do
  grep -q "^ *redbloom $sub " "$tmp/redbloom.txt" || grep -q "^ *redbloom $sub\$" "$tmp/redbloom.txt" ||
    fail "redbloom(1) has no section for '$sub'"
  for flag in $("$bin/redbloom" "$sub" --help | flags); do
    grep -q -- "$flag" "$tmp/redbloom.txt" || fail "redbloom(1) does not mention $sub $flag"
  done
done
for flag in $("$bin/redbloom" --help | flags); do
  grep -q -- "$flag" "$tmp/redbloom.txt" || fail "redbloom(1) does not mention $flag"
done
for flag in $("$bin/redbloomd" --help | flags); do
  grep -q -- "$flag" "$tmp/redbloomd.txt" || fail "redbloomd(8) does not mention $flag"
done
echo "   $(echo "$subcommands" | wc -w) subcommands and their flags are in redbloom(1)"

step "packaged binaries: --version and the demo"
# "NAME VERSION", and the commit built in parentheses when built from git.
version_is() {
  case "$1" in "$2 $version" | "$2 $version ("*")") return 0 ;; esac
  return 1
}
version_is "$("$bin/redbloom" --version)" redbloom || fail "redbloom --version is not $version"
version_is "$("$bin/redbloomd" --version)" redbloomd || fail "redbloomd --version is not $version"
REDBLOOM_STORE="file:$tmp/demo-store" bash scripts/demo.sh "$bin" >"$tmp/demo.out" 2>&1 ||
  { cat "$tmp/demo.out" >&2; fail "the demo failed with the packaged redbloom"; }
grep -q '^items_added: *803$' "$tmp/demo.out" || { cat "$tmp/demo.out" >&2; fail "unexpected demo output"; }

step "packaged redbloomd with the packaged config"
config="$root/etc/redbloom/redbloomd.json"
set +e
"$bin/redbloomd" --config "$config" --listen 0.0.0.0:0 --print-config >/dev/null 2>"$tmp/refused.err"
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q placeholder "$tmp/refused.err" ||
  fail "the placeholder token beyond loopback was not refused (exit $rc): $(cat "$tmp/refused.err")"
"$bin/redbloomd" --config "$config" --listen 127.0.0.1:0 --store "file:$tmp/data" 2>"$tmp/server.err" &
server_pid=$!
port=""
for _ in $(seq 1 200); do  # wait for the startup line that names the port (at most 10 s)
  port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$tmp/server.err")
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || fail "redbloomd exited: $(cat "$tmp/server.err")"
  sleep 0.05
done
[ -n "$port" ] || fail "redbloomd did not start: $(cat "$tmp/server.err")"
url="http://127.0.0.1:$port"
token=$(sed -n 's/.*"token": *"\([^"]*\)".*/\1/p' "$config")
call() { curl -sS --fail-with-body -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }
call -X PUT "$url/v1/filters/orders" -d '{"capacity":1000,"error_rate":0.01}' >/dev/null
[ "$(call -X POST "$url/v1/filters/orders/items" -d '{"items":["ORD-1"]}')" = '{"added":[true]}' ] ||
  fail "add failed"
[ "$(call -X POST "$url/v1/filters/orders/check" -d '{"items":["ORD-1","ORD-404"]}')" = \
  '{"present":[true,false]}' ] || fail "check failed"
call "$url/v1/openapi.json" | cmp -s - "$root/usr/share/doc/redbloom/openapi.json" ||
  fail "/v1/openapi.json differs from the packaged openapi.json"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/filters")" = 401 ] || fail "no token was accepted"
grep -q "placeholder" "$tmp/server.err" || fail "no warning about the placeholder token on loopback"
kill -TERM "$server_pid"
set +e
wait "$server_pid"
rc=$?
set -e
server_pid=""
[ "$rc" -eq 0 ] || fail "redbloomd exited $rc after SIGTERM: $(cat "$tmp/server.err")"

step "tests/consumer against the extracted libredbloom-dev"
cmake -S tests/consumer -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$root/usr" >/dev/null
ninja -C "$tmp/consumer" >/dev/null
"$tmp/consumer/redbloom_consumer"
step "tests/consumer through the extracted redbloom.pc"
# shellcheck disable=SC2046 # the flags are words
g++ -o "$tmp/consumer/pkg_config_consumer" tests/consumer/main.cc \
  $(PKG_CONFIG_PATH="$root/usr/lib/$multiarch/pkgconfig" pkg-config --cflags --libs redbloom)
"$tmp/consumer/pkg_config_consumer"
step "packages checked"
