#!/bin/sh
# Runs each benchmark group on kdispatch and, when built, on libtorch,
# alternating the two three times so that both see the same machine state.
# Usage: bench/side_by_side.sh BIN_DIR [GROUP...]   (groups: schema dispatch kernels ops;
# libtorch has no counterpart of kernels)
set -eu
bin=${1:-build/bin}
[ $# -gt 0 ] && shift
groups=${*:-schema dispatch kernels ops}
data=$(dirname "$0")/../../shared/data/native_functions.yaml
for round in 1 2 3; do
  echo "# round $round"
  for g in $groups; do
    args=""
    [ "$g" = schema ] && args=$data
    "$bin/kd-bench" "$g" $args 2>/dev/null | sed "s/^/kdispatch $g /"
    if [ -x "$bin/kd-bench-libtorch" ] && [ "$g" != kernels ]; then
      "$bin/kd-bench-libtorch" "$g" $args 2>/dev/null | sed "s/^/libtorch  $g /"
    fi
  done
done
