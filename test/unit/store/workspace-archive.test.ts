/**
 * Session archives (`.tar.gz`): what Keel writes opens with GNU tar, what GNU tar writes Keel
 * reads, and path escapes are refused before anything is written.
 */
import { execFileSync } from "node:child_process";
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { ArchiveError, readTar, type TarEntry, writeTar } from "../../../src/store/tar";
import {
  packSessionArchive,
  readSessionArchive,
  writeWorkspaceEntries,
} from "../../../src/store/workspace-archive";

const JSONL = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":""}\n';
const LONG = `${"deep-folder-name/".repeat(8)}a-file-with-a-rather-long-name.txt`;

function sampleWorkspace(): string {
  const dir = mkdtempSync(join(tmpdir(), "archive-src-"));
  writeFileSync(join(dir, "a.txt"), "alpha\n");
  mkdirSync(join(dir, "bin"));
  writeFileSync(join(dir, "bin/run.sh"), "#!/bin/sh\necho hi\n", { mode: 0o755 });
  mkdirSync(join(dir, LONG, ".."), { recursive: true });
  writeFileSync(join(dir, LONG), "long\n");
  symlinkSync("a.txt", join(dir, "link-to-a"));
  mkdirSync(join(dir, ".keel/scratch"), { recursive: true });
  writeFileSync(join(dir, ".keel/scratch/bash.log"), "scratch\n");
  return dir;
}

const archiveOf = (entries: TarEntry[]): Buffer => gzipSync(writeTar(entries));
const session: TarEntry = { type: "file", path: "session.jsonl", mode: 0o644, body: Buffer.from(JSONL) };

test("an exported archive opens with GNU tar: session.jsonl and the workspace, scratch left out", async () => {
  const archive = await packSessionArchive(JSONL, sampleWorkspace());
  const out = mkdtempSync(join(tmpdir(), "archive-gnu-"));
  writeFileSync(join(out, "s.tar.gz"), archive);
  execFileSync("tar", ["xzf", "s.tar.gz"], { cwd: out });
  expect(readFileSync(join(out, "session.jsonl"), "utf8")).toBe(JSONL);
  expect(readFileSync(join(out, "workspace/a.txt"), "utf8")).toBe("alpha\n");
  expect(readFileSync(join(out, "workspace", LONG), "utf8")).toBe("long\n");
  expect(lstatSync(join(out, "workspace/bin/run.sh")).mode & 0o777).toBe(0o755);
  expect(readlinkSync(join(out, "workspace/link-to-a"))).toBe("a.txt");
  expect(() => lstatSync(join(out, "workspace/.keel/scratch/bash.log"))).toThrow();
});

test("an archive GNU tar made (long names, links) is read back into the same workspace", async () => {
  const src = sampleWorkspace();
  const staging = mkdtempSync(join(tmpdir(), "archive-made-"));
  writeFileSync(join(staging, "session.jsonl"), JSONL);
  execFileSync("cp", ["-a", src, join(staging, "workspace")]);
  execFileSync("tar", ["czf", "../made.tar.gz", "session.jsonl", "workspace"], { cwd: staging });
  const read = readSessionArchive(readFileSync(join(staging, "../made.tar.gz")));
  expect(read.jsonl).toBe(JSONL);
  const target = join(mkdtempSync(join(tmpdir(), "archive-out-")), "ws");
  await writeWorkspaceEntries(read.workspace ?? [], target);
  expect(readFileSync(join(target, LONG), "utf8")).toBe("long\n");
  expect(readFileSync(join(target, "bin/run.sh"), "utf8")).toContain("echo hi");
  expect(lstatSync(join(target, "bin/run.sh")).mode & 0o777).toBe(0o755);
  expect(readlinkSync(join(target, "link-to-a"))).toBe("a.txt");
});

test("Keel's own archive round-trips through readTar unchanged", async () => {
  const entries = readTar(
    (await import("node:zlib")).gunzipSync(await packSessionArchive(JSONL, sampleWorkspace())),
  );
  expect(entries.map((entry) => entry.path)).toEqual([
    "session.jsonl",
    "workspace",
    "workspace/.keel",
    "workspace/a.txt",
    "workspace/bin",
    "workspace/bin/run.sh",
    ...LONG.split("/")
      .slice(0, -1)
      .map((_, i, all) => `workspace/${all.slice(0, i + 1).join("/")}`),
    `workspace/${LONG}`,
    "workspace/link-to-a",
  ]);
});

describe("path escapes and other entries are refused with a clear error", () => {
  const cases: Array<[string, TarEntry[], RegExp]> = [
    [
      "a ../ path",
      [session, { type: "file", path: "workspace/../../etc/x", mode: 0o644, body: Buffer.from("x") }],
      /".." would leave/,
    ],
    [
      "an absolute path",
      [session, { type: "file", path: "/etc/x", mode: 0o644, body: Buffer.from("x") }],
      /absolute paths are refused/,
    ],
    [
      "a link pointing out",
      [session, { type: "symlink", path: "workspace/up", target: "../../etc" }],
      /points outside the workspace/,
    ],
    [
      "a link pointing out from a folder",
      [session, { type: "symlink", path: "workspace/d/up", target: "../.." }],
      /points outside the workspace/,
    ],
    [
      "an absolute link",
      [session, { type: "symlink", path: "workspace/etc", target: "/etc" }],
      /absolute targets are refused/,
    ],
    [
      "an entry below a link",
      [
        session,
        { type: "symlink", path: "workspace/here", target: "." },
        { type: "symlink", path: "workspace/here/out", target: "../x" },
      ],
      /below a symbolic link/,
    ],
    ["a duplicate", [session, session], /appears twice/],
    [
      "an entry below a file",
      [
        session,
        { type: "file", path: "workspace/f", mode: 0o644, body: Buffer.from("x") },
        { type: "file", path: "workspace/f/g", mode: 0o644, body: Buffer.from("y") },
      ],
      /lies below a file/,
    ],
    [
      "an entry beside the two folders",
      [session, { type: "file", path: "other.txt", mode: 0o644, body: Buffer.from("x") }],
      /expected session.jsonl and workspace/,
    ],
    ["no session file", [{ type: "dir", path: "workspace", mode: 0o755 }], /has no session.jsonl/],
  ];
  test.each(cases)("%s", (_what, entries, message) => {
    expect(() => readSessionArchive(archiveOf(entries))).toThrow(ArchiveError);
    expect(() => readSessionArchive(archiveOf(entries))).toThrow(message);
  });

  test("a hard link (made by GNU tar)", () => {
    const dir = mkdtempSync(join(tmpdir(), "archive-hard-"));
    writeFileSync(join(dir, "session.jsonl"), JSONL);
    mkdirSync(join(dir, "workspace"));
    writeFileSync(join(dir, "workspace/a"), "a");
    execFileSync("ln", [join(dir, "workspace/a"), join(dir, "workspace/b")]);
    execFileSync("tar", ["czf", "h.tar.gz", "session.jsonl", "workspace"], { cwd: dir });
    expect(() => readSessionArchive(readFileSync(join(dir, "h.tar.gz")))).toThrow(/is a hard link/);
  });

  test("not gzip, not tar, too large", () => {
    expect(() => readSessionArchive(Buffer.from("plain text"))).toThrow(/not valid gzip/);
    expect(() => readSessionArchive(gzipSync(Buffer.alloc(2048, 7)))).toThrow(/checksum/);
    const big = archiveOf([
      session,
      { type: "file", path: "workspace/zeros", mode: 0o644, body: Buffer.alloc(1 << 20) },
    ]);
    expect(() => readSessionArchive(big, 64 * 1024)).toThrow(/unpacks to more than 65536 bytes/);
  });
});
