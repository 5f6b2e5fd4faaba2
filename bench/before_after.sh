#!/bin/sh
# Compares two kd-bench binaries (before and after a change) on one group,
# alternating them ROUNDS times (default 5) so that both see the same machine
# states, and prints for every figure the minimum over the rounds of each,
# the difference and the ratio (after / before). Figures only one binary
# prints are listed with "-" on the other side.
# Usage: bench/before_after.sh BEFORE_BIN AFTER_BIN [GROUP] [ROUNDS]
#   e.g. bench/before_after.sh ../keys-base/build-rel/bin/kd-bench build-rel/bin/kd-bench dispatch 5
set -eu
before=$1
after=$2
group=${3:-dispatch}
rounds=${4:-5}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
i=1
while [ "$i" -le "$rounds" ]; do
  "$before" "$group" 2>/dev/null | sed 's/^/before /' >>"$out"
  "$after" "$group" 2>/dev/null | sed 's/^/after /' >>"$out"
  i=$((i + 1))
done
awk -v rounds="$rounds" '
  { key = $2; v = $3 + 0
    if (!(key in seen)) { seen[key] = 1; order[n++] = key }
    if ($1 == "before") { if (!(key in b) || v < b[key]) b[key] = v }
    else { if (!(key in a) || v < a[key]) a[key] = v } }
  END {
    printf "# minima over %d alternating rounds\n", rounds
    printf "%-42s %10s %10s %9s %7s\n", "figure", "before", "after", "diff", "ratio"
    for (i = 0; i < n; i++) {
      k = order[i]
      if ((k in b) && (k in a))
        printf "%-42s %10.2f %10.2f %+9.2f %7.3f\n", k, b[k], a[k], a[k] - b[k], b[k] ? a[k] / b[k] : 0
      else
        printf "%-42s %10s %10s\n", k, (k in b) ? sprintf("%.2f", b[k]) : "-", (k in a) ? sprintf("%.2f", a[k]) : "-"
    }
  }' "$out"
