#!/usr/bin/env bash
# The README's first command on a fresh machine, timed: a fresh `git clone` of this repository,
# run as a user whose home is new and empty (no npm cache, no pip cache, no ~/.cache, no
# .keel/tools), runs `npm run dev` until the demo is done, then stops it with Ctrl-C (SIGINT).
# Writes bench/results/first-start.md and .json: seconds to the end of installing, to
# "Keel local stack is up", to the demo's end, and to a clean stop, with the load average.
#
#   bash bench/first-start.sh            # clones HEAD of this checkout
#
# The machine's package settings are kept (the npm and pip configuration in the environment and
# /etc, a copy of ~/.npmrc): what a fresh machine of this kind has. Outside CI: it downloads every
# Node package and the server wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/keel-first-start.XXXXXX")
home="$work/home"
mkdir -p "$home"
[ -f "$HOME/.npmrc" ] && cp "$HOME/.npmrc" "$home/.npmrc"
git clone --quiet "$root" "$work/keel"
commit=$(git -C "$work/keel" rev-parse --short HEAD)
log="$work/dev.log"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

start=$(date +%s.%N)
# A process group of its own, as a terminal's foreground job: Ctrl-C goes to the whole group.
(
  cd "$work/keel"
  exec setsid env -i PATH="$PATH" HOME="$home" LANG="${LANG:-C.UTF-8}" \
    ${PIP_CERT:+PIP_CERT="$PIP_CERT"} ${PIP_FIND_LINKS:+PIP_FIND_LINKS="$PIP_FIND_LINKS"} \
    ${PIP_DEFAULT_TIMEOUT:+PIP_DEFAULT_TIMEOUT="$PIP_DEFAULT_TIMEOUT"} \
    npm run dev
) >"$log" 2>&1 &
pid=$!

seconds() { awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }'; }
installed="" up="" demo="" outcome="timeout"
for _ in $(seq 1 3600); do
  if [ -z "$installed" ] && grep -q "^• " "$log"; then installed=$(seconds); fi
  if [ -z "$up" ] && grep -q "Keel local stack is up" "$log"; then up=$(seconds); fi
  if grep -q "The stack stays up" "$log"; then demo=$(seconds); outcome="demo done"; break; fi
  if grep -q "Demo failed" "$log"; then demo=$(seconds); outcome="demo failed"; break; fi
  if ! kill -0 "$pid" 2>/dev/null; then outcome="exited early"; break; fi
  sleep 0.5
done
stop_start=$(date +%s.%N)
# Ctrl-C: SIGINT to every process of the group; keel dev then stops every process it started.
kill -INT -- "-$pid" 2>/dev/null || true
# Stopped: no process of the group and none started from the clone (servers run in groups of
# their own, stopped by keel dev) left, within a minute.
for _ in $(seq 1 240); do
  pgrep -g "$pid" >/dev/null || pgrep -f "$work/" >/dev/null || break
  sleep 0.25
done
stopped=$(awk -v a="$stop_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
wait "$pid" || true
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
leftover=$(pgrep -f "$work/" | wc -l || true)
[ "$leftover" -eq 0 ] || pgrep -af "$work/" >&2

mkdir -p bench/results
cat >bench/results/first-start.json <<JSON
{"date":"$(date -u +%Y-%m-%dT%H:%M:%SZ)","commit":"$commit","outcome":"$outcome","installedSeconds":${installed:-null},"stackUpSeconds":${up:-null},"demoDoneSeconds":${demo:-null},"stopSeconds":$stopped,"processesLeft":$leftover,"loadBefore":"$load_before","loadAfter":"$load_after","cores":$(nproc)}
JSON
cat >bench/results/first-start.md <<MD
# First start on a fresh machine

\`bash bench/first-start.sh\`: a fresh clone (commit $commit), a new empty home (no npm, pip or
other cache), \`npm run dev\` until the demo ends, then Ctrl-C. $(date -u +%Y-%m-%d), $(nproc) cores,
load average $load_before before and $load_after after.

| step | seconds from \`npm run dev\` |
| --- | --- |
| installing done (Node packages, Temporal CLI, test server, SeaweedFS, CLI build) | ${installed:-–} |
| "Keel local stack is up" | ${up:-–} |
| ${outcome} | ${demo:-–} |
| Ctrl-C to stopped | ${stopped} (processes left: ${leftover}) |
MD
cat bench/results/first-start.md
if [ "$outcome" != "demo done" ]; then
  echo "first-start: $outcome; the log: $log" >&2
  tail -n 40 "$log" >&2
  exit 1
fi
rm -rf "$work"
