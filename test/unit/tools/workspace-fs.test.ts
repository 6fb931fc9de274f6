/**
 * The workspace file layer against a hostile tree: links out of the workspace (direct, chained,
 * relative, absolute, dangling), FIFOs, and names swapped between a file and a link by another
 * process while the layer reads and writes them. Each attack's target is a canary outside the
 * workspace that must never be read, written or created.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readDirAt, WorkspaceFs, WorkspacePathError } from "../../../src/tools/workspace-fs";
import { type Swapper, startSwapping } from "../../support/name-swapper";
import { tempDirPerTest } from "../../support/temp-dir";

const tempDir = tempDirPerTest("keel-wsfs-");
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
  writeFileSync(join(ws, "a.txt"), "inside a");
  mkdirSync(join(ws, "dir"));
  writeFileSync(join(ws, "dir", "b.txt"), "inside b");
});

const open = <T>(use: (workspace: WorkspaceFs) => Promise<T>) => WorkspaceFs.with(ws, use);
const read = (path: string, links: "inside" | "refuse" = "inside") =>
  open((workspace) => workspace.readFile(path, { links })).then((data) => data.toString());

describe("paths", () => {
  test("relative, /workspace and `..` that stays inside resolve to the same file", async () => {
    expect(await read("a.txt")).toBe("inside a");
    expect(await read("/workspace/a.txt")).toBe("inside a");
    expect(await read("dir/../a.txt")).toBe("inside a");
    expect(await read("./dir/./b.txt")).toBe("inside b");
  });

  test.each([
    ["../outside/canary", "outside the workspace"],
    ["dir/../../outside/canary", "outside the workspace"],
    ["dir/../dir/../../outside/canary", "outside the workspace"],
    ["/etc/passwd", "outside the workspace"],
    ["a\0b", "NUL"],
    ["", "empty"],
  ])("%j is refused", async (path, reason) => {
    await expect(read(path)).rejects.toThrow(WorkspacePathError);
    await expect(read(path)).rejects.toThrow(reason);
  });
});

describe("links", () => {
  test("links that stay inside are followed with `inside` and refused with `refuse`", async () => {
    symlinkSync("dir/b.txt", join(ws, "rel"));
    symlinkSync("/workspace/a.txt", join(ws, "abs"));
    symlinkSync("dir", join(ws, "dirlink"));
    symlinkSync("../a.txt", join(ws, "dir", "up"));
    expect(await read("rel")).toBe("inside b");
    expect(await read("abs")).toBe("inside a");
    expect(await read("dirlink/b.txt")).toBe("inside b");
    expect(await read("dirlink/up")).toBe("inside a");
    await expect(read("rel", "refuse")).rejects.toThrow("is a symbolic link");
    await expect(read("dirlink/b.txt", "refuse")).rejects.toThrow("is a symbolic link");
  });

  test.each([
    ["an absolute link to a host file", () => symlinkSync(join(outside, "canary"), join(ws, "x")), "x"],
    ["a relative link climbing out", () => symlinkSync("../outside/canary", join(ws, "x")), "x"],
    ["a link to a host directory on the way", () => symlinkSync(outside, join(ws, "x")), "x/canary"],
    [
      "a chain whose second link climbs out",
      () => {
        symlinkSync("dir/l2", join(ws, "x"));
        symlinkSync("../../outside/canary", join(ws, "dir", "l2"));
      },
      "x",
    ],
    [
      "`d/l1 -> ..` then a path through it twice",
      () => symlinkSync("..", join(ws, "dir", "l1")),
      "dir/l1/dir/l1/../outside/canary",
    ],
  ])("%s is refused and the canary is never read", async (_name, plant, path) => {
    plant();
    await expect(read(path)).rejects.toThrow(WorkspacePathError);
  });

  test("a link loop ends with a refusal", async () => {
    symlinkSync("y", join(ws, "x"));
    symlinkSync("x", join(ws, "y"));
    await expect(read("x")).rejects.toThrow("too many symbolic links");
  });

  test("writing through a link to a host file is refused and the host file is unchanged", async () => {
    symlinkSync(join(outside, "canary"), join(ws, "x"));
    await expect(open((w) => w.writeFile("x", "pwned", { links: "inside" }))).rejects.toThrow(
      WorkspacePathError,
    );
    await expect(open((w) => w.writeFile("x", "pwned", { links: "refuse" }))).rejects.toThrow(
      "is a symbolic link",
    );
    symlinkSync(outside, join(ws, "d"));
    await expect(open((w) => w.writeFile("d/new", "pwned", { links: "inside" }))).rejects.toThrow(
      WorkspacePathError,
    );
    expect(readFileSync(join(outside, "canary"), "utf8")).toBe(CANARY);
    expect(existsSync(join(outside, "new"))).toBe(false);
  });

  test("remove takes the link, never what it points at", async () => {
    symlinkSync(outside, join(ws, "d"));
    await open((w) => w.remove("d"));
    expect(existsSync(join(ws, "d"))).toBe(false);
    expect(readFileSync(join(outside, "canary"), "utf8")).toBe(CANARY);
  });

  test("mkdirp refuses a link on the way and creates nothing outside", async () => {
    symlinkSync(outside, join(ws, "d"));
    await expect(open((w) => w.mkdirp("d/sub"))).rejects.toThrow("is a symbolic link");
    expect(existsSync(join(outside, "sub"))).toBe(false);
  });
});

describe("files", () => {
  test("a FIFO is refused without blocking the worker", async () => {
    execFileSync("mkfifo", [join(ws, "pipe")]);
    await expect(read("pipe")).rejects.toThrow("not a regular file");
  });

  test("a directory is not a file", async () => {
    await expect(read("dir")).rejects.toMatchObject({ code: "EISDIR" });
  });

  test("new files never get setuid, setgid or sticky bits; parents are created", async () => {
    await open((w) => w.writeFile("new/deep/f", "x", { links: "refuse", mode: 0o7755 }));
    expect(statSync(join(ws, "new/deep/f")).mode & 0o7777).toBe(0o755 & ~process.umask());
  });

  test("openFile `writable` reads and writes one existing file, and never creates one", async () => {
    await open(async (w) => {
      const { handle } = await w.openFile("a.txt", { links: "inside", writable: true });
      try {
        expect((await handle.readFile()).toString()).toBe("inside a");
        await handle.write("INSIDE", 0, "utf8");
      } finally {
        await handle.close();
      }
      await expect(w.openFile("new.txt", { links: "inside", writable: true })).rejects.toMatchObject({
        code: "ENOENT",
      });
    });
    expect(readFileSync(join(ws, "a.txt"), "utf8")).toBe("INSIDE a");
    expect(existsSync(join(ws, "new.txt"))).toBe(false);
  });

  test("openForWrite `readable` reads what is there before writing; a FIFO is refused", async () => {
    execFileSync("mkfifo", [join(ws, "pipe")]);
    await open(async (w) => {
      const existing = await w.openForWrite("a.txt", { links: "inside", readable: true });
      try {
        expect(existing.created).toBe(false);
        expect((await existing.handle.readFile()).toString()).toBe("inside a");
      } finally {
        await existing.handle.close();
      }
      await expect(w.openForWrite("pipe", { links: "inside", readable: true })).rejects.toThrow(
        "not a regular file",
      );
    });
  });

  test("listing a held directory", async () => {
    const names = await open((w) =>
      w.withDir("dir", { links: "refuse" }, async (fd) => (await readDirAt(fd)).map((entry) => entry.name)),
    );
    expect(names).toEqual(["b.txt"]);
  });
});

describe("names swapped by another process while the layer works", () => {
  let swapper: Swapper | undefined;
  const stopSwapping = async () => {
    await swapper?.stop();
    swapper = undefined;
  };
  afterEach(stopSwapping);

  /** Swaps `name` between a real entry and a link to `linkTarget`, atomically, as fast as it can. */
  function swap(name: string, real: "file" | "dir", linkTarget: string): void {
    swapper = startSwapping(ws, name, real === "file" ? { file: "inside\n" } : { dir: {} }, linkTarget);
  }

  test("reads never return the host file", async () => {
    swap("x", "file", join(outside, "canary"));
    let readInside = 0;
    for (let i = 0; i < 1500; i++) {
      const text = await read("x").catch((error: unknown) => {
        if (error instanceof WorkspacePathError || (error as { code?: string }).code) return undefined;
        throw error;
      });
      expect(text).not.toBe(CANARY);
      if (text !== undefined) readInside++;
    }
    // The race was real: some reads found the file, the rest were refused.
    expect(readInside).toBeGreaterThan(0);
  });

  test("writes never reach the host, through the file or a directory on the way", async () => {
    swap("x", "file", join(outside, "canary"));
    for (let i = 0; i < 800; i++) {
      await open((w) => w.writeFile("x", "pwned", { links: "inside" })).catch(() => undefined);
    }
    await stopSwapping();
    swap("d", "dir", outside);
    for (let i = 0; i < 800; i++) {
      await open((w) => w.writeFile("d/planted", "pwned", { links: "inside" })).catch(() => undefined);
    }
    expect(readFileSync(join(outside, "canary"), "utf8")).toBe(CANARY);
    expect(existsSync(join(outside, "planted"))).toBe(false);
  });
});
