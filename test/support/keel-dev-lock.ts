/**
 * One `keel dev` stack at a time across jest's workers. Two stacks started side by side on one
 * machine interfered in CI (a run of one stack ended without the tool call its scenario makes; the
 * demo's edit of another was missing), a cause not found yet; until it is, the test files that
 * start a stack hold this lock from before their first start until after their last stop.
 *
 * The lock is a directory made atomically under the system's temporary folder, holding the
 * holder's pid: a holder that died without releasing it (a killed jest worker) is taken over.
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const LOCK_DIR = join(tmpdir(), "keel-dev-stack-test.lock");
const POLL_MS = 500;
/** Longer than every file that starts a stack takes, one after another. */
export const KEEL_DEV_LOCK_WAIT_MS = 15 * 60_000;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

/**
 * Waits until no other test file holds the lock, takes it, and returns its release. Throws
 * after KEEL_DEV_LOCK_WAIT_MS.
 */
export async function holdKeelDevLock(): Promise<() => void> {
  const deadline = Date.now() + KEEL_DEV_LOCK_WAIT_MS;
  for (;;) {
    try {
      mkdirSync(LOCK_DIR);
      writeFileSync(join(LOCK_DIR, "pid"), String(process.pid));
      return () => rmSync(LOCK_DIR, { recursive: true, force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    let holder: number | undefined;
    try {
      holder = Number(readFileSync(join(LOCK_DIR, "pid"), "utf8"));
    } catch {
      // Made a moment ago, its pid not written yet: wait for it like any holder.
    }
    const abandoned =
      holder === undefined
        ? Date.now() - (statSync(LOCK_DIR, { throwIfNoEntry: false })?.mtimeMs ?? 0) > 10_000
        : false;
    if (abandoned || (holder !== undefined && holder > 0 && !alive(holder))) {
      rmSync(LOCK_DIR, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`another test held ${LOCK_DIR} for too long`);
    await new Promise((done) => setTimeout(done, POLL_MS));
  }
}
