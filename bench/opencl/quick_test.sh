#!/bin/sh
# The smoke test of `kd-bench opencl --quick` (ctest bench_opencl_quick):
# runs it (the arguments are the command) and checks that it prints every
# figure below, each once and with a finite number, and nothing else (so that
# this list, docs/PERFORMANCE.md and the program stay one set). No figure's
# value is asserted. Exit 77 (skipped) when the command skips.
figures="raw_opencl_add_16M_f32_GBps_scalar raw_opencl_add_16M_f32_GBps_vec4
raw_opencl_add_16M_f32_GBps opencl_add_16M_f32_GBps opencl_add_out_16M_f32_GBps
opencl_add_16M_ratio cpu_add_16M_f32_GBps opencl_speedup_add_16M cpu_sum_16M_f32_GBps
opencl_sum_16M_f32_GBps opencl_speedup_sum_16M raw_opencl_add_1_us opencl_add_1_us
opencl_add_out_1_us opencl_add_1_over_raw_us clblast_mm_1024_gflops opencl_mm_1024_gflops
opencl_mm_1024_ratio cpu_mm_1024_gflops opencl_speedup_mm_1024 cpu_softmax_4096x1024_us
opencl_softmax_4096x1024_us opencl_speedup_softmax_4096x1024 cpu_tril_64_us
opencl_fallback_tril_64_us opencl_fallback_tril_64_ratio"

out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -eq 77 ]; then exit 77; fi
if [ "$rc" -ne 0 ]; then
  echo "FAIL: '$*' exited with $rc"
  exit 1
fi
bad=0
for f in $figures; do
  n=$(printf '%s\n' "$out" | grep -c -E "^$f -?[0-9]+(\.[0-9]+)?\$")
  if [ "$n" -ne 1 ]; then
    echo "FAIL: figure $f printed $n times with a finite value (expected once)"
    bad=1
  fi
done
# Every other line is the device's name.
printf '%s\n' "$out" | while read -r name value; do
  case " $(echo $figures) device " in
    *" $name "*) ;;
    *) echo "FAIL: unexpected line: $name $value"; exit 1 ;;
  esac
done || bad=1
if ! printf '%s\n' "$out" | grep -q '^device .'; then
  echo "FAIL: no device line"
  bad=1
fi
exit $bad
