import * as fs from "node:fs/promises";
import * as path from "node:path";
import { MAX_GREP_LINE_CHARS } from "../../../src/tools/truncate";
import { makeSandbox, removeSandbox, type Sandbox, textOf } from "./helpers";

let sandbox: Sandbox;
const put = async (relative: string, content: string | Buffer) => {
  const full = path.join(sandbox.workspace.dir, relative);
  await fs.mkdir(path.dirname(full), { recursive: true });
  await fs.writeFile(full, content);
};

beforeEach(async () => {
  sandbox = await makeSandbox();
  await put(".gitignore", "node_modules/\n*.log\n");
  await put("src/a.ts", "export const alpha = 1;\n// TODO first\nconst beta = 2;\n");
  await put("src/lib/b.ts", "function gamma() {}\n// todo second\n");
  await put("src/lib/.gitignore", "generated.ts\n");
  await put("src/lib/generated.ts", "// TODO generated\n");
  await put("src/a.spec.ts", "test('alpha')\n");
  await put("node_modules/pkg/index.js", "// TODO dependency\n");
  await put("debug.log", "TODO in a log\n");
  await put(".hidden/config.json", '{"todo": true}\n');
  await put("bin.dat", Buffer.from([0x54, 0x4f, 0x44, 0x4f, 0, 1]));
});
afterEach(async () => {
  await removeSandbox(sandbox);
});

describe("grep", () => {
  it("finds matches with paths and line numbers, respecting nested .gitignore files and skipping binaries", async () => {
    const out = await sandbox.run("grep", { pattern: "TODO" });
    expect(out.isError).toBe(false);
    expect(textOf(out)).toBe("src/a.ts:2: // TODO first");
  });

  it("supports ignoreCase, literal, glob and a sub-path", async () => {
    expect(textOf(await sandbox.run("grep", { pattern: "todo", ignoreCase: true, glob: "*.ts" }))).toBe(
      "src/a.ts:2: // TODO first\nsrc/lib/b.ts:2: // todo second",
    );
    expect(textOf(await sandbox.run("grep", { pattern: "gamma()", literal: true, path: "src/lib" }))).toBe(
      "b.ts:1: function gamma() {}",
    );
    expect(textOf(await sandbox.run("grep", { pattern: "todo", ignoreCase: true, path: ".hidden" }))).toBe(
      'config.json:1: {"todo": true}',
    );
    expect(textOf(await sandbox.run("grep", { pattern: "alpha", glob: "src/**/*.spec.ts" }))).toBe(
      "src/a.spec.ts:1: test('alpha')",
    );
  });

  it("shows context lines once, marking matches with ':' and context with '-'", async () => {
    const out = await sandbox.run("grep", { pattern: "alpha|beta", path: "src/a.ts", context: 1 });
    expect(textOf(out)).toBe(
      "a.ts:1: export const alpha = 1;\na.ts-2- // TODO first\na.ts:3: const beta = 2;",
    );
  });

  it("stops at the match limit with a notice, and caps long lines", async () => {
    await put("many.txt", `${Array.from({ length: 30 }, (_, i) => `hit ${i}`).join("\n")}\n`);
    const out = await sandbox.run("grep", { pattern: "^hit", limit: 5 });
    expect(textOf(out).split("\n").slice(0, 5)).toEqual([
      "many.txt:1: hit 0",
      "many.txt:2: hit 1",
      "many.txt:3: hit 2",
      "many.txt:4: hit 3",
      "many.txt:5: hit 4",
    ]);
    expect(textOf(out)).toContain("[5 matches limit reached. Use limit=10 for more, or refine pattern]");
    await put("wide.txt", `needle ${"z".repeat(2000)}\n`);
    const wide = await sandbox.run("grep", { pattern: "needle" });
    expect(textOf(wide)).toContain(`${"z".repeat(MAX_GREP_LINE_CHARS - 7)}... [truncated]`);
    expect(textOf(wide)).toContain("Some lines truncated to 500 chars");
  });

  it("reports no matches, invalid regexes and missing paths", async () => {
    expect(textOf(await sandbox.run("grep", { pattern: "nothing-like-this" }))).toBe("No matches found");
    const bad = await sandbox.run("grep", { pattern: "(" });
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toContain("Invalid regular expression");
    const missing = await sandbox.run("grep", { pattern: "x", path: "nope" });
    expect(textOf(missing)).toContain("Path not found: nope");
  });
});

describe("find", () => {
  it("matches names anywhere, respecting .gitignore", async () => {
    expect(textOf(await sandbox.run("find", { pattern: "*.ts" }))).toBe(
      "src/a.spec.ts\nsrc/a.ts\nsrc/lib/b.ts",
    );
  });

  it("matches path patterns, lists directories with a slash, and searches a sub-path", async () => {
    expect(textOf(await sandbox.run("find", { pattern: "src/**/*.spec.ts" }))).toBe("src/a.spec.ts");
    expect(textOf(await sandbox.run("find", { pattern: "lib" }))).toBe("src/lib/");
    expect(textOf(await sandbox.run("find", { pattern: "*.ts", path: "src/lib" }))).toBe("b.ts");
  });

  it("stops at the result limit with a notice", async () => {
    const out = await sandbox.run("find", { pattern: "*", limit: 2 });
    expect(textOf(out)).toMatch(
      /^[^\n]+\n[^\n]+\n\n\[2 results limit reached\. Use limit=4 for more, or refine pattern\]$/,
    );
  });

  it("reports no results and bad paths", async () => {
    expect(textOf(await sandbox.run("find", { pattern: "*.rs" }))).toBe("No files found matching pattern");
    expect(textOf(await sandbox.run("find", { pattern: "*", path: "src/a.ts" }))).toContain(
      "Not a directory",
    );
  });
});

describe("ls", () => {
  it("lists entries sorted, with dotfiles, directory slashes and symlink markers", async () => {
    await fs.symlink("src", path.join(sandbox.workspace.dir, "alias"));
    expect(textOf(await sandbox.run("ls", {}))).toBe(
      [".gitignore", ".hidden/", "alias@", "bin.dat", "debug.log", "node_modules/", "src/"].join("\n"),
    );
    expect(textOf(await sandbox.run("ls", { path: "src" }))).toBe("a.spec.ts\na.ts\nlib/");
  });

  it("stops at the entry limit with a notice, and handles empty and non-directories", async () => {
    expect(textOf(await sandbox.run("ls", { limit: 2 }))).toBe(
      ".gitignore\n.hidden/\n\n[2 entries limit reached. Use limit=4 for more]",
    );
    await fs.mkdir(path.join(sandbox.workspace.dir, "empty"));
    expect(textOf(await sandbox.run("ls", { path: "empty" }))).toBe("(empty directory)");
    expect(textOf(await sandbox.run("ls", { path: "src/a.ts" }))).toContain("Not a directory");
  });
});
