#!/usr/bin/env bash
# Property-based fuzzing of the HTTP API from its own OpenAPI document, bounded to a few minutes.
#
# Installs schemathesis (PyPI, pinned) into its own venv under .keel/tools/schemathesis (once),
# starts the local stack in a temporary data folder (`keel dev --no-demo`: Temporal dev server,
# S3 server, local LLM server, worker, HTTP API), runs schemathesis against the API (examples,
# coverage, fuzzing and stateful phases, every check), and stops everything. Exits non-zero on any
# 5xx, any response the document does not describe, and any request the document allows but the
# server refuses (or the reverse). Settings: api-fuzz.toml; hooks: api-fuzz-hooks.py.
#
#   bash scripts/api-fuzz.sh              # 30 examples per operation, seed 1, all phases
#   KEEL_FUZZ_EXAMPLES=100 KEEL_FUZZ_SEED=7 bash scripts/api-fuzz.sh
#   KEEL_FUZZ_PHASES=stateful bash scripts/api-fuzz.sh
#   KEEL_FUZZ_HOOKS=off bash scripts/api-fuzz.sh   # without the hook that makes Idempotency-Keys unique
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SCHEMATHESIS_VERSION=4.32.5
tools="$root/.keel/tools/schemathesis"
stamp="$tools/installed-$SCHEMATHESIS_VERSION"
if [ ! -f "$stamp" ]; then
  echo "api-fuzz: installing schemathesis $SCHEMATHESIS_VERSION into $tools" >&2
  rm -rf "$tools/venv"
  python3 -m venv "$tools/venv"
  "$tools/venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
  touch "$stamp"
fi
# The Temporal CLI and the S3 server (idempotent; the same step .ci/run and npm test run).
node scripts/ensure.mjs

data=$(mktemp -d "${TMPDIR:-/tmp}/keel-api-fuzz.XXXXXX")
log="$data/keel-dev.log"
dev_pid=""
cleanup() {
  local status=$?
  # A failed run shows what the server logged as errors (a 500's stack is only there).
  if [ "$status" -ne 0 ] && [ -f "$log" ]; then
    grep -h '"level":"error"' "$log" "$data"/*.log 2>/dev/null | tail -n 20 >&2 || true
  fi
  if [ -n "$dev_pid" ] && kill -0 "$dev_pid" 2>/dev/null; then
    kill -INT "$dev_pid"
    wait "$dev_pid" || true
  fi
  rm -rf "$data"
}
trap cleanup EXIT

# A stack of its own: no provider keys (the local LLM server answers) and none of the caller's
# server settings (it starts its own Temporal and S3 servers).
env -i PATH="$PATH" HOME="$HOME" KEEL_DATA_DIR="$data" node bin/keel.js dev --no-demo >"$log" 2>&1 &
dev_pid=$!

url=""
for _ in $(seq 1 240); do
  url=$(sed -n 's/^  API *\(http:[^ ]*\).*/\1/p' "$log" | head -n 1)
  [ -n "$url" ] && break
  if ! kill -0 "$dev_pid" 2>/dev/null; then
    echo "api-fuzz: keel dev exited before the API was up:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.5
done
if [ -z "$url" ]; then
  echo "api-fuzz: the API did not come up within 120 s:" >&2
  cat "$log" >&2
  exit 1
fi
echo "api-fuzz: fuzzing $url" >&2

# Run from the temporary folder: schemathesis keeps its example database in ./.schemathesis.
cd "$data"
# The API key is keel dev's loopback key for tenant `dev` (not a secret; see src/cli/dev.ts), given
# in api-fuzz.toml for the document's `bearer` scheme, so requests the fuzzer sends without
# credentials go without them (`--header` would add them to every request). The entry script
# runs under the venv's own python: its shebang names the folder the venv was created in, which
# is wrong when the tools folder is shared between checkouts.
# KEEL_FUZZ_HOOKS=off drops the hook: a key drawn twice with two bodies then gets the 422 the
# document declares, which proves the declaration (docs/api.md, "Idempotency").
hooks="$root/scripts/api-fuzz-hooks.py"
[ "${KEEL_FUZZ_HOOKS:-on}" = "off" ] && hooks=""
SCHEMATHESIS_HOOKS="$hooks" \
  "$tools/venv/bin/python" "$tools/venv/bin/schemathesis" --config-file "$root/scripts/api-fuzz.toml" --no-color run "$url/v1/openapi.json" \
  --checks all \
  --phases "${KEEL_FUZZ_PHASES:-examples,coverage,fuzzing,stateful}" \
  --max-examples "${KEEL_FUZZ_EXAMPLES:-30}" \
  --seed "${KEEL_FUZZ_SEED:-1}" \
  --workers 1 \
  --request-timeout 30 |
  # Schemathesis closes with a pytest-style banner ("=== 2 warnings in 44.78s ===") that a reader
  # of the CI log takes for a test runner's verdict (one that ran no test). Its banners are
  # reworded as this script's lines; pipefail keeps schemathesis's exit status.
  sed -u -E 's/^=+ (.*[^ ]) =+$/api-fuzz: \1/'
