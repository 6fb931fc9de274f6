import * as fs from "node:fs/promises";
import * as path from "node:path";
import { makeSandbox, removeSandbox, type Sandbox, textOf } from "./helpers";

let sandbox: Sandbox;
let before: string;

beforeAll(async () => {
  sandbox = await makeSandbox();
  const dir = sandbox.workspace.dir;
  const outside = sandbox.outside;
  await fs.mkdir(path.join(dir, "src"));
  await fs.writeFile(path.join(dir, "src", "ok.txt"), "inside\n");
  await fs.symlink(outside, path.join(dir, "link-out"));
  await fs.symlink(path.relative(dir, outside), path.join(dir, "link-out-rel"));
  await fs.symlink(path.join(outside, "secret.txt"), path.join(dir, "link-file"));
  await fs.symlink("chain2", path.join(dir, "chain1"));
  await fs.symlink("chain3", path.join(dir, "chain2"));
  await fs.symlink(outside, path.join(dir, "chain3"));
  await fs.symlink(path.join(outside, "not-yet.txt"), path.join(dir, "dangling"));
  await fs.symlink(path.join(outside, "nested"), path.join(dir, "src", "dir-link"));
  await fs.symlink("loop2", path.join(dir, "loop1"));
  await fs.symlink("loop1", path.join(dir, "loop2"));
  await fs.symlink("src", path.join(dir, "inner-link"));
  // A link created by an earlier bash command, as a model might do.
  const made = await sandbox.run("bash", {
    command: `ln -s ${JSON.stringify(outside)} made-by-bash && ln -s ../.. up2`,
  });
  expect(made.isError).toBe(false);
  before = await sandbox.snapshotOutside();
});

afterAll(async () => {
  await removeSandbox(sandbox);
});

const outsidePath = (...parts: string[]) => path.join(sandbox.outside, ...parts);

type Attempt = [label: string, tool: string, args: () => Record<string, unknown>];

const attempts: Attempt[] = [
  // traversal
  ["read ../ traversal", "read", () => ({ path: "../outside/secret.txt" })],
  ["read deep traversal", "read", () => ({ path: "../../../../../../etc/passwd" })],
  ["read traversal after a real dir", "read", () => ({ path: "src/../../outside/secret.txt" })],
  ["read ./.. prefix", "read", () => ({ path: "./../session1/../outside/secret.txt" })],
  ["read bare ..", "read", () => ({ path: ".." })],
  ["write ../ traversal", "write", () => ({ path: "../pwned.txt", content: "x" })],
  ["write deep traversal", "write", () => ({ path: "a/b/../../../../outside/pwned.txt", content: "x" })],
  [
    "edit ../ traversal",
    "edit",
    () => ({ path: "../../../outside/secret.txt", oldText: "top", newText: "owned" }),
  ],
  ["ls ..", "ls", () => ({ path: ".." })],
  ["ls ../..", "ls", () => ({ path: "../.." })],
  ["grep path ..", "grep", () => ({ pattern: "secret", path: ".." })],
  ["find path ../outside", "find", () => ({ pattern: "*", path: "../../../outside" })],
  // absolute paths elsewhere
  ["read /etc/passwd", "read", () => ({ path: "/etc/passwd" })],
  ["read absolute outside file", "read", () => ({ path: outsidePath("secret.txt") })],
  [
    "read absolute via /proc/self/root",
    "read",
    () => ({ path: `/proc/self/root${outsidePath("secret.txt")}` }),
  ],
  [
    "read absolute workspace path then ..",
    "read",
    () => ({ path: `${sandbox.workspace.dir}/../../../outside/secret.txt` }),
  ],
  ["write absolute outside", "write", () => ({ path: outsidePath("pwned.txt"), content: "x" })],
  [
    "edit absolute outside",
    "edit",
    () => ({ path: outsidePath("secret.txt"), oldText: "top", newText: "owned" }),
  ],
  ["ls /", "ls", () => ({ path: "/" })],
  ["grep path /etc", "grep", () => ({ pattern: "root", path: "/etc" })],
  ["find path absolute outside", "find", () => ({ pattern: "*", path: sandbox.outside })],
  // symlinks out, chains, dangling, loops
  ["read through dir symlink", "read", () => ({ path: "link-out/secret.txt" })],
  ["read through relative dir symlink", "read", () => ({ path: "link-out-rel/secret.txt" })],
  ["read file symlink", "read", () => ({ path: "link-file" })],
  ["read through symlink chain", "read", () => ({ path: "chain1/secret.txt" })],
  ["read nested dir symlink", "read", () => ({ path: "src/dir-link/deep.txt" })],
  ["read symlink loop", "read", () => ({ path: "loop1" })],
  ["write through dir symlink", "write", () => ({ path: "link-out/pwned.txt", content: "x" })],
  ["write over file symlink", "write", () => ({ path: "link-file", content: "owned" })],
  ["write through dangling symlink", "write", () => ({ path: "dangling", content: "x" })],
  ["write through symlink chain", "write", () => ({ path: "chain1/pwned.txt", content: "x" })],
  [
    "write into nested dir symlink, new subdir",
    "write",
    () => ({ path: "src/dir-link/new/pwned.txt", content: "x" }),
  ],
  ["edit through file symlink", "edit", () => ({ path: "link-file", oldText: "top", newText: "owned" })],
  [
    "edit through nested dir symlink",
    "edit",
    () => ({ path: "src/dir-link/deep.txt", oldText: "deep", newText: "x" }),
  ],
  ["ls dir symlink", "ls", () => ({ path: "link-out" })],
  ["grep path dir symlink", "grep", () => ({ pattern: "secret", path: "link-out" })],
  ["find path symlink chain", "find", () => ({ pattern: "*", path: "chain1" })],
  // symlinks created by bash
  ["read through bash-made symlink", "read", () => ({ path: "made-by-bash/secret.txt" })],
  ["write through bash-made symlink", "write", () => ({ path: "made-by-bash/pwned.txt", content: "x" })],
  [
    "edit through bash-made symlink",
    "edit",
    () => ({ path: "made-by-bash/secret.txt", oldText: "top", newText: "x" }),
  ],
  ["ls bash-made relative up-link", "ls", () => ({ path: "up2" })],
  ["read via bash-made up-link", "read", () => ({ path: "up2/outside/secret.txt" })],
  // .. inside globs
  ["grep glob ../", "grep", () => ({ pattern: "secret", glob: "../**" })],
  ["grep glob ../outside/*", "grep", () => ({ pattern: "secret", glob: "../outside/*.txt" })],
  ["grep glob absolute", "grep", () => ({ pattern: "root", glob: "/etc/*" })],
  ["grep glob .. in the middle", "grep", () => ({ pattern: "secret", glob: "src/../../outside/*" })],
  ["find pattern ../*", "find", () => ({ pattern: "../*" })],
  ["find pattern ../../**", "find", () => ({ pattern: "../../**/secret.txt" })],
  ["find pattern absolute", "find", () => ({ pattern: "/etc/*" })],
  ["find pattern .. in the middle", "find", () => ({ pattern: "src/../../outside/*.txt" })],
  // NUL bytes
  ["read NUL", "read", () => ({ path: "src/ok.txt\0../../outside/secret.txt" })],
  ["write NUL", "write", () => ({ path: "new\0file", content: "x" })],
  ["ls NUL", "ls", () => ({ path: "src\0" })],
  ["find pattern NUL", "find", () => ({ pattern: "*\0" })],
  // over-long paths
  ["read 5000-byte path", "read", () => ({ path: "a/".repeat(2500) })],
  ["write 300-byte component", "write", () => ({ path: "x".repeat(300), content: "x" })],
  ["edit very long traversal", "edit", () => ({ path: "../".repeat(2000), oldText: "a", newText: "b" })],
];

describe("workspace confinement", () => {
  it("has at least 40 attempts", () => {
    expect(attempts.length).toBeGreaterThanOrEqual(40);
  });

  it.each(attempts)("refuses: %s", async (_label, tool, args) => {
    const out = await sandbox.run(tool, args());
    expect(out.isError).toBe(true);
    expect(textOf(out)).toMatch(/refused/);
    expect(textOf(out)).not.toContain("top secret");
    expect(textOf(out)).not.toContain("deep secret");
  });

  it("left everything outside the workspace untouched", async () => {
    expect(await sandbox.snapshotOutside()).toBe(before);
  });

  it("allows paths that stay inside, including links that point inside", async () => {
    expect(textOf(await sandbox.run("read", { path: "inner-link/ok.txt" }))).toBe("inside");
    expect(textOf(await sandbox.run("read", { path: `${sandbox.workspace.dir}/src/ok.txt` }))).toBe("inside");
    expect(textOf(await sandbox.run("read", { path: "src/../src/./ok.txt" }))).toBe("inside");
  });

  it("walks never follow links out of the workspace", async () => {
    const grep = await sandbox.run("grep", { pattern: "secret" });
    expect(textOf(grep)).toBe("No matches found");
    const find = textOf(await sandbox.run("find", { pattern: "*.txt" }));
    expect(find).toBe("src/ok.txt");
  });
});
