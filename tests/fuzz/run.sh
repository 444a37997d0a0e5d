#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs libFuzzer targets for a fixed time each (the `make fuzz` CI job).
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET ...]   (no TARGET: every target built)
#
# Each target NAME (BUILD_DIR/fuzz/NAME_fuzz) fuzzes a temporary COPY of its committed corpus
# tests/fuzz/corpus/NAME/ (so the committed corpus never changes), with tests/fuzz/NAME.dict when
# present. A finding (crash, UBSan/ASan report, broken invariant, timeout, leak, OOM) makes the
# script exit 1 after all targets ran; its input is kept in BUILD_DIR/fuzz/artifacts/NAME/ and
# its path printed. Full libFuzzer logs: BUILD_DIR/fuzz/logs/NAME.log.
set -uo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS [TARGET ...]" >&2
  exit 2
fi
src_dir="$(cd "$(dirname "$0")" && pwd)"
build_dir="$(cd "$1" && pwd)"
seconds="$2"
shift 2
bin_dir="$build_dir/fuzz"

targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  mapfile -t targets < <(grep -v '^$' "$bin_dir/targets.txt")
fi

# Symbolized stack traces (llvm-N, from scripts/setup --fuzz), for UBSan too; libFuzzer's own
# options come on the command line.
symbolizer=""
llvm=/usr/lib/llvm-$("$(dirname "$0")/../../scripts/setup" --clang-version)/bin/llvm-symbolizer
[[ -x $llvm ]] && symbolizer=":external_symbolizer_path=$llvm"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1$symbolizer}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1$symbolizer}"

work="$(mktemp -d "${TMPDIR:-/tmp}/llmux-fuzz-XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$bin_dir/logs"

failed=()
summary=()
for name in "${targets[@]}"; do
  exe="$bin_dir/${name}_fuzz"
  corpus="$src_dir/corpus/$name"
  if [[ ! -x "$exe" || ! -d "$corpus" ]]; then
    echo "fuzz: unknown target '$name' (no $exe or no $corpus)" >&2
    failed+=("$name")
    summary+=("$(printf '%-10s  not built / no corpus' "$name")")
    continue
  fi
  copy="$work/$name"
  mkdir -p "$copy"
  cp -R "$corpus/." "$copy/"
  artifacts="$bin_dir/artifacts/$name"
  mkdir -p "$artifacts"
  log="$bin_dir/logs/$name.log"
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$artifacts/")
  [[ -f "$src_dir/$name.dict" ]] && args+=(-dict="$src_dir/$name.dict")

  echo "fuzz: $name for ${seconds}s: $exe ${args[*]} <copy of tests/fuzz/corpus/$name>"
  start=$(date +%s)
  "$exe" "${args[@]}" "$copy" >"$log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  corpus_after=$(find "$copy" -type f | wc -l)
  if [[ $rc -eq 0 ]]; then
    line=$(printf '%-10s  ok       %4ss  %10s execs  %s  corpus %s -> %s' "$name" "$took" \
      "${execs:-?}" "${cov:-}" "$(find "$corpus" -type f | wc -l)" "$corpus_after")
  else
    failed+=("$name")
    crash=$(grep -Eo 'Test unit written to [^ ]+' "$log" \
      | awk '{print $NF}' | tail -1)
    line=$(printf '%-10s  FINDING  %4ss  %10s execs  exit %s  input: %s' "$name" "$took" \
      "${execs:-?}" "$rc" "${crash:-see $log}")
    echo "---- $name: last 60 lines of $log" >&2
    tail -n 60 "$log" >&2
    if [[ -n "$crash" && -f "$crash" ]]; then
      echo "---- $name: the input ($(stat -c %s "$crash") bytes), base64:" >&2
      head -c 4096 "$crash" | base64 >&2
      echo "---- reproduce: $exe $crash" >&2
    fi
  fi
  echo "fuzz: $line"
  summary+=("$line")
done

echo "fuzz: summary (${seconds}s per target)"
for line in "${summary[@]}"; do echo "  $line"; done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: FINDINGS in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: no findings"
