#!/usr/bin/env node
// Builds Jaeger (pinned in scripts/tool-versions.json under "go") from the Go module proxy into
// .keel/tools/jaeger/jaeger: the trace receiver and UI of `keel dev --traces` and of the tracing
// tests, which run this when Jaeger is missing (`npm run ensure` does not: a first start without
// traces does not wait minutes for a compiler). Jaeger's module has replace directives, so `go install module@version` refuses it; it is
// built from a scratch module that requires it as a tool. Needs Go (1.24+) on PATH; without Go it
// says so and leaves Jaeger out (the tracing test then fails with the same advice). The build
// cache is private to the build and removed after it (over a gigabyte no later build reuses); the
// downloaded modules stay in Go's module cache. The binary is also kept per user, by version
// (`~/.cache/keel/jaeger-<version>/jaeger`, or under XDG_CACHE_HOME), so another clone on the same
// machine (CI's fresh clone of each submission) copies it instead of compiling for minutes again.
// Callers at the same time (tracing test files in parallel workers) take turns through a lock
// folder: one builds, the others wait and find it built. Idempotent and quiet when in place.
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const MODULE = "github.com/jaegertracing/jaeger";
const version = JSON.parse(readFileSync(join(root, "scripts/tool-versions.json"), "utf8")).go[MODULE];
export const JAEGER_DIR = join(root, ".keel/tools/jaeger");
export const JAEGER_BIN = join(JAEGER_DIR, "jaeger");
const stampFile = join(JAEGER_DIR, ".installed");
const userCopy = join(
  process.env.XDG_CACHE_HOME || join(homedir(), ".cache"),
  "keel",
  `jaeger-${version}`,
  "jaeger",
);

/** Copies `from` to `to` through a temporary name, so a half-written binary is never in place. */
function copyInto(from, to) {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, `${to}.partial`);
  chmodSync(`${to}.partial`, 0o755);
  renameSync(`${to}.partial`, to);
}

function goVersion() {
  try {
    return execFileSync("go", ["version"], { encoding: "utf8" }).trim();
  } catch {
    return undefined;
  }
}

const lockDir = join(JAEGER_DIR, ".building");
const LOCK_POLL_MS = 1_000;
const PIDLESS_LOCK_MS = 30_000;

/** When the lock folder was made (now when it is gone, so a vanished lock is never stale). */
function lockMadeAt() {
  try {
    return statSync(lockDir).mtimeMs;
  } catch {
    return Date.now();
  }
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}

/** Sleeps without an event loop (this script is synchronous, run as its own process). */
function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Runs `action` holding the build lock: waits while another live process holds it (saying so
 * once), takes over the lock of one that died.
 */
function withBuildLock(action) {
  mkdirSync(JAEGER_DIR, { recursive: true });
  let told = false;
  for (;;) {
    try {
      mkdirSync(lockDir);
      break;
    } catch (error) {
      if (error.code !== "EEXIST") throw error;
    }
    let holder = Number.NaN;
    try {
      holder = Number(readFileSync(join(lockDir, "pid"), "utf8"));
    } catch {
      // the holder has not written its pid yet, or has just released the lock
    }
    // A holder that died, or one that died before it wrote its pid (a lock without one for long).
    const pidless = !Number.isInteger(holder) && Date.now() - lockMadeAt() > PIDLESS_LOCK_MS;
    if ((Number.isInteger(holder) && !isAlive(holder)) || pidless) {
      rmSync(lockDir, { recursive: true, force: true });
      continue;
    }
    if (!told) {
      process.stderr.write(`keel: waiting for another process building Jaeger ${version}\n`);
      told = true;
    }
    sleepSync(LOCK_POLL_MS);
  }
  try {
    writeFileSync(join(lockDir, "pid"), String(process.pid));
    return action();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

/** True when the pinned Jaeger is built. */
export function jaegerInstalled() {
  return existsSync(JAEGER_BIN) && existsSync(stampFile) && readFileSync(stampFile, "utf8") === version;
}

/** Builds Jaeger unless it is in place; returns false (after saying why) when Go is missing. */
export function ensureJaeger() {
  if (jaegerInstalled()) return true;
  return withBuildLock(buildJaeger);
}

function buildJaeger() {
  // Another process may have built it while this one waited for the lock.
  if (jaegerInstalled()) return true;
  if (existsSync(userCopy)) {
    copyInto(userCopy, JAEGER_BIN);
    writeFileSync(stampFile, version);
    return true;
  }
  const go = goVersion();
  if (!go) {
    process.stderr.write(
      `keel: Go is not installed, so Jaeger ${version} (the trace receiver of \`keel dev --traces\` and the tracing test) is not built. Install Go 1.24+ (Debian: apt-get install golang-go, if its version is recent enough) and run \`npm run ensure\`.\n`,
    );
    return false;
  }
  const build = join(JAEGER_DIR, "build");
  rmSync(build, { recursive: true, force: true });
  mkdirSync(build, { recursive: true });
  const env = { ...process.env, GOCACHE: join(build, "cache"), GOFLAGS: "-mod=mod", GOTOOLCHAIN: "local" };
  const run = (args) => execFileSync("go", args, { cwd: build, env, stdio: ["ignore", "ignore", "inherit"] });
  const started = Date.now();
  process.stderr.write(
    `keel: building Jaeger ${version} with ${go} into .keel/tools/jaeger (several minutes, once)\n`,
  );
  run(["mod", "init", "keel-jaeger"]);
  run(["get", "-tool", `${MODULE}/cmd/jaeger@${version}`]);
  run(["build", "-trimpath", "-ldflags=-s -w", "-o", join(build, "jaeger"), `${MODULE}/cmd/jaeger`]);
  copyInto(join(build, "jaeger"), userCopy);
  copyInto(join(build, "jaeger"), JAEGER_BIN);
  rmSync(build, { recursive: true, force: true });
  writeFileSync(stampFile, version);
  process.stderr.write(`keel: Jaeger ${version} built in ${Math.round((Date.now() - started) / 1000)} s\n`);
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    ensureJaeger();
  } catch (error) {
    process.stderr.write(`keel: building Jaeger failed: ${error.message}\n`);
    process.exit(1);
  }
}
