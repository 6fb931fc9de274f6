/**
 * The workspace layer's helpers for restores and removals: files created exclusively with masked
 * modes, links created and read as text, and trees removed without following a link, also while
 * another process swaps a folder of the tree for a link to a host directory.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import {
  createFileAt,
  mkdirAt,
  readLinkAt,
  removeTree,
  symlinkAt,
  WorkspaceFs,
} from "../../../src/tools/workspace-fs";
import { tempDirPerTest } from "../../support/temp-dir";

const tempDir = tempDirPerTest("keel-wsfs-create-");
let ws: string;
let outside: string;
const CANARY = "host secret canary";

beforeEach(() => {
  const base = tempDir();
  ws = join(base, "ws");
  outside = join(base, "outside");
  mkdirSync(ws);
  mkdirSync(outside);
  writeFileSync(join(outside, "canary"), CANARY);
});

const atRoot = <T>(use: (rootFd: number) => Promise<T>) => WorkspaceFs.with(ws, (w) => use(w.rootFd));
const modeOf = (file: string) => statSync(file).mode & 0o7777;

describe("createFileAt", () => {
  test("writes the file with its mode, without setuid, setgid or sticky bits and without the umask", async () => {
    const stats = await atRoot((fd) => createFileAt(fd, "suid", Buffer.from("#!/bin/sh\n"), 0o6755));
    expect(modeOf(join(ws, "suid"))).toBe(0o755);
    expect(stats.size).toBe(10);
    await atRoot((fd) => createFileAt(fd, "open", Buffer.from(""), 0o1777));
    expect(modeOf(join(ws, "open"))).toBe(0o777);
  });

  test("a name that exists, a link to a host file included, is refused and the host file is untouched", async () => {
    symlinkSync(join(outside, "canary"), join(ws, "x"));
    await expect(atRoot((fd) => createFileAt(fd, "x", Buffer.from("pwned"), 0o644))).rejects.toMatchObject({
      code: "EEXIST",
    });
    expect(readFileSync(join(outside, "canary"), "utf8")).toBe(CANARY);
  });
});

describe("links and folders", () => {
  test("symlinkAt stores the text, readLinkAt reads it back without following it", async () => {
    await atRoot((fd) => symlinkAt(join(outside, "canary"), fd, "link"));
    expect(readlinkSync(join(ws, "link"))).toBe(join(outside, "canary"));
    writeFileSync(join(ws, "plain"), "not a link");
    expect(await atRoot((fd) => readLinkAt(fd, "link"))).toBe(join(outside, "canary"));
    expect(await atRoot((fd) => readLinkAt(fd, "plain"))).toBeUndefined();
    expect(await atRoot((fd) => readLinkAt(fd, "missing"))).toBeUndefined();
  });

  test("mkdirAt creates an owner-only folder and refuses one that exists", async () => {
    await atRoot((fd) => mkdirAt(fd, "d"));
    expect(modeOf(join(ws, "d"))).toBe(0o700);
    await expect(atRoot((fd) => mkdirAt(fd, "d"))).rejects.toMatchObject({ code: "EEXIST" });
  });
});

describe("removeTree", () => {
  test("removes a tree whose links name host files and folders, and nothing they name", async () => {
    mkdirSync(join(ws, "nested"));
    symlinkSync(outside, join(ws, "dir-link"));
    symlinkSync(outside, join(ws, "nested", "dir-link"));
    symlinkSync(join(outside, "canary"), join(ws, "file-link"));
    await removeTree(ws);
    expect(existsSync(ws)).toBe(false);
    expect(readdirSync(outside)).toEqual(["canary"]);
    await removeTree(ws); // already gone: nothing to do
  });

  test("a tree the agent made read-only is removed by a worker that is not root", () => {
    // Root's capabilities ignore permission bits: as root, the removal runs in a child process
    // without any (util-linux's setpriv), which meets the bits as any other owner does.
    const shared = tempDir();
    const script = `
      const fs = require("node:fs");
      const { removeTree } = require(process.argv[1]);
      const copy = process.argv[2] + "/copy";
      fs.mkdirSync(copy + "/sub/deeper", { recursive: true });
      fs.writeFileSync(copy + "/sub/deeper/f.txt", "x");
      for (const dir of [copy + "/sub/deeper", copy + "/sub", copy]) fs.chmodSync(dir, 0o555);
      removeTree(copy).then(
        () => process.stdout.write(fs.existsSync(copy) ? "kept" : "removed"),
        (error) => process.stdout.write("failed: " + error.code),
      );`;
    const node = [process.execPath, "--require", "tsx/cjs", "-e", script];
    const command =
      process.getuid?.() === 0 ? ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--", ...node] : node;
    try {
      const child = spawnSync(
        command[0] as string,
        [...command.slice(1), join(__dirname, "../../../src/tools/workspace-fs.ts"), shared],
        { encoding: "utf8" },
      );
      expect(child.stdout).toBe("removed");
    } finally {
      // What the removal left read-only must not stop this file's own cleanup.
      spawnSync("chmod", ["-R", "u+rwx", shared]);
    }
  });

  let swapper: ChildProcess | undefined;
  afterEach(async () => {
    const running = swapper;
    swapper = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill("SIGKILL");
    await exited;
  });

  test("a folder swapped for a link to a host directory while the tree goes is unlinked, never followed", async () => {
    const script = `
      const fs = require("node:fs");
      const [dir, target] = process.argv.slice(1);
      for (;;) {
        try {
          fs.mkdirSync(dir + "/.real/sub", { recursive: true });
          fs.writeFileSync(dir + "/.real/sub/f", "inside");
          fs.symlinkSync(target, dir + "/.link");
          fs.renameSync(dir + "/.link", dir + "/d");
          fs.rmSync(dir + "/d", { force: true });
          fs.renameSync(dir + "/.real", dir + "/d");
        } catch {}
      }`;
    swapper = spawn(process.execPath, ["-e", script, ws, outside], { stdio: "ignore" });
    let removed = 0;
    for (let i = 0; i < 400; i++) {
      mkdirSync(ws, { recursive: true });
      await removeTree(ws).then(
        () => removed++,
        () => undefined, // the swapper refilled a folder as it went: tried again next round
      );
    }
    expect(removed).toBeGreaterThan(0);
    expect(readdirSync(outside)).toEqual(["canary"]);
    expect(lstatSync(join(outside, "canary")).isFile()).toBe(true);
  });
});
