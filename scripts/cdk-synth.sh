#!/usr/bin/env bash
# Synthesizes the Keel CDK app for every worker mode (ec2, fargate, lambda), offline: no AWS credentials, no Docker,
# no telemetry, no notices, no version check. `--strict` turns every construct warning into a
# failure. Templates land in infra/cdk.out/<mode>/.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cdk="$repo_root/node_modules/.bin/cdk"

# Nothing may reach AWS: drop any credentials and profile from the environment.
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_PROFILE
export AWS_EC2_METADATA_DISABLED=true
export CDK_DISABLE_VERSION_CHECK=1
export CDK_DISABLE_CLI_TELEMETRY=true

cd "$repo_root/infra"
for mode in ec2 fargate lambda; do
  case "$mode" in
    ec2) config=config/example.json ;;
    fargate) config=config/example-fargate.json ;;
    lambda) config=config/example-lambda.json ;;
  esac
  echo "cdk synth ($mode workers, $config)"
  log="$(mktemp)"
  if ! "$cdk" synth --strict --no-notices --quiet --context "config=$config" \
    --output "cdk.out/$mode" >"$log" 2>&1; then
    cat "$log"
    rm -f "$log"
    echo "cdk synth failed for $mode workers" >&2
    exit 1
  fi
  # --strict fails on annotations; template validation findings are printed as warnings only.
  if grep -Ei '\[warning|warning:|WARNING ' "$log"; then
    rm -f "$log"
    echo "cdk synth reported warnings for $mode workers" >&2
    exit 1
  fi
  rm -f "$log"
  echo "  ok: infra/cdk.out/$mode/$(cd "cdk.out/$mode" && ls ./*.template.json | head -1 | xargs basename)"
done
