/**
 * Leftover siblings of workspaces (staging and moved-aside copies) are removed when the process
 * of this host that made them is gone, and only then; links inside are unlinked, never followed.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { siblingPathOf, sweepFolder, sweepLeftoverSiblings } from "../../../src/tools/workspace-siblings";
import { tempDirPerTest } from "../../support/temp-dir";

const tempDir = tempDirPerTest("keel-siblings-");

/** The pid of a process that has exited (and was reaped). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "0"]);
  return child.pid ?? 0;
}

/** `siblingPathOf` with its pid replaced: as made by the process `pid` of this host. */
function siblingOfPid(dir: string, purpose: Parameters<typeof siblingPathOf>[1], pid: number): string {
  return siblingPathOf(dir, purpose).replace(`-${process.pid}-`, `-${pid}-`);
}

test("siblings left by a dead process of this host are removed; live, own, foreign and workspace entries stay", async () => {
  const host = join(tempDir(), "host");
  mkdirSync(host);
  writeFileSync(join(host, "keep.txt"), "host file\n");
  const root = join(tempDir(), "root");
  const workspace = join(root, "tenant", "session");
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(workspace, "a.txt"), "current copy\n");
  writeFileSync(`${workspace}.lock`, "{}");

  const dead = deadPid();
  const live = spawn("sleep", ["30"]);
  try {
    const leftovers = (["stale", "evicted", "replaced", "restore", "staging"] as const).map((purpose) =>
      siblingOfPid(workspace, purpose, dead),
    );
    for (const leftover of leftovers) {
      mkdirSync(join(leftover, "nested"), { recursive: true });
      writeFileSync(join(leftover, "nested", "old.txt"), "old copy\n");
      symlinkSync(host, join(leftover, "host-link"));
    }
    const ownBackgroundRemoval = siblingPathOf(workspace, "stale");
    const liveProcess = siblingOfPid(workspace, "restore", live.pid ?? 0);
    const otherHost = `${workspace}.stale-00000000-${dead}-abcdef`;
    for (const kept of [ownBackgroundRemoval, liveProcess, otherHost]) mkdirSync(kept);

    // Fresh siblings (all of these) are kept by the default age, whatever their pid says.
    expect(await sweepLeftoverSiblings(root)).toEqual([]);
    const swept = await sweepLeftoverSiblings(root, { minAgeMs: 0 });

    expect(swept.sort()).toEqual([...leftovers].sort());
    expect(readdirSync(join(root, "tenant")).sort()).toEqual(
      [
        "session",
        "session.lock",
        ...[ownBackgroundRemoval, liveProcess, otherHost].map((p) => basename(p)),
      ].sort(),
    );
    expect(readFileSync(join(workspace, "a.txt"), "utf8")).toBe("current copy\n");
    expect(readFileSync(join(host, "keep.txt"), "utf8")).toBe("host file\n");
    expect(await sweepLeftoverSiblings(root, { minAgeMs: 0 })).toEqual([]);
  } finally {
    live.kill("SIGKILL");
  }
});

test("a sibling with this process's pid made before it started was left by an earlier life (a container's pid 1)", async () => {
  const workspace = join(tempDir(), "root", "tenant", "session");
  const earlierLife = siblingPathOf(workspace, "replaced");
  mkdirSync(earlierLife, { recursive: true });
  const root = join(tempDir(), "root");
  expect(await sweepLeftoverSiblings(root, { minAgeMs: 0 })).toEqual([]);
  expect(await sweepLeftoverSiblings(root, { minAgeMs: 0, processStartedMs: Date.now() + 1_000 })).toEqual([
    earlierLife,
  ]);
});

test("a runner's root, whose sessions' folders are directly in it, is swept by sweepFolder", async () => {
  const root = join(tempDir(), "runner-root");
  const session = join(root, "session");
  mkdirSync(session, { recursive: true });
  writeFileSync(join(session, "a.txt"), "current copy\n");
  const killedRestore = siblingOfPid(session, "restore", deadPid());
  mkdirSync(join(killedRestore, "half"), { recursive: true });
  const runningRestore = siblingPathOf(session, "restore");
  mkdirSync(runningRestore);

  expect(await sweepFolder(root)).toEqual([]);
  expect(await sweepFolder(root, { minAgeMs: 0 })).toEqual([killedRestore]);
  expect(readdirSync(root).sort()).toEqual(["session", basename(runningRestore)].sort());
  expect(readFileSync(join(session, "a.txt"), "utf8")).toBe("current copy\n");
});

test("a root that does not exist yet sweeps nothing", async () => {
  expect(await sweepLeftoverSiblings(join(tempDir(), "missing"))).toEqual([]);
});
