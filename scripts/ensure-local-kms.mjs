#!/usr/bin/env node
// Builds local-kms (an AWS KMS stand-in; pinned in scripts/tool-versions.json under "go") from the
// Go module proxy into .keel/tools/local-kms/local-kms: the vault's KMS test runs its key wrapper
// against it. Run by that test when the binary is missing (about a minute of Go compiling the
// first time, so `npm run ensure` does not wait for it); also `node scripts/ensure-local-kms.mjs`.
// The binary is kept per user by version (`~/.cache/keel/local-kms-<version>/local-kms`, or under
// XDG_CACHE_HOME), so another clone on the same machine copies it. Without Go it says so and
// exits 1 (the test then skips, saying why). Idempotent and quiet when in place.
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const MODULE = "github.com/nsmithuk/local-kms";
const version = JSON.parse(readFileSync(join(root, "scripts/tool-versions.json"), "utf8")).go[MODULE];
export const LOCAL_KMS_DIR = join(root, ".keel/tools/local-kms");
export const LOCAL_KMS_BIN = join(LOCAL_KMS_DIR, "local-kms");
const stampFile = join(LOCAL_KMS_DIR, ".installed");
const userCopy = join(
  process.env.XDG_CACHE_HOME || join(homedir(), ".cache"),
  "keel",
  `local-kms-${version}`,
  "local-kms",
);

/** Copies `from` to `to` through a temporary name, so a half-written binary is never in place. */
function copyInto(from, to) {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, `${to}.partial.${process.pid}`);
  chmodSync(`${to}.partial.${process.pid}`, 0o755);
  renameSync(`${to}.partial.${process.pid}`, to);
}

function installed() {
  return existsSync(LOCAL_KMS_BIN) && existsSync(stampFile) && readFileSync(stampFile, "utf8") === version;
}

/** Puts local-kms in place; throws (saying why) when it cannot be built. */
export function ensureLocalKms() {
  if (installed()) return LOCAL_KMS_BIN;
  if (!existsSync(userCopy)) {
    const go = process.env.GO || "go";
    try {
      execFileSync(go, ["version"], { stdio: "ignore" });
    } catch {
      throw new Error("Go is not on PATH: local-kms cannot be built (install Go 1.22+, or set GO)");
    }
    process.stderr.write(`keel: building local-kms ${version} (once; about a minute)\n`);
    const bin = mkdtempSync(join(tmpdir(), "keel-local-kms-"));
    try {
      execFileSync(go, ["install", `${MODULE}@${version}`], {
        env: { ...process.env, GOBIN: bin, GOFLAGS: "-mod=mod" },
        stdio: ["ignore", "inherit", "inherit"],
        timeout: 10 * 60_000,
      });
      copyInto(join(bin, "local-kms"), userCopy);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  }
  copyInto(userCopy, LOCAL_KMS_BIN);
  writeFileSync(stampFile, version);
  return LOCAL_KMS_BIN;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    ensureLocalKms();
  } catch (error) {
    process.stderr.write(`keel: ${error.message}\n`);
    process.exit(1);
  }
}
