#!/bin/sh
# fuzz/run.sh SECONDS [HARNESS...]: builds the libFuzzer harnesses (clang,
# -DKD_FUZZ=ON, in $FUZZ_BUILD, default build-fuzz) when needed, then runs
# each for SECONDS on a temporary copy of its corpus fuzz/corpus/NAME (new
# units never go into the tree). Prints per harness the executions, the
# coverage (cov and ft of libFuzzer's final line) and the result. Exit status
# 1 when any harness found a crash, a leak, a timeout or an out-of-memory;
# the input and the log are then kept under $FUZZ_BUILD/findings/.
# docs/FUZZING.md explains the limits below.
set -eu
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:?usage: fuzz/run.sh SECONDS [HARNESS...]}
shift
HARNESSES=${*:-schema dlpack boxed kd_lang kdgen_yaml}
BUILD=${FUZZ_BUILD:-build-fuzz}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

launcher=""
if command -v ccache >/dev/null 2>&1; then
  launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache"
fi
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  CC=clang cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKD_FUZZ=ON \
    -DKD_BUILD_TESTS=OFF $launcher ${CMAKE_FLAGS:-} >/dev/null
fi
targets=""
for h in $HARNESSES; do targets="$targets fuzz_$h"; done
# shellcheck disable=SC2086
cmake --build "$BUILD" -j "$JOBS" --target $targets >/dev/null

# A request above 256 MiB gets NULL from the allocator, which the library must
# turn into KD_ENOMEM; libFuzzer's own limits are above that, so a failure
# there is a real runaway (many allocations, or one that ignores NULL).
ASAN_OPTIONS="allocator_may_return_null=1:max_allocation_size_mb=256:detect_leaks=1:${ASAN_OPTIONS:-}"
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
KD_NUM_THREADS=1
export ASAN_OPTIONS UBSAN_OPTIONS KD_NUM_THREADS

max_len() {
  case $1 in
  dlpack) echo 256 ;; boxed) echo 512 ;; schema) echo 512 ;; kd_lang) echo 1024 ;; *) echo 4096 ;;
  esac
}

work=$(mktemp -d "${TMPDIR:-/tmp}/kd-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
printf '%-11s %10s %8s %8s %7s  %s\n' harness execs cov ft corpus result
for h in $HARNESSES; do
  mkdir -p "$work/$h/corpus" "$work/$h/artifacts"
  cp fuzz/corpus/"$h"/* "$work/$h/corpus/"
  dict=""
  [ -f "fuzz/$h.dict" ] && dict="-dict=fuzz/$h.dict"
  rc=0
  # shellcheck disable=SC2086
  "$BUILD/fuzz/fuzz_$h" -max_total_time="$SECONDS_EACH" -timeout=30 -rss_limit_mb=2048 \
    -malloc_limit_mb=2048 -max_len="$(max_len "$h")" -close_fd_mask=3 -print_final_stats=1 \
    -artifact_prefix="$work/$h/artifacts/" $dict "$work/$h/corpus" >"$work/$h/log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$work/$h/log" | tail -n 1)
  last=$(grep -aE '^#[0-9]+[[:space:]].*cov: ' "$work/$h/log" | tail -n 1 || true)
  cov=$(printf '%s\n' "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
  ft=$(printf '%s\n' "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
  corp=$(printf '%s\n' "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
  if [ "$rc" -eq 0 ]; then
    result=ok
  else
    failed=1
    keep="$BUILD/findings/$h"
    mkdir -p "$keep"
    cp "$work/$h/artifacts/"* "$keep/" 2>/dev/null || true
    cp "$work/$h/log" "$keep/log"
    result="FAILED (exit $rc): $(ls "$work/$h/artifacts" | tr '\n' ' ')-> $keep"
  fi
  printf '%-11s %10s %8s %8s %7s  %s\n' "$h" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
  if [ "$rc" -ne 0 ]; then
    grep -aE 'ERROR|runtime error|invariant failed|SUMMARY|==[0-9]+==' "$work/$h/log" |
      grep -v 'failed to allocate' | head -n 20 || true
  fi
done
exit $failed
