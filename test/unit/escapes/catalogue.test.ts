/** The escape suite's catalogue and its judging helpers (the suite itself runs against a live stack). */
import { chmodSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ATTEMPT_CLASSES, judge, marker } from "../../escapes/attempt";
import { ALL_ATTEMPTS } from "../../escapes/attempts";
import { describeChanges, findTokens, folderState, layOutCanaries } from "../../escapes/canaries";

test("at least 60 attempts with unique ids; the short form keeps part of every class", () => {
  expect(ALL_ATTEMPTS.length).toBeGreaterThanOrEqual(60);
  expect(new Set(ALL_ATTEMPTS.map((attempt) => attempt.id)).size).toBe(ALL_ATTEMPTS.length);
  for (const name of ATTEMPT_CLASSES) {
    const of = ALL_ATTEMPTS.filter((attempt) => attempt.class === name);
    expect(of.some((attempt) => attempt.short)).toBe(true);
  }
});

test("a folder's state changes with a file's content, its mode, or a link put in its place", () => {
  const dir = mkdtempSync(join(tmpdir(), "escapes-state-"));
  writeFileSync(join(dir, "a"), "one\n");
  const before = folderState(dir);
  expect(describeChanges(before, folderState(dir))).toBeUndefined();
  writeFileSync(join(dir, "a"), "two\n");
  expect(describeChanges(before, folderState(dir))).toMatch(/~a/);
  writeFileSync(join(dir, "a"), "one\n");
  chmodSync(join(dir, "a"), 0o4755);
  expect(describeChanges(before, folderState(dir))).toMatch(/~a "file 4755/);
  symlinkSync("/etc", join(dir, "l"));
  expect(describeChanges(before, folderState(dir))).toMatch(/\+l "link -> \/etc"/);
});

test("host changes are reported once, then the folder is laid out again; tokens are found in text and bytes", () => {
  const canaries = layOutCanaries(mkdtempSync(join(tmpdir(), "escapes-host-")), { KEY: "secret-value-1" });
  expect(canaries.hostChanges()).toBeUndefined();
  writeFileSync(canaries.hostFile, "*\n");
  expect(canaries.hostChanges()).toMatch(/~canary\.txt/);
  expect(canaries.hostChanges()).toBeUndefined();
  expect(findTokens(canaries, Buffer.from(`x ${canaries.hostContent} y`), "here")).toEqual([
    "host file content in here",
  ]);
  expect(findTokens(canaries, "Bearer secret-value-1", "a request")).toEqual(["secret KEY in a request"]);
});

test("a marker's text is not in the command that prints it; findings make an escape", () => {
  const { shell, text } = marker("mount");
  expect(shell).not.toContain(text);
  expect(judge([], "API 400 refused")).toEqual({ outcome: "refused", stoppedBy: "API 400 refused" });
  expect(judge(["secret in export"], "x").outcome).toBe("escaped");
});
