/**
 * The workspace quota (KEEL_WORKSPACE_MAX_MB): the file tools refuse exactly the write that would
 * cross it, a bash call cannot make one file cross it (RLIMIT_FSIZE at what is left) and is ended
 * when its files together do; a workspace over it can still delete. Each refusal leaves the next
 * call working.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { BashDetails } from "../../../src/tools/bash";
import {
  DEFAULT_PROCESS_LIMITS,
  DEFAULT_SANDBOX_POLICY,
  type SandboxPolicy,
} from "../../../src/tools/sandbox";
import { prepareCallQuota, quotaNotice, workspaceUsage } from "../../../src/tools/workspace-quota";
import { makeSandbox, removeSandbox, type Sandbox, textOf } from "./helpers";

const MIB = 1024 ** 2;
const QUOTA = 4 * MIB;
const policy = (workspaceBytes = QUOTA): SandboxPolicy => ({
  ...DEFAULT_SANDBOX_POLICY,
  limits: { ...DEFAULT_PROCESS_LIMITS, workspaceBytes },
});

let sandbox: Sandbox;
beforeEach(async () => {
  sandbox = await makeSandbox(policy());
});
afterEach(async () => {
  await removeSandbox(sandbox);
});

const usage = () => workspaceUsage(sandbox.workspace.dir);
const exists = (name: string) =>
  fs.stat(path.join(sandbox.workspace.dir, name)).then(
    () => true,
    () => false,
  );

describe("usage", () => {
  test("counts files by their length, a hard-linked file once, links not followed", async () => {
    const dir = sandbox.workspace.dir;
    const base = await usage();
    await fs.writeFile(path.join(dir, "a"), Buffer.alloc(100_000));
    await fs.link(path.join(dir, "a"), path.join(dir, "a2"));
    await fs.symlink(sandbox.outside, path.join(dir, "out"));
    const grown = (await usage()) - base;
    expect(grown).toBeGreaterThanOrEqual(100_000);
    expect(grown).toBeLessThan(100_000 + 1024);
  });
});

describe("the file tools", () => {
  test("write: the write that would cross the quota is refused, naming the limit and the usage; nothing is left of it", async () => {
    const first = await sandbox.run("write", { path: "a.txt", content: "x".repeat(3 * MIB) });
    expect(first.isError).toBe(false);
    const refused = await sandbox.run("write", { path: "b.txt", content: "y".repeat(MIB + 1) });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(
      /^Cannot write b\.txt: the workspace is limited to 4 MB and holds 3(\.0)? MB; this write would add 1 MB\. Delete files to write more\./,
    );
    expect(await exists("b.txt")).toBe(false);
    // What fits still goes in, and so does an overwrite that shrinks a file.
    expect((await sandbox.run("write", { path: "b.txt", content: "y".repeat(900 * 1024) })).isError).toBe(
      false,
    );
    expect((await sandbox.run("write", { path: "a.txt", content: "small" })).isError).toBe(false);
    expect((await sandbox.run("write", { path: "c.txt", content: "z".repeat(2 * MIB) })).isError).toBe(false);
    expect(await usage()).toBeLessThanOrEqual(QUOTA);
  });

  test("write over an existing file counts only its growth", async () => {
    await sandbox.run("write", { path: "a.txt", content: "x".repeat(3 * MIB) });
    const grown = await sandbox.run("write", { path: "a.txt", content: "x".repeat(3 * MIB + 512 * 1024) });
    expect(grown.isError).toBe(false);
    const refused = await sandbox.run("write", { path: "a.txt", content: "x".repeat(4 * MIB + 1) });
    expect(textOf(refused)).toMatch(/the workspace is limited to 4 MB/);
    expect((await fs.stat(path.join(sandbox.workspace.dir, "a.txt"))).size).toBe(3 * MIB + 512 * 1024);
  });

  test("edit: a change that grows the workspace past the quota is refused; the file is unchanged", async () => {
    await sandbox.run("write", { path: "a.txt", content: `${"x".repeat(4 * MIB - 8192)}\nMARK\n` });
    const refused = await sandbox.run("edit", {
      path: "a.txt",
      oldText: "MARK",
      newText: "y".repeat(16_384),
    });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/^Cannot write a\.txt: the workspace is limited to 4 MB/);
    expect(await fs.readFile(path.join(sandbox.workspace.dir, "a.txt"), "utf8")).toMatch(/MARK\n$/);
    expect((await sandbox.run("edit", { path: "a.txt", oldText: "MARK", newText: "done" })).isError).toBe(
      false,
    );
  });
});

describe("bash", () => {
  test("one file cannot cross the quota: the kernel refuses it, the result says why, the next call runs", async () => {
    expect(textOf(await sandbox.run("bash", { command: "head -c 3M /dev/zero > a && echo ok" }))).toBe("ok");
    const out = await sandbox.run("bash", {
      command: "head -c 3M /dev/zero > b",
    });
    expect(out.isError).toBe(true);
    const text = textOf(out);
    expect(text).toMatch(
      /\[sandbox limit: the workspace is limited to 4 MB; it holds 4(\.0)? MB\. Delete files to write more\.\]$/,
    );
    expect(text).not.toMatch(/files are limited to/);
    expect(await usage()).toBeLessThanOrEqual(QUOTA);
    const next = await sandbox.run("bash", { command: "rm b && echo removed" });
    expect(textOf(next)).toBe("removed");
  });

  test("many files: the call is ended when their total crosses the quota", async () => {
    const out = await sandbox.run("bash", {
      command: "for i in $(seq 200); do head -c 256K /dev/zero > f$i; sleep 0.05; done; echo finished",
      timeout: 60,
    });
    expect(out.isError).toBe(true);
    const text = textOf(out);
    expect(text).not.toMatch(/finished/);
    expect(text).toMatch(
      /\[sandbox limit: the workspace is limited to 4 MB; it holds [\d.]+ MB\. Delete files to write more\.\]$/,
    );
    // Slack: what the loop wrote between two measurements (about 1.3 MB a second here).
    expect(await usage()).toBeLessThan(QUOTA + 4 * MIB);
  }, 30_000);

  test("a workspace over the quota gets no file size at all, and deleting still works", async () => {
    await fs.writeFile(path.join(sandbox.workspace.dir, "big"), Buffer.alloc(5 * MIB));
    const refused = await sandbox.run("bash", { command: "echo x > new; echo status=$?" });
    // bash itself writes the redirection: SIGXFSZ ends it (128 + 25).
    expect((refused.details as BashDetails).exitCode).toBe(153);
    expect(textOf(refused)).toMatch(
      /\[sandbox limit: the workspace is limited to 4 MB; it holds 5(\.0)? MB\./,
    );
    const removed = await sandbox.run("bash", { command: "rm big && touch empty && echo ok" });
    expect(textOf(removed)).toBe("ok");
    expect((removed.details as BashDetails).exitCode).toBe(0);
    expect((await sandbox.run("bash", { command: "echo x > new && cat new" })).isError).toBe(false);
  });

  test("a call under the quota gets its usual file-size limit and no notice", async () => {
    const quota = await prepareCallQuota(sandbox.workspace.dir, policy(64 * 1024 ** 3).limits);
    expect(quota.boundsFileSize).toBe(false);
    expect(quota.limits.fileSizeBytes).toBe(DEFAULT_PROCESS_LIMITS.fileSizeBytes);
    const out = await sandbox.run("bash", { command: "head -c 1M /dev/zero > a && echo ok" });
    expect(textOf(out)).toBe("ok");
  });
});

test("the notice", () => {
  expect(quotaNotice(2048 * MIB, 2049.5 * MIB)).toBe(
    "[sandbox limit: the workspace is limited to 2048 MB; it holds 2049.5 MB. Delete files to write more.]",
  );
});

test("du is on the worker (the fallback walk is slower)", () => {
  expect(execFileSync("du", ["--version"]).toString()).toMatch(/du/);
});
