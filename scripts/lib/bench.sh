# Shell helpers for the benchmark scripts. Source it from the repository root.
#   require_tools NAME TOOL...          exit with a hint if a tool is missing
#   release_build DIR "TARGETS" ARGS... configure a Release tree (no tests) and build TARGETS
#   on_exit COMMAND                     run COMMAND when the script exits (in order)
#   free_port                           print a loopback port nothing listens on

require_tools() {
  local name=$1 tool
  shift
  for tool in "$@"; do
    if ! command -v "$tool" >/dev/null; then
      echo "$name: $tool is missing; run scripts/install-deps.sh" >&2
      exit 1
    fi
  done
}

release_build() {
  local dir=$1 targets=$2
  shift 2
  echo "== build (Release) in $dir"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREDBLOOM_BUILD_TESTS=OFF "$@" >/dev/null
  # shellcheck disable=SC2086  # TARGETS is a list
  ninja -C "$dir" $targets
}

bench_exit_hooks=()
bench_run_exit_hooks() {
  local hook
  for hook in "${bench_exit_hooks[@]}"; do eval "$hook" || true; done
}
trap bench_run_exit_hooks EXIT
on_exit() { bench_exit_hooks+=("$1"); }

# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh
