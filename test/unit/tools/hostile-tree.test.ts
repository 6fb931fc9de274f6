/**
 * The file tools against a workspace tree that fights back: links to host files and
 * directories, FIFOs, and names swapped between a real entry and a link by another process while
 * the tools run. The host side (`sandbox.outside`) holds canaries that must never be read,
 * listed or changed. The bash output spill's own attacks: bash-spill.test.ts.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { runToolCall } from "../../../src/tools";
import type { ToolOutput } from "../../../src/tools/types";
import { MAX_WALK_DEPTH } from "../../../src/tools/walk";
import { workspaceFor } from "../../../src/tools/workspace";
import { type Swapper, startSwapping } from "../../support/name-swapper";
import { makeSandbox, removeSandbox, type Sandbox, textOf } from "./helpers";

let sandbox: Sandbox;
let before: string;
const inWorkspace = (...parts: string[]) => path.join(sandbox.workspace.dir, ...parts);
const outside = (...parts: string[]) => path.join(sandbox.outside, ...parts);
/** What the host canaries hold or are named: none of it may appear in a tool's result. */
const SECRETS = ["top secret", "deep secret", "host-only"];

/** The text and the details of a result, where a leaked canary could show. */
const everything = (out: ToolOutput) => `${textOf(out)}\n${JSON.stringify(out.details ?? null)}`;
const expectNoSecret = (out: ToolOutput) => {
  for (const secret of SECRETS) expect(everything(out)).not.toContain(secret);
};

beforeEach(async () => {
  sandbox = await makeSandbox();
  // Names only the host directories have, so a listing of either shows it was listed.
  await fs.writeFile(outside("host-only.txt"), "top secret\n");
  await fs.writeFile(outside("nested", "host-only.txt"), "deep secret\n");
  before = await sandbox.snapshotOutside();
});
afterEach(async () => {
  expect(await sandbox.snapshotOutside()).toBe(before);
  await removeSandbox(sandbox);
});

describe("a link to a host file or directory", () => {
  beforeEach(async () => {
    await fs.symlink(outside("secret.txt"), inWorkspace("file-out"));
    await fs.symlink(outside("nested"), inWorkspace("dir-out"));
  });

  test.each([
    ["read", { path: "file-out" }, "file-out is a symbolic link to a location outside the workspace"],
    ["read", { path: "dir-out/deep.txt" }, "dir-out is a symbolic link to a location outside the workspace"],
    ["write", { path: "file-out", content: "pwned" }, "file-out is a symbolic link to a location outside"],
    ["write", { path: "dir-out/new.txt", content: "pwned" }, "dir-out is a symbolic link to a location"],
    ["edit", { path: "file-out", oldText: "top", newText: "pwned" }, "file-out is a symbolic link"],
    ["edit", { path: "dir-out/deep.txt", oldText: "deep", newText: "pwned" }, "dir-out is a symbolic link"],
    ["ls", { path: "dir-out" }, "dir-out is a symbolic link to a location outside the workspace"],
    ["grep", { pattern: "secret", path: "dir-out" }, "dir-out is a symbolic link"],
    ["grep", { pattern: "secret", path: "file-out" }, "file-out is a symbolic link"],
    ["find", { pattern: "*", path: "dir-out" }, "dir-out is a symbolic link"],
  ])("%s %j is refused", async (tool, args, message) => {
    const out = await sandbox.run(tool, args);
    expect(out.isError).toBe(true);
    expect(textOf(out)).toContain("refused");
    expect(textOf(out)).toContain(message);
    expectNoSecret(out);
  });

  test("ls lists the links by name; grep and find walk past them", async () => {
    expect(textOf(await sandbox.run("ls", {}))).toBe("dir-out@\nfile-out@");
    expect(textOf(await sandbox.run("grep", { pattern: "secret" }))).toBe("No matches found");
    expect(textOf(await sandbox.run("find", { pattern: "*" }))).toBe("No files found matching pattern");
  });
});

describe("a FIFO is refused without blocking the worker", () => {
  beforeEach(() => {
    execFileSync("mkfifo", [inWorkspace("pipe")]);
  });

  test.each([
    ["read", { path: "pipe" }, "not a regular file"],
    ["write", { path: "pipe", content: "x" }, "not a regular file"],
    ["edit", { path: "pipe", oldText: "a", newText: "b" }, "not a regular file"],
    ["grep", { pattern: "x", path: "pipe" }, "not a regular file"],
    ["ls", { path: "pipe" }, "Not a directory: pipe"],
    ["find", { pattern: "*", path: "pipe" }, "Not a directory: pipe"],
  ])(
    "%s %j",
    async (tool, args, message) => {
      const out = await sandbox.run(tool, args);
      expect(out.isError).toBe(true);
      expect(textOf(out)).toContain(message);
    },
    5_000,
  );
});

