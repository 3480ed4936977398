#!/usr/bin/env bash
# Runs the whole test suite several times in a row while CPU-bound processes
# run beside it, as on a busy build machine, and fails if any run fails.
# A test that passes only on an idle machine waits on time instead of on the
# event it means; this is how such tests are found (issue 27).
#
#   scripts/stress-tests.sh [RUNS] [HOGS]      defaults: 3 runs, 2 hogs
#
# Run it after .ci/run has installed what the tests need. The build happens
# first, without the hogs; each run's log is kept in $STRESS_LOGS (default: a
# new temporary folder), and a table of runs, results and times is printed.
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${1:-3}"
hogs="${2:-2}"
logs="${STRESS_LOGS:-$(mktemp -d -t clix-stress.XXXXXX)}"
mkdir -p "$logs"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/clix-target}"
# Tests that need something installed fail instead of skipping, as in CI.
export CI="${CI:-1}"

cargo test --workspace --locked --no-run >"$logs/build.log" 2>&1 || {
    echo "the build failed; see $logs/build.log" >&2
    exit 1
}

hog_pids=()
stop_hogs() {
    ((${#hog_pids[@]})) && kill "${hog_pids[@]}" 2>/dev/null || true
}
trap stop_hogs EXIT
for ((i = 0; i < hogs; i++)); do
    # One busy core each, for as long as the runs last.
    sh -c 'while :; do :; done' &
    hog_pids+=($!)
done

failed=0
printf '%-4s %-6s %8s  %s\n' run result seconds log
for ((run = 1; run <= runs; run++)); do
    log="$logs/run-$run.log"
    start=$(date +%s)
    if cargo test --workspace --locked --no-fail-fast >"$log" 2>&1; then
        result=pass
    else
        result=FAIL
        failed=$((failed + 1))
    fi
    printf '%-4s %-6s %8s  %s\n' "$run" "$result" "$(($(date +%s) - start))" "$log"
    if [[ $result == FAIL ]]; then
        grep -E '^(test .* FAILED|---- .* stdout ----|error: test failed)' "$log" | sed 's/^/     /' || true
    fi
done
echo "$runs runs beside $hogs CPU-bound processes on $(nproc) cores: $failed failed"
((failed == 0))
