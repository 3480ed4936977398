#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each, one after the
# other, and prints a summary per target: executions per second, total
# executions, and findings (crash, timeout and out-of-memory inputs, saved in
# fuzz/artifacts/<target>/).
#
#   scripts/fuzz.sh SECONDS [TARGET...]
#
# Needs a nightly toolchain and cargo-fuzz (cargo install cargo-fuzz). Builds
# with AddressSanitizer and debug assertions (overflow checks) into their own
# target folder, $CLIX_FUZZ_TARGET_DIR (default ~/.cache/clix-fuzz-target),
# so these builds never invalidate the workspace's. One fuzzing process runs
# at a time (-fork=1); it goes on after a finding (-ignore_crashes), so one
# run reports every finding it makes, not only the first.
# New corpus entries go to fuzz/corpus/<target>/; the committed seeds in
# fuzz/seeds/<target>/ are read, never written. Logs: fuzz/logs/<target>.log.
set -euo pipefail

usage() { echo "usage: scripts/fuzz.sh SECONDS [TARGET...]" >&2; exit 2; }
[[ $# -ge 1 && $1 =~ ^[0-9]+$ && $1 -gt 0 ]] || usage
seconds=$1
shift

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fuzz="$root/fuzz"
export CARGO_TARGET_DIR="${CLIX_FUZZ_TARGET_DIR:-$HOME/.cache/clix-fuzz-target}"
all=(present hub_manifest sse tool_args memory_query engine_line)
targets=("${@:-${all[@]}}")

# Longest input per target (bytes) and how long one input may run (seconds).
declare -A max_len=([present]=65536 [hub_manifest]=16384 [sse]=65536 [tool_args]=4096 [memory_query]=1024 [engine_line]=1024)
declare -A timeout=([engine_line]=30)

for t in "${targets[@]}"; do
  [[ -n ${max_len[$t]:-} ]] || { echo "unknown target: $t (targets: ${all[*]})" >&2; exit 2; }
done

cd "$fuzz"
echo "toolchain: $(cargo +nightly --version) / $(rustc +nightly --version)" >&2
# Built once, then the binaries run: a change in the tree during a long run
# neither rebuilds nor breaks the targets still to come.
cargo +nightly fuzz build --debug-assertions
bin="$CARGO_TARGET_DIR/$(rustc +nightly -vV | sed -n 's/^host: //p')/release"

mkdir -p logs
summary=()
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  before=$(find "artifacts/$t" -type f | wc -l)
  dict=()
  [[ -f dicts/$t.dict ]] && dict=(-dict="dicts/$t.dict")
  # Fixtures (temp workspaces, memory files) live here and go with it.
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/clix-fuzz-$t.XXXXXX")
  echo "== $t: ${seconds}s" >&2
  set +e
  TMPDIR="$scratch" ASAN_OPTIONS="${ASAN_OPTIONS:-detect_odr_violation=0}" "$bin/$t" "corpus/$t" "seeds/$t" -artifact_prefix="artifacts/$t/" \
    -max_total_time="$seconds" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -max_len="${max_len[$t]}" -timeout="${timeout[$t]:-10}" -print_final_stats=1 "${dict[@]}" \
    >"logs/$t.log" 2>&1
  status=$?
  set -e
  rm -rf "$scratch"
  # Fork mode's progress lines: "#EXECS: cov: … exec/s: N oom/timeout/crash: a/b/c time: Ts …";
  # their exec/s is the last job's, so the rate here is executions over time.
  last=$(grep -E '^#[0-9]+: cov:' "logs/$t.log" | tail -1 || true)
  execs=$(sed -nE 's/^#([0-9]+):.*/\1/p' <<<"$last")
  took=$(sed -nE 's/.* time: ([0-9]+)s.*/\1/p' <<<"$last")
  rate=$([[ -n $execs && ${took:-0} -gt 0 ]] && echo $((execs / took)) || true)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
  oom_to_crash=$(sed -nE 's/.*oom\/timeout\/crash: ([0-9]+\/[0-9]+\/[0-9]+).*/\1/p' <<<"$last")
  after=$(find "artifacts/$t" -type f | wc -l)
  summary+=("$(printf '%-13s %8s %12s %7s %18s %9s %6s' "$t" "${rate:-?}" "${execs:-?}" "${cov:-?}" \
    "${oom_to_crash:-?}" "$((after - before))" "$status")")
done

printf '\n%-13s %8s %12s %7s %18s %9s %6s\n' target exec/s executions cov oom/timeout/crash artifacts exit
printf '%s\n' "${summary[@]}"
echo "(artifacts: fuzz/artifacts/<target>/; logs: fuzz/logs/<target>.log)"
