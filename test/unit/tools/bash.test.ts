import * as fs from "node:fs/promises";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { runToolCall } from "../../../src/tools";
import type { BashDetails } from "../../../src/tools/bash";
import { assertPassableNames, commandEnvironment, isSecretName } from "../../../src/tools/environment";
import { groupAlive } from "../../../src/tools/process-group";
import { DEFAULT_SANDBOX_POLICY } from "../../../src/tools/sandbox";
import { MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES } from "../../../src/tools/truncate";
import { makeSandbox, removeSandbox, type Sandbox, textOf } from "./helpers";

let sandbox: Sandbox;
beforeEach(async () => {
  sandbox = await makeSandbox();
});
afterEach(async () => {
  await removeSandbox(sandbox);
});

/** True when `process.kill(-pgid, 0)` reports the group gone, or only unreaped zombies remain. */
function groupGone(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
  // The group still has entries: acceptable only if they are all zombies (this container's PID 1
  // does not reap orphans); `groupAlive` reads /proc to tell.
  return !groupAlive(pgid);
}

describe("bash", () => {
  it("runs in the workspace and returns combined output with exit code 0", async () => {
    const out = await sandbox.run("bash", { command: "pwd; echo out; echo err >&2" });
    expect(out.isError).toBe(false);
    const text = textOf(out);
    expect(text.split("\n")[0]).toBe("/workspace");
    expect(text).toContain("out");
    expect(text).toContain("err");
    expect((out.details as BashDetails).exitCode).toBe(0);
  });

  it("reports a non-zero exit code as an error with the output", async () => {
    const out = await sandbox.run("bash", { command: "echo partial; exit 3" });
    expect(out.isError).toBe(true);
    expect(textOf(out)).toBe("partial\n\nCommand exited with code 3");
    expect((out.details as BashDetails).exitCode).toBe(3);
  });

  it("says (no output) for silent success", async () => {
    expect(textOf(await sandbox.run("bash", { command: "true" }))).toBe("(no output)");
  });

  it("keeps the tail of long output and saves the full output in the scratch area", async () => {
    const total = MAX_OUTPUT_LINES + 1000;
    const out = await sandbox.run("bash", { command: `seq 1 ${total}` });
    expect(out.isError).toBe(false);
    const details = out.details as BashDetails;
    expect(details.fullOutputPath).toMatch(/^\.keel\/scratch\/bash-.*\.log$/);
    const text = textOf(out);
    expect(text.startsWith(`${total - MAX_OUTPUT_LINES + 1}\n`)).toBe(true);
    expect(text).toContain(
      `[Showing lines ${total - MAX_OUTPUT_LINES + 1}-${total} of ${total}. Full output: ${details.fullOutputPath}`,
    );
    const saved = await fs.readFile(path.join(sandbox.workspace.dir, details.fullOutputPath ?? ""), "utf8");
    expect(saved.split("\n").length).toBe(total + 1);
    // The saved file is readable with the read tool, and hidden from grep/find by .keel/.gitignore.
    const read = await sandbox.run("read", { path: details.fullOutputPath ?? "", offset: 1, limit: 1 });
    expect(textOf(read).startsWith("1\n")).toBe(true);
    expect(textOf(await sandbox.run("find", { pattern: "*.log" }))).toBe("No files found matching pattern");
  });

  it("truncates by bytes when lines are long", async () => {
    const out = await sandbox.run("bash", {
      command: "for i in $(seq 1 200); do printf 'x%.0s' $(seq 1 1000); echo; done",
    });
    const details = out.details as BashDetails;
    expect(details.truncation?.truncatedBy).toBe("bytes");
    expect(Buffer.byteLength(textOf(out).split("\n\n[")[0] ?? "")).toBeLessThanOrEqual(MAX_OUTPUT_BYTES);
    expect(textOf(out)).toContain("(50.0KB limit). Full output: .keel/scratch/");
  });

  it("kills the whole process group on timeout", async () => {
    const started = Date.now();
    const out = await sandbox.run("bash", { command: "sleep 60 & sleep 60; wait", timeout: 0.5 });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(out.isError).toBe(true);
    expect(textOf(out)).toContain("Command timed out after 0.5 seconds");
    expect((out.details as BashDetails).timedOut).toBe(true);
  });

  /**
   * The process-group tests below look at the command's process group from the worker's side, so
   * they run without isolation (as with KEEL_SANDBOX=off); under bwrap the group is bwrap's, and
   * sandbox.test.ts checks that an abort leaves nothing of the sandbox behind.
   */
  const withoutIsolation = async () => {
    await removeSandbox(sandbox);
    sandbox = await makeSandbox({ ...DEFAULT_SANDBOX_POLICY, isolation: "off" });
  };

  /** Starts `command` (which must write its pid to ./pgid), aborts it once running, returns its pgid. */
  async function abortRunning(command: string): Promise<{ pgid: number; text: string; abortMs: number }> {
    const controller = new AbortController();
    const running = sandbox.run("bash", { command }, controller.signal);
    let pgid = 0;
    for (let i = 0; i < 100 && !pgid; i++) {
      await sleep(20);
      pgid = Number(await fs.readFile(path.join(sandbox.workspace.dir, "pgid"), "utf8").catch(() => "0"));
    }
    await sleep(100);
    expect(groupAlive(pgid)).toBe(true);
    const started = Date.now();
    controller.abort();
    const out = await running;
    expect(out.isError).toBe(true);
    return { pgid, text: textOf(out), abortMs: Date.now() - started };
  }

  it("on abort, kills `sleep 60 & sleep 60; wait` and the group is gone (ESRCH)", async () => {
    await withoutIsolation();
    const { pgid, text, abortMs } = await abortRunning("echo $$ > pgid; sleep 60 & sleep 60; wait");
    expect(abortMs).toBeLessThan(5000);
    expect(text).toContain("Command aborted");
    expect(() => process.kill(-pgid, 0)).toThrow(expect.objectContaining({ code: "ESRCH" }));
  });

  it("on abort, kills the command and nested children: no living process of its group survives", async () => {
    await withoutIsolation();
    const pidFile = path.join(sandbox.workspace.dir, "pgid");
    const controller = new AbortController();
    const running = sandbox.run(
      "bash",
      { command: `echo $$ > pgid; sleep 60 & sleep 60 & (sleep 60; echo never) & sleep 60; wait` },
      controller.signal,
    );
    let pgid = 0;
    for (let i = 0; i < 100 && !pgid; i++) {
      await sleep(20);
      pgid = Number(await fs.readFile(pidFile, "utf8").catch(() => "0"));
    }
    expect(pgid).toBeGreaterThan(0);
    await sleep(100);
    expect(groupAlive(pgid)).toBe(true);
    const started = Date.now();
    controller.abort();
    const out = await running;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(out.isError).toBe(true);
    expect(textOf(out)).toContain("Command aborted");
    expect(groupGone(pgid)).toBe(true);
  });

  it("also stops children that ignore SIGTERM (SIGKILL after the grace period)", async () => {
    await withoutIsolation();
    const controller = new AbortController();
    const running = sandbox.run(
      "bash",
      { command: "echo $$ > pgid; (trap '' TERM; sleep 60) & wait" },
      controller.signal,
    );
    await sleep(300);
    const pgid = Number(await fs.readFile(path.join(sandbox.workspace.dir, "pgid"), "utf8"));
    controller.abort();
    await running;
    expect(groupGone(pgid)).toBe(true);
  }, 15_000);

  it("does not pass the worker's secrets to the command", async () => {
    process.env.KEEL_TEST_API_KEY = "sk-should-not-leak";
    process.env.AWS_SECRET_ACCESS_KEY = "aws-should-not-leak";
    process.env.TEMPORAL_ADDRESS = "temporal-should-not-leak";
    process.env.KEEL_VISIBLE_FLAG_OK = "ignored-anyway";
    process.env.PLAIN_SETTING = "visible";
    try {
      await removeSandbox(sandbox);
      // The whole host environment, secrets included: only PLAIN_SETTING may come through.
      sandbox = await makeSandbox({
        ...DEFAULT_SANDBOX_POLICY,
        passEnv: ["PLAIN_SETTING"],
        hostEnv: process.env,
      });
      const out = await sandbox.run("bash", { command: "env" });
      const text = textOf(out);
      expect(text).not.toContain("should-not-leak");
      expect(text).toContain("PLAIN_SETTING=visible");
      expect(text).toMatch(/^PATH=/m);
      expect(text).toMatch(/^HOME=/m);
    } finally {
      for (const name of [
        "KEEL_TEST_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "TEMPORAL_ADDRESS",
        "KEEL_VISIBLE_FLAG_OK",
        "PLAIN_SETTING",
      ]) {
        delete process.env[name];
      }
    }
  });

  it("classifies environment names", () => {
    for (const secret of [
      "OPENAI_API_KEY",
      "GITHUB_TOKEN",
      "DB_PASSWORD",
      "AWS_REGION",
      "TEMPORAL_NAMESPACE",
      "MY_CREDENTIALS",
    ]) {
      expect(isSecretName(secret)).toBe(true);
    }
    for (const kept of ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "EDITOR"])
      expect(isSecretName(kept)).toBe(false);
    const source = { PATH: "/bin", HOME: "/root", SECRET_X: "s", OTHER: "o", LANG: "C.UTF-8", KEPT: "k" };
    expect(commandEnvironment({ passEnv: ["KEPT"], sandboxed: false, source })).toEqual({
      PATH: "/bin",
      HOME: "/root",
      LANG: "C.UTF-8",
      KEPT: "k",
      PAGER: "cat",
      GIT_PAGER: "cat",
      GIT_TERMINAL_PROMPT: "0",
      TERM: "dumb",
    });
    expect(commandEnvironment({ passEnv: [], sandboxed: true, source })).toMatchObject({
      PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      HOME: "/tmp",
    });
    expect(() => assertPassableNames(["OPENAI_API_KEY"])).toThrow(/looks like a secret/);
    expect(() => assertPassableNames(["NOT A NAME"])).toThrow(/not an environment variable name/);
    expect(() => assertPassableNames(["NODE_ENV"])).not.toThrow();
  });

  it("streams partial output through onUpdate", async () => {
    const updates: string[] = [];
    await runToolCall(
      { name: "bash", arguments: { command: "echo first; sleep 0.6; echo second" } },
      { ...sandbox.ctx, onUpdate: (update) => updates.push(textOf({ ...update, isError: false })) },
    );
    expect(updates.some((text) => text.includes("first"))).toBe(true);
  });
});
