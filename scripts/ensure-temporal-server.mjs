#!/usr/bin/env node
// Builds the Temporal server (`go.temporal.io/server`, pinned in scripts/tool-versions.json under
// "go") from the Go module proxy into .keel/tools/temporal-server/: `temporal-server` (cmd/server:
// frontend, history, matching and worker services, one or more per process) and `temporal-sql-tool`
// (cmd/tools/sql: creates and upgrades the PostgreSQL schema, which it carries embedded). Only
// `npm run cluster` runs this (bench/cluster/): neither `npm run ensure` nor the tests need a
// self-hosted Temporal, and the build takes several CPU-minutes. The module has no replace
// directives, so a plain `go install module/cmd/…@version` builds it; it asks for a newer Go than
// the machine's may be, so GOTOOLCHAIN names the toolchain its go.mod wants (Go fetches it from the
// same proxy). Both binaries are built in one call (one shared build cache, private to the build
// and removed after it). The binaries are also kept per user, by version
// (`~/.cache/keel/temporal-server-<version>/`, or under XDG_CACHE_HOME), so another clone copies
// them instead of compiling again. Callers at the same time take turns through a lock folder.
// Idempotent and quiet when in place; exits 1 (saying why) when Go is missing or the build fails.
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const MODULE = "go.temporal.io/server";
const version = JSON.parse(readFileSync(join(root, "scripts/tool-versions.json"), "utf8")).go[MODULE];
/** The Go release the pinned server's go.mod requires (its `go` line); fetched by Go when not local. */
const GO_TOOLCHAIN = "go1.26.10";
export const TEMPORAL_SERVER_DIR = join(root, ".keel/tools/temporal-server");
/** `go install` names each binary after its package folder; they are kept under clearer names. */
const BINARIES = [
  { packagePath: "cmd/server", built: "server", name: "temporal-server" },
  { packagePath: "cmd/tools/sql", built: "sql", name: "temporal-sql-tool" },
];
export const TEMPORAL_SERVER_BIN = join(TEMPORAL_SERVER_DIR, "temporal-server");
export const TEMPORAL_SQL_TOOL_BIN = join(TEMPORAL_SERVER_DIR, "temporal-sql-tool");
const stampFile = join(TEMPORAL_SERVER_DIR, ".installed");
const userDir = join(
  process.env.XDG_CACHE_HOME || join(homedir(), ".cache"),
  "keel",
  `temporal-server-${version}`,
);
const lockDir = join(TEMPORAL_SERVER_DIR, ".building");

/** Copies `from` to `to` through a temporary name, so a half-written binary is never in place. */
function copyInto(from, to) {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, `${to}.partial`);
  chmodSync(`${to}.partial`, 0o755);
  renameSync(`${to}.partial`, to);
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}

/** Runs `action` holding the build lock; a lock whose holder died is taken over. */
function withBuildLock(action) {
  mkdirSync(TEMPORAL_SERVER_DIR, { recursive: true });
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
      // the holder has not written its pid yet
    }
    if (Number.isInteger(holder) && !isAlive(holder)) {
      rmSync(lockDir, { recursive: true, force: true });
      continue;
    }
    if (!told) {
      process.stderr.write(`keel: waiting for another process building the Temporal server ${version}\n`);
      told = true;
    }
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_000);
  }
  try {
    writeFileSync(join(lockDir, "pid"), String(process.pid));
    return action();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

/** True when the pinned server and SQL tool are in place. */
export function temporalServerInstalled() {
  return (
    BINARIES.every(({ name }) => existsSync(join(TEMPORAL_SERVER_DIR, name))) &&
    existsSync(stampFile) &&
    readFileSync(stampFile, "utf8") === version
  );
}

function build() {
  if (temporalServerInstalled()) return;
  if (BINARIES.every(({ name }) => existsSync(join(userDir, name)))) {
    for (const { name } of BINARIES) copyInto(join(userDir, name), join(TEMPORAL_SERVER_DIR, name));
    writeFileSync(stampFile, version);
    return;
  }
  try {
    execFileSync("go", ["version"], { stdio: "ignore" });
  } catch {
    throw new Error(
      `Go is not installed; the Temporal server ${version} of \`npm run cluster\` is built from its Go module. Install Go and run it again.`,
    );
  }
  const buildDir = join(TEMPORAL_SERVER_DIR, "build");
  rmSync(buildDir, { recursive: true, force: true });
  mkdirSync(buildDir, { recursive: true });
  const started = Date.now();
  process.stderr.write(
    `keel: building the Temporal server ${version} with ${GO_TOOLCHAIN} into .keel/tools/temporal-server (several CPU-minutes, once)\n`,
  );
  execFileSync(
    "go",
    [
      "install",
      "-trimpath",
      "-ldflags=-s -w",
      ...BINARIES.map(({ packagePath }) => `${MODULE}/${packagePath}@${version}`),
    ],
    {
      cwd: buildDir,
      stdio: ["ignore", "ignore", "inherit"],
      env: {
        ...process.env,
        // The variable wins over `go env -w GOTOOLCHAIN=local`, which would refuse the newer go.mod.
        GOTOOLCHAIN: GO_TOOLCHAIN,
        // Pure Go (its SQLite is modernc's): no C compiler needed, a static binary.
        CGO_ENABLED: "0",
        GOFLAGS: "-buildvcs=false",
        GOBIN: join(buildDir, "bin"),
        GOCACHE: join(buildDir, "cache"),
      },
    },
  );
  for (const { built, name } of BINARIES) {
    copyInto(join(buildDir, "bin", built), join(userDir, name));
    copyInto(join(buildDir, "bin", built), join(TEMPORAL_SERVER_DIR, name));
  }
  rmSync(buildDir, { recursive: true, force: true });
  writeFileSync(stampFile, version);
  process.stderr.write(
    `keel: Temporal server ${version} built in ${Math.round((Date.now() - started) / 1000)} s\n`,
  );
}

/** Builds (or copies from the per-user cache) the pinned server unless it is in place. */
export function ensureTemporalServer() {
  if (!temporalServerInstalled()) withBuildLock(build);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    ensureTemporalServer();
  } catch (error) {
    process.stderr.write(`keel: building the Temporal server failed: ${error.message}\n`);
    process.exit(1);
  }
}
