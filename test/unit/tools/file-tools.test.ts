import * as fs from "node:fs/promises";
import * as path from "node:path";
import { MAX_IMAGE_BYTES } from "../../../src/tools/files";
import { MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES } from "../../../src/tools/truncate";
import { makeSandbox, removeSandbox, type Sandbox, textOf } from "./helpers";

let sandbox: Sandbox;
const inWorkspace = (...parts: string[]) => path.join(sandbox.workspace.dir, ...parts);

beforeEach(async () => {
  sandbox = await makeSandbox();
});
afterEach(async () => {
  await removeSandbox(sandbox);
});

const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);

describe("read", () => {
  it("returns a file's text", async () => {
    await fs.writeFile(inWorkspace("a.txt"), "one\ntwo\nthree\n");
    const out = await sandbox.run("read", { path: "a.txt" });
    expect(out.isError).toBe(false);
    expect(textOf(out)).toBe("one\ntwo\nthree");
  });

  it("reads a line range and says where to continue", async () => {
    await fs.writeFile(inWorkspace("a.txt"), "l1\nl2\nl3\nl4\nl5\n");
    const out = await sandbox.run("read", { path: "a.txt", offset: 2, limit: 2 });
    expect(textOf(out)).toBe("l2\nl3\n\n[2 more lines in file. Use offset=4 to continue.]");
  });

  it("truncates at the line limit with the next offset", async () => {
    const lines = Array.from({ length: MAX_OUTPUT_LINES + 500 }, (_, i) => `line ${i + 1}`);
    await fs.writeFile(inWorkspace("big.txt"), lines.join("\n"));
    const out = await sandbox.run("read", { path: "big.txt" });
    const text = textOf(out);
    expect(text.split("\n")[MAX_OUTPUT_LINES - 1]).toBe(`line ${MAX_OUTPUT_LINES}`);
    expect(text).toContain(
      `[Showing lines 1-${MAX_OUTPUT_LINES} of ${MAX_OUTPUT_LINES + 500}. Use offset=${MAX_OUTPUT_LINES + 1} to continue.]`,
    );
    const next = await sandbox.run("read", { path: "big.txt", offset: MAX_OUTPUT_LINES + 1 });
    expect(textOf(next).startsWith(`line ${MAX_OUTPUT_LINES + 1}\n`)).toBe(true);
    expect(textOf(next)).not.toContain("Use offset");
  });

  it("truncates at the byte limit with the next offset", async () => {
    const line = "x".repeat(1000);
    await fs.writeFile(inWorkspace("wide.txt"), Array.from({ length: 100 }, () => line).join("\n"));
    const out = await sandbox.run("read", { path: "wide.txt" });
    const shown = Math.floor((MAX_OUTPUT_BYTES + 1) / 1001);
    expect(textOf(out)).toContain(
      `[Showing lines 1-${shown} of 100 (50.0KB limit). Use offset=${shown + 1} to continue.]`,
    );
    expect(Buffer.byteLength(textOf(out).split("\n\n[")[0] ?? "")).toBeLessThanOrEqual(MAX_OUTPUT_BYTES);
  });

  it("points at bash when a single line exceeds the byte limit", async () => {
    await fs.writeFile(inWorkspace("long.txt"), "y".repeat(MAX_OUTPUT_BYTES + 10));
    const out = await sandbox.run("read", { path: "long.txt" });
    expect(textOf(out)).toMatch(
      /^\[Line 1 is 50\.0KB, exceeds the 50\.0KB limit\. Use bash: sed -n '1p' long\.txt/,
    );
  });

  it("returns images as image blocks", async () => {
    await fs.writeFile(inWorkspace("pixel.png"), PNG);
    const out = await sandbox.run("read", { path: "pixel.png" });
    expect(out.isError).toBe(false);
    expect(out.content[1]).toEqual({ type: "image", mimeType: "image/png", data: PNG.toString("base64") });
  });

  it("refuses images over the size cap", async () => {
    await fs.writeFile(inWorkspace("huge.png"), Buffer.concat([PNG, Buffer.alloc(MAX_IMAGE_BYTES)]));
    const out = await sandbox.run("read", { path: "huge.png" });
    expect(out.isError).toBe(true);
    expect(textOf(out)).toContain("over the");
  });

  it("refuses binary files, directories, missing files and offsets past the end", async () => {
    await fs.writeFile(inWorkspace("blob.bin"), Buffer.from([1, 2, 0, 3]));
    await fs.writeFile(inWorkspace("short.txt"), "a\nb\n");
    await fs.mkdir(inWorkspace("dir"));
    const cases: [Record<string, unknown>, string][] = [
      [{ path: "blob.bin" }, "binary file"],
      [{ path: "dir" }, "is a directory"],
      [{ path: "missing.txt" }, "File not found: missing.txt"],
      [{ path: "short.txt", offset: 9 }, "Offset 9 is beyond end of file (2 lines total)"],
    ];
    for (const [args, message] of cases) {
      const out = await sandbox.run("read", args);
      expect(out.isError).toBe(true);
      expect(textOf(out)).toContain(message);
    }
  });
});

describe("write", () => {
  it("creates parent directories and writes", async () => {
    const out = await sandbox.run("write", { path: "src/deep/new.ts", content: "export {};\n" });
    expect(out).toMatchObject({ isError: false, details: { created: true, bytes: 11 } });
    expect(await fs.readFile(inWorkspace("src/deep/new.ts"), "utf8")).toBe("export {};\n");
  });

  it("overwrites, and detects a repeated identical write as already done", async () => {
    await sandbox.run("write", { path: "a.txt", content: "first" });
    const second = await sandbox.run("write", { path: "a.txt", content: "second" });
    expect(second.details).toMatchObject({ created: false });
    const stats = await fs.stat(inWorkspace("a.txt"));
    const retry = await sandbox.run("write", { path: "a.txt", content: "second" });
    expect(retry).toMatchObject({ isError: false, details: { alreadyWritten: true } });
    expect(textOf(retry)).toContain("already written");
    expect((await fs.stat(inWorkspace("a.txt"))).mtimeMs).toBe(stats.mtimeMs);
    expect(await fs.readFile(inWorkspace("a.txt"), "utf8")).toBe("second");
  });

  it("refuses to write over a directory", async () => {
    await fs.mkdir(inWorkspace("dir"));
    const out = await sandbox.run("write", { path: "dir", content: "x" });
    expect(out.isError).toBe(true);
    expect(textOf(out)).toContain("is a directory");
  });
});

describe("edit", () => {
  const write = (name: string, content: string) => fs.writeFile(inWorkspace(name), content);
  const read = (name: string) => fs.readFile(inWorkspace(name), "utf8");

  it("replaces a unique exact match and reports a unified diff", async () => {
    await write("a.ts", "const a = 1;\nconst b = 2;\nconst c = 3;\n");
    const out = await sandbox.run("edit", {
      path: "a.ts",
      oldText: "const b = 2;",
      newText: "const b = 20;",
    });
    expect(out.isError).toBe(false);
    expect(await read("a.ts")).toBe("const a = 1;\nconst b = 20;\nconst c = 3;\n");
    const details = out.details as { diff: string; firstChangedLine: number; tolerant: boolean };
    expect(details.diff).toContain("--- a.ts");
    expect(details.diff).toContain("-const b = 2;\n+const b = 20;");
    expect(details.firstChangedLine).toBe(2);
    expect(details.tolerant).toBe(false);
  });

  it("refuses ambiguous matches, naming the lines", async () => {
    await write("a.ts", "x();\ny();\nx();\n");
    const out = await sandbox.run("edit", { path: "a.ts", oldText: "x();", newText: "z();" });
    expect(out.isError).toBe(true);
    expect(textOf(out)).toContain("Found 2 occurrences of oldText in a.ts (lines 1, 3)");
    expect(await read("a.ts")).toBe("x();\ny();\nx();\n");
  });

  it("reports a missing match clearly", async () => {
    await write("a.ts", "hello\n");
    const out = await sandbox.run("edit", { path: "a.ts", oldText: "goodbye", newText: "ciao" });
    expect(out.isError).toBe(true);
    expect(textOf(out)).toContain("Could not find the text to replace in a.ts");
  });

  it("matches tolerantly across smart quotes, dashes, trailing whitespace and NBSP, touching only the match", async () => {
    await write("a.md", "intro “quoted” — here\nsay \u2018hi\u2019   \nvalue:\u00a0x\nkeep “this”\n");
    const out = await sandbox.run("edit", {
      path: "a.md",
      oldText: "intro \"quoted\" - here\nsay 'hi'\nvalue: x",
      newText: "replaced",
    });
    expect(out.isError).toBe(false);
    expect((out.details as { tolerant: boolean }).tolerant).toBe(true);
    expect(await read("a.md")).toBe("replaced\nkeep “this”\n");
  });

  it("matches tolerantly across Unicode normalization forms", async () => {
    await write("n.txt", "caf\u0065\u0301 au lait\n");
    const out = await sandbox.run("edit", { path: "n.txt", oldText: "caf\u00e9", newText: "tea" });
    expect(out.isError).toBe(false);
    expect(await read("n.txt")).toBe("tea au lait\n");
  });

  it("preserves CRLF line endings and a BOM", async () => {
    await write("w.txt", "\uFEFFone\r\ntwo\r\nthree\r\n");
    const out = await sandbox.run("edit", { path: "w.txt", oldText: "two\nthree", newText: "2\n3" });
    expect(out.isError).toBe(false);
    expect(await read("w.txt")).toBe("\uFEFFone\r\n2\r\n3\r\n");
  });

  it("detects a repeated edit as already applied and changes nothing", async () => {
    await write("a.ts", "let x = 1;\n");
    const first = await sandbox.run("edit", { path: "a.ts", oldText: "x = 1", newText: "x = 2" });
    expect(first.isError).toBe(false);
    const retry = await sandbox.run("edit", { path: "a.ts", oldText: "x = 1", newText: "x = 2" });
    expect(retry).toMatchObject({ isError: false, details: { alreadyApplied: true } });
    expect(textOf(retry)).toContain("already applied");
    expect(await read("a.ts")).toBe("let x = 2;\n");
  });

  it("detects a repeated edit whose newText contains oldText, instead of applying it twice", async () => {
    await write("a.ts", "foo();\nbar();\n");
    await sandbox.run("edit", { path: "a.ts", oldText: "foo();", newText: "foo();\nfoo2();" });
    const retry = await sandbox.run("edit", { path: "a.ts", oldText: "foo();", newText: "foo();\nfoo2();" });
    expect(retry.details).toMatchObject({ alreadyApplied: true });
    expect(await read("a.ts")).toBe("foo();\nfoo2();\nbar();\n");
  });

  it("refuses empty or identical texts and missing files", async () => {
    await write("a.ts", "abc\n");
    const cases: [Record<string, unknown>, string][] = [
      [{ path: "a.ts", oldText: "", newText: "x" }, "must not be empty"],
      [{ path: "a.ts", oldText: "abc", newText: "abc" }, "identical"],
      [{ path: "nope.ts", oldText: "a", newText: "b" }, "File not found"],
    ];
    for (const [args, message] of cases) {
      const out = await sandbox.run("edit", args);
      expect(out.isError).toBe(true);
      expect(textOf(out)).toContain(message);
    }
    expect(await read("a.ts")).toBe("abc\n");
  });
});
