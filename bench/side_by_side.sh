#!/bin/sh
# Runs each benchmark group on kdispatch and, when built, on libtorch,
# alternating the two three times so that both see the same machine state.
# Usage: bench/side_by_side.sh BIN_DIR
set -eu
bin=${1:-build/bin}
data=$(dirname "$0")/../../shared/data/native_functions.yaml
for round in 1 2 3; do
  echo "# round $round"
  "$bin/kd-bench" schema "$data" | sed 's/^/kdispatch /'
  if [ -x "$bin/kd-bench-libtorch" ]; then
    "$bin/kd-bench-libtorch" schema "$data" 2>/dev/null | sed 's/^/libtorch  /'
  fi
done