describe("names swapped between a real entry and a link to the host while the tools run", () => {
  const ROUNDS = 1500;
  /**
   * A race stops after this long even short of ROUNDS (after MIN_ROUNDS at least): on a loaded
   * machine the swapping process and the tools share the cores, and a test of three races must
   * end inside its timeout. The claim is the same: no round, however many ran, saw the host.
   */
  const RACE_BUDGET_MS = 12_000;
  const MIN_ROUNDS = 100;
  let swapper: Swapper | undefined;
  afterEach(async () => {
    await swapper?.stop();
    swapper = undefined;
  });

  /**
   * Runs the tool ROUNDS times while `name` swaps between `real` and a link to `target`. No
   * result may carry a canary; some must have found the real entry (the race was real).
   */
  async function race(
    name: string,
    real: Parameters<typeof startSwapping>[2],
    target: string,
    tool: string,
    args: Record<string, unknown>,
    foundInside: (out: ToolOutput) => boolean,
  ): Promise<void> {
    swapper = startSwapping(sandbox.workspace.dir, name, real, target);
    let inside = 0;
    const deadline = Date.now() + RACE_BUDGET_MS;
    for (let round = 0; round < ROUNDS && (round < MIN_ROUNDS || Date.now() < deadline); round++) {
      const out = await sandbox.run(tool, args);
      expectNoSecret(out);
      if (foundInside(out)) inside++;
    }
    await swapper.stop();
    expect(inside).toBeGreaterThan(0);
  }

  const fileSwap = { file: "inside top deep\n" };
  const dirSwap = { dir: { "secret.txt": "inside top\n", "deep.txt": "inside deep\n" } };
  const ok = (out: ToolOutput) => !out.isError;

  test("read never returns a host file", async () => {
    await race("x", fileSwap, outside("secret.txt"), "read", { path: "x" }, ok);
    await race("d", dirSwap, outside("nested"), "read", { path: "d/deep.txt" }, ok);
  }, 60_000);

  test("write never writes or creates a host file", async () => {
    await race("x", fileSwap, outside("secret.txt"), "write", { path: "x", content: "owned" }, ok);
    await race("d", dirSwap, outside("nested"), "write", { path: "d/deep.txt", content: "owned" }, ok);
    await race("d", dirSwap, outside(), "write", { path: "d/planted.txt", content: "owned" }, ok);
  }, 60_000);

  test("edit never reads or changes a host file", async () => {
    // A round that finds the file turns `top` (or `deep`) into `owned`; the swapper restores it.
    await race(
      "x",
      fileSwap,
      outside("secret.txt"),
      "edit",
      { path: "x", oldText: "top", newText: "owned" },
      ok,
    );
    const args = { path: "d/deep.txt", oldText: "deep", newText: "owned" };
    await race("d", dirSwap, outside("nested"), "edit", args, ok);
  }, 60_000);

  test("ls never lists a host directory", async () => {
    await race("d", dirSwap, outside("nested"), "ls", { path: "d" }, ok);
    await race("d", dirSwap, outside(), "ls", { path: "d" }, ok);
  }, 60_000);

  test("grep never searches a host file or directory", async () => {
    const found = (out: ToolOutput) => textOf(out).includes("inside");
    await race("d", dirSwap, outside("nested"), "grep", { pattern: "secret|inside", path: "d" }, found);
    await race("x", fileSwap, outside("secret.txt"), "grep", { pattern: "secret|inside" }, found);
    await race("d", dirSwap, outside("nested"), "grep", { pattern: "secret|inside" }, found);
  }, 90_000);

  test("find never lists a host directory", async () => {
    const found = (out: ToolOutput) => textOf(out).includes("d/");
    await race("d", dirSwap, outside("nested"), "find", { pattern: "*", path: "d" }, ok);
    await race("d", dirSwap, outside(), "find", { pattern: "*" }, found);
  }, 60_000);
});

describe("links and trees that stay inside", () => {
  test("a link a command made with an absolute /workspace target is followed inside", async () => {
    const made = await sandbox.run("bash", {
      command: "mkdir src && echo hi > src/a.txt && ln -s /workspace/src abs",
    });
    expect(made.isError).toBe(false);
    expect(textOf(await sandbox.run("read", { path: "abs/a.txt" }))).toBe("hi");
    expect(textOf(await sandbox.run("write", { path: "abs/b.txt", content: "new" }))).toContain("src/b.txt");
    expect(textOf(await sandbox.run("find", { pattern: "*.txt", path: "abs" }))).toBe("a.txt\nb.txt");
  });

  test(`grep and find do not enter directories more than ${MAX_WALK_DEPTH} levels deep`, async () => {
    const levels = (count: number) => Array.from({ length: count }, () => "d").join("/");
    await fs.mkdir(inWorkspace(levels(MAX_WALK_DEPTH + 1)), { recursive: true });
    await fs.writeFile(inWorkspace(levels(MAX_WALK_DEPTH), "reached.txt"), "x\n");
    await fs.writeFile(inWorkspace(levels(MAX_WALK_DEPTH + 1), "too-deep.txt"), "x\n");
    expect(textOf(await sandbox.run("find", { pattern: "*.txt" }))).toBe(
      `${levels(MAX_WALK_DEPTH)}/reached.txt`,
    );
    expect(textOf(await sandbox.run("grep", { pattern: "x" }))).toBe(
      `${levels(MAX_WALK_DEPTH)}/reached.txt:1: x`,
    );
  });

  test("the workspace's host path, as configured or as its real path, names the workspace", async () => {
    await fs.writeFile(inWorkspace("a.txt"), "hi\n");
    const alias = path.join(sandbox.base, "alias");
    await fs.symlink(path.join(sandbox.base, "root"), alias);
    const ctx = { ...sandbox.ctx, workspace: workspaceFor(alias, "tenant1", "session1") };
    const read = (p: string) => runToolCall({ name: "read", arguments: { path: p } }, ctx);
    expect(textOf(await read(`${alias}/tenant1/session1/a.txt`))).toBe("hi");
    expect(textOf(await read(`${sandbox.workspace.dir}/a.txt`))).toBe("hi");
    const out = await read(`${sandbox.workspace.dir}/../../../outside/secret.txt`);
    expect(textOf(out)).toContain("refused: it points outside the workspace");
  });
});
