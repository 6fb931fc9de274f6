/**
 * The attacker of the race tests: another process that swaps one name in a directory between a
 * real entry and a symbolic link, by renames (`mv -T`), as fast as it can, while the code under
 * test opens that name again and again.
 */
import { type ChildProcess, spawn } from "node:child_process";

/** What stands at the name between two links: a file, or a directory holding some files. */
export type RealEntry = { file: string } | { dir: Record<string, string> };

export interface Swapper {
  /** Kills the swapping process and waits for it to exit. Idempotent. */
  stop(): Promise<void>;
}

/** A string as one single-quoted shell word. */
const shellWord = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

function makeReal(real: RealEntry): string {
  if ("file" in real) return `printf %s ${shellWord(real.file)} > .real`;
  const files = Object.entries(real.dir).map(
    ([name, content]) => `printf %s ${shellWord(content)} > .real/${shellWord(name)}`,
  );
  return ["mkdir -p .real", ...files].join("; ");
}

/**
 * Starts swapping `name` in `dir` between `real` and a link to `linkTarget` until stopped. A
 * file and a link replace each other in one rename; a directory and a link cannot (rename(2)
 * puts a directory only where nothing or an empty directory is), so there the name is moved
 * aside first and is missing for a moment.
 */
export function startSwapping(dir: string, name: string, real: RealEntry, linkTarget: string): Swapper {
  const loop =
    "file" in real
      ? `ln -sfn "$2" .link; mv -T .link "$3"; rm -rf .real; ${makeReal(real)}; mv -T .real "$3"`
      : `rm -rf .real .gone; ${makeReal(real)}; ln -sfn "$2" .link; mv -T "$3" .gone; mv -T .real "$3"; ` +
        `rm -rf .gone; mv -T "$3" .gone; mv -T .link "$3"`;
  const child: ChildProcess = spawn(
    "bash",
    ["-c", `cd "$1"; while :; do ${loop}; done 2>/dev/null`, "swap", dir, linkTarget, name],
    // Its own process group: stopping kills the loop's running mv/rm/ln with it, so nothing
    // changes the directory once stop() has resolved.
    { stdio: "ignore", detached: true },
  );
  let stopped: Promise<void> | undefined;
  return {
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        process.kill(-(child.pid as number), "SIGKILL");
      });
      return stopped;
    },
  };
}
