#!/usr/bin/env bash
# Lists the processes the tests left running, and fails if there are any.
#
#   scripts/leftovers.sh SINCE_EPOCH_SECONDS
#
# A leftover is a process of a kind clix or its tests start (bwrap, clix, a
# browser, an MCP or model server, sshd, nginx, PostgreSQL, ssh) that began
# after SINCE, is not a descendant of this script's caller, and has init as
# its parent: what started it is gone, so nothing will end it. (A process of
# the same kind that something else on the machine started and still owns
# is not the tests'.) Processes on their way out get a
# few seconds first (a sandbox ended by a drop gets SIGKILL after a grace).
set -euo pipefail

since="${1:?usage: scripts/leftovers.sh SINCE_EPOCH_SECONDS}"
caller="${PPID}"
kinds='^(bwrap|clix|chromium|chrome|headless_shell|chrome-headless|python3|python|llama-server|sshd|ssh|nginx|postgres|sh|sleep)$'

# pid, ppid, start (seconds since the epoch), name, command line: processes
# started since `since` whose ancestry does not reach the caller.
orphans() {
    local now
    now=$(date +%s)
    ps -eo pid=,ppid=,etimes=,comm=,args= | awk -v since="$since" -v now="$now" -v caller="$caller" \
        -v self="$$" -v kinds="$kinds" '
        { pid[$1] = $1; parent[$1] = $2; started[$1] = now - $3; name[$1] = $4
          line = $0; sub(/^ *[0-9]+ +[0-9]+ +[0-9]+ +[^ ]+ +/, "", line); args[$1] = line }
        END {
            for (p in pid) {
                if (started[p] < since || name[p] !~ kinds || p == self || parent[p] != 1) continue
                q = p; ours = 0
                for (hops = 0; hops < 64 && q > 1; hops++) {
                    if (q == caller || q == self) { ours = 1; break }
                    q = parent[q]
                }
                if (!ours) printf "  pid %s (parent %s, started %ds ago) %s: %s\n", p, parent[p], now - started[p], name[p], args[p]
            }
        }'
}

left="$(orphans)"
for _ in 1 2 3 4 5 6 7 8 9 10; do
    [[ -z "$left" ]] && break
    sleep 1
    left="$(orphans)"
done
if [[ -n "$left" ]]; then
    echo "error: processes the tests started are still running, with nothing left to end them:" >&2
    echo "$left" >&2
    exit 1
fi
echo "leftover processes: none"
