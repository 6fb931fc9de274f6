// Makes sure bubblewrap (`bwrap`), the tool sandbox, and socat (its bridge to the egress proxy of a
// run's network allowlist) are installed: Debian's package through
// apt-get when it is missing and this runs as root; otherwise says what to do. Idempotent and
// quiet when bwrap is already on the PATH. Never fails the caller: a worker without bwrap refuses
// to start by itself (unless KEEL_SANDBOX=off), with the same advice.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const onPath = (name) =>
  (process.env.PATH ?? "").split(":").some((dir) => dir && existsSync(join(dir, name)));

const ADVICE =
  "install it with `apt-get install -y bubblewrap` (as root), or run workers with KEEL_SANDBOX=off " +
  "(tool commands then run unsandboxed; see docs/tools.md)";

/** Returns true when bwrap is available afterwards. */
export function ensureBubblewrap() {
  if (onPath("bwrap") && onPath("socat")) return true;
  if (process.platform !== "linux") {
    process.stderr.write(
      "keel: bubblewrap (the tool sandbox) is Linux-only; run workers with KEEL_SANDBOX=off here\n",
    );
    return false;
  }
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (!isRoot || !onPath("apt-get")) {
    process.stderr.write(`keel: bubblewrap (bwrap, the tool sandbox) is not installed; ${ADVICE}\n`);
    return false;
  }
  process.stderr.write(
    "keel: installing bubblewrap and socat (the tool sandbox and its egress bridge) with apt-get\n",
  );
  const aptGet = (...args) =>
    execFileSync("apt-get", args, {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
  try {
    try {
      aptGet("install", "-y", "--no-install-recommends", "bubblewrap", "socat");
    } catch {
      // Package lists may be missing or stale on a fresh machine.
      aptGet("update");
      aptGet("install", "-y", "--no-install-recommends", "bubblewrap", "socat");
    }
  } catch (error) {
    const detail = String(error.stderr ?? error.message)
      .trim()
      .split("\n")
      .slice(-2)
      .join("\n");
    process.stderr.write(`keel: installing bubblewrap failed:\n${detail}\nkeel: ${ADVICE}\n`);
    return false;
  }
  return onPath("bwrap");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) ensureBubblewrap();
