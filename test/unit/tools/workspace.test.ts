import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import {
  acquireWorkspaceLock,
  lockPathOf,
  prepareWorkspace,
  WorkspaceBusyError,
  workspaceFor,
} from "../../../src/tools/workspace";

let base: string;
beforeEach(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(tmpdir(), "keel-ws-")));
});
afterEach(async () => {
  await fs.rm(base, { recursive: true, force: true });
});

describe("workspaceFor", () => {
  it("places a session's workspace under root/tenant/session", () => {
    expect(workspaceFor("/srv/ws", "acme", "s-1").dir).toBe("/srv/ws/acme/s-1");
  });

  it.each([
    ["..", "s"],
    ["t", ".."],
    ["t/x", "s"],
    ["t", "a/../../b"],
    ["", "s"],
    ["t", ""],
    ["t", "s\0"],
    ["t", "-rf"],
    ["t", "x".repeat(129)],
  ])("rejects invalid ids (%j, %j)", (tenant, session) => {
    expect(() => workspaceFor(base, tenant, session)).toThrow(/Invalid (tenant|session) id/);
  });
});

describe("prepareWorkspace", () => {
  it("creates an empty workspace once and keeps it on later calls", async () => {
    const ws = workspaceFor(base, "t", "s");
    expect(await prepareWorkspace(ws)).toEqual({ created: true });
    await fs.writeFile(path.join(ws.dir, "kept.txt"), "x");
    expect(await prepareWorkspace(ws, { type: "directory", path: "/nonexistent" })).toEqual({
      created: false,
    });
    expect(await fs.readdir(ws.dir)).toEqual(["kept.txt"]);
  });

  it("copies a local directory, symlinks copied as links", async () => {
    const source = path.join(base, "source");
    await fs.mkdir(path.join(source, "sub"), { recursive: true });
    await fs.writeFile(path.join(source, "sub", "f.txt"), "hello");
    await fs.symlink("sub/f.txt", path.join(source, "link"));
    const ws = workspaceFor(path.join(base, "root"), "t", "s");
    await prepareWorkspace(ws, { type: "directory", path: source });
    expect(await fs.readFile(path.join(ws.dir, "sub", "f.txt"), "utf8")).toBe("hello");
    expect(await fs.readlink(path.join(ws.dir, "link"))).toBe("sub/f.txt");
  });

  it("clones a git repository (a local bare repo), optionally at a branch", async () => {
    const git = (cwd: string, ...args: string[]) =>
      execFileSync("git", args, {
        cwd,
        env: {
          ...process.env,
          GIT_AUTHOR_NAME: "t",
          GIT_AUTHOR_EMAIL: "t@e",
          GIT_COMMITTER_NAME: "t",
          GIT_COMMITTER_EMAIL: "t@e",
        },
      });
    const work = path.join(base, "work");
    await fs.mkdir(work);
    git(work, "init", "-q", "-b", "main");
    await fs.writeFile(path.join(work, "README.md"), "main branch\n");
    git(work, "add", ".");
    git(work, "commit", "-q", "-m", "init");
    git(work, "checkout", "-q", "-b", "feature");
    await fs.writeFile(path.join(work, "README.md"), "feature branch\n");
    git(work, "commit", "-q", "-am", "feature");
    const bare = path.join(base, "repo.git");
    git(base, "clone", "-q", "--bare", work, bare);

    const main = workspaceFor(path.join(base, "root"), "t", "main");
    await prepareWorkspace(main, { type: "git", url: bare, ref: "main" });
    expect(await fs.readFile(path.join(main.dir, "README.md"), "utf8")).toBe("main branch\n");
    const feature = workspaceFor(path.join(base, "root"), "t", "feature");
    await prepareWorkspace(feature, { type: "git", url: bare, ref: "feature" });
    expect(await fs.readFile(path.join(feature.dir, "README.md"), "utf8")).toBe("feature branch\n");
  });

  it("fails cleanly for an unreachable repository and leaves nothing behind", async () => {
    const ws = workspaceFor(path.join(base, "root"), "t", "s");
    await expect(prepareWorkspace(ws, { type: "git", url: path.join(base, "missing.git") })).rejects.toThrow(
      /git clone failed/,
    );
    expect(await fs.readdir(path.join(base, "root", "t"))).toEqual([]);
    await expect(prepareWorkspace(ws, { type: "git", url: "--upload-pack=touch /tmp/x" })).rejects.toThrow(
      /must not start/,
    );
  });
});

describe("workspace lock", () => {
  it("is exclusive between owners and released on demand", async () => {
    const ws = workspaceFor(base, "t", "s");
    const lock = await acquireWorkspaceLock(ws, "run-1");
    expect(JSON.parse(await fs.readFile(lockPathOf(ws), "utf8"))).toMatchObject({
      ownerId: "run-1",
      pid: process.pid,
    });
    await expect(acquireWorkspaceLock(ws, "run-2")).rejects.toBeInstanceOf(WorkspaceBusyError);
    // The same owner in the same process (a retried activity) gets it again.
    await expect(acquireWorkspaceLock(ws, "run-1")).resolves.toMatchObject({ holder: { ownerId: "run-1" } });
    await lock.release();
    await lock.release();
    const next = await acquireWorkspaceLock(ws, "run-2");
    await next.release();
  });

  it("takes over a lock whose process is dead", async () => {
    const ws = workspaceFor(base, "t", "s");
    const child = spawn("true");
    const deadPid = child.pid ?? 0;
    await new Promise((resolve) => child.once("exit", resolve));
    await fs.mkdir(path.dirname(lockPathOf(ws)), { recursive: true });
    const { hostname } = await import("node:os");
    await fs.writeFile(
      lockPathOf(ws),
      JSON.stringify({
        ownerId: "crashed",
        pid: deadPid,
        hostname: hostname(),
        acquiredAt: "2020-01-01T00:00:00Z",
      }),
    );
    const lock = await acquireWorkspaceLock(ws, "run-2");
    expect(lock.holder.ownerId).toBe("run-2");
    await lock.release();
  });

  it("does not release a lock someone else holds now", async () => {
    const ws = workspaceFor(base, "t", "s");
    const mine = await acquireWorkspaceLock(ws, "run-1");
    await fs.writeFile(
      lockPathOf(ws),
      JSON.stringify({ ownerId: "other", pid: process.pid, hostname: "elsewhere", acquiredAt: "now" }),
    );
    await mine.release();
    expect(JSON.parse(await fs.readFile(lockPathOf(ws), "utf8")).ownerId).toBe("other");
  });
});
