#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# How long a newcomer's `make test` takes, and where the time goes.
#
# Clones a commit (default HEAD) into a temporary directory and runs `make test` there twice:
#   cold  an empty ccache (packages installed, npm's cache as it is: a first run fills it);
#   warm  the ccache the cold run filled, a fresh clone in another directory (what CI sees).
# Then breaks the cold build down from ninja's log: compile CPU seconds by directory, the
# slowest translation units, link steps, and the test run (ctest's own total).
#
# Usage: bench/build_time.sh [--commit REV] [--jobs N] [--out FILE] [--skip-warm]
# Writes FILE (default bench/results/build_time.md). Takes two full builds: ~40 min on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

commit=HEAD
jobs=$(nproc)
out="$top/bench/results/build_time.md"
warm=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --commit) commit="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    --out) out="$2"; shift ;;
    --skip-warm) warm=0 ;;
    *) echo "usage: bench/build_time.sh [--commit REV] [--jobs N] [--out FILE] [--skip-warm]" >&2
       exit 2 ;;
  esac
  shift
done
rev=$(git rev-parse --short "$commit")
work=$(mktemp -d /tmp/llmux-build-time.XXXXXX)
trap 'rm -rf "$work"' EXIT
export CCACHE_DIR="$work/ccache"

# run_make_test NAME: a fresh clone under $work/NAME, `make test` timed (wall, user, system).
run_make_test() {
  local name="$1" dir="$work/$1"
  git clone -q --no-hardlinks "$top" "$dir"
  git -C "$dir" checkout -q "$rev"
  local t0 t1 status=0
  t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$work/$name.cpu" make -C "$dir" test JOBS="$jobs" \
    >"$work/$name.log" 2>&1 || status=$?
  t1=$(date +%s.%N)
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') $(cat "$work/$name.cpu") $status"
}

scripts/setup >/dev/null
echo "build_time: cold make test of $rev ($jobs jobs)" >&2
read -r cold_wall cold_user cold_sys cold_status < <(run_make_test cold)
if [[ $warm -eq 1 ]]; then
  echo "build_time: warm make test (ccache filled, fresh clone)" >&2
  read -r warm_wall warm_user warm_sys warm_status < <(run_make_test warm)
fi

ninja_log="$work/cold/build/.ninja_log"
test_seconds=$(sed -nE 's/^Total Test time \(real\) = +([0-9.]+) sec/\1/p' "$work/cold.log" | tail -1)
{
  echo "# make test: cold and warm"
  echo
  echo "Produced by \`bench/build_time.sh --commit $rev --jobs $jobs\` on $(date -u +%Y-%m-%d)," \
       "$(nproc) cores, $(. /etc/os-release && echo "$PRETTY_NAME"), $(g++ --version | head -1)."
  echo
  echo "| run | wall s | user s | system s | exit |"
  echo "|---|---|---|---|---|"
  printf '| cold (empty ccache) | %.0f | %.0f | %.0f | %s |\n' "$cold_wall" "$cold_user" "$cold_sys" "$cold_status"
  if [[ $warm -eq 1 ]]; then
    printf '| warm (ccache filled, fresh clone) | %.0f | %.0f | %.0f | %s |\n' "$warm_wall" "$warm_user" "$warm_sys" "$warm_status"
  fi
  echo
  echo "Of the cold run: the test run (ctest) ${test_seconds:-?} s; the build, from ninja's log:"
  echo
  awk 'NR > 1 { d = ($2 - $1) / 1000
                if ($4 ~ /\.o$/) { compile += d; units++ } else { other += d; steps++ } }
       END { printf "- compiling: %.0f CPU s in %d translation units\n", compile, units
             printf "- linking and other steps: %.0f s in %d steps\n", other, steps }' "$ninja_log"
  echo
  echo "Compile CPU seconds by directory:"
  echo
  echo "| directory | CPU s | units |"
  echo "|---|---|---|"
  awk 'NR > 1 && $4 ~ /\.o$/ { d = ($2 - $1) / 1000; n = split($4, part, "/")
       key = part[1] "/" part[2]; sum[key] += d; count[key]++ }
       END { for (k in sum) printf "| %s | %.0f | %d |\n", k, sum[k], count[k] }' "$ninja_log" |
    sort -t'|' -k3 -rn
  echo
  echo "The 15 slowest translation units:"
  echo
  echo "| unit | s |"
  echo "|---|---|"
  awk 'NR > 1 && $4 ~ /\.o$/ { printf "| %s | %.1f |\n", $4, ($2 - $1) / 1000 }' "$ninja_log" |
    sort -t'|' -k3 -rn | head -15
  echo
  echo "Share of compile time in the slowest N units:"
  echo
  awk 'NR > 1 && $4 ~ /\.o$/ { print ($2 - $1) / 1000 }' "$ninja_log" | sort -rn |
    awk '{ s += $1; n++; c[n] = s } END { for (k = 10; k <= n; k *= 2) printf "- %d: %.0f%%\n", k, 100 * c[k] / s }'
} >"$out"
echo "build_time: $out" >&2
[[ $cold_status -eq 0 && ${warm_status:-0} -eq 0 ]]
