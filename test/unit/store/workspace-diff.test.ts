import { diffStates, type FlatState, type PathEntry, sameEntry } from "../../../src/store/workspace-diff";

const file = (hash: string, mode = 0o644): PathEntry => ({ type: "file", hash, mode });
const dir = (mode = 0o755): PathEntry => ({ type: "dir", mode });
const state = (entries: Record<string, PathEntry>): FlatState => new Map(Object.entries(entries));

test("removals come deepest first, then additions and changes shallowest first", () => {
  const base = state({ a: dir(), "a/old": file("1"), "a/b": dir(), "a/b/gone": file("2"), keep: file("3") });
  const changed = state({ a: dir(), "a/new": file("4"), c: dir(), "c/d": file("5"), keep: file("6") });
  expect(diffStates(base, changed).map(({ path, after }) => `${after ? "+" : "-"}${path}`)).toEqual([
    "-a/b/gone",
    "-a/b",
    "-a/old",
    "+c",
    "+keep",
    "+a/new",
    "+c/d",
  ]);
});

test("a path changing kind is one change; equal states differ nowhere", () => {
  const base = state({ x: dir(), "x/y": file("1"), z: file("2") });
  const changed = state({ x: file("9"), z: { type: "symlink", target: "x" } });
  expect(diffStates(base, changed)).toEqual([
    { path: "x/y", before: file("1"), after: undefined },
    { path: "x", before: dir(), after: file("9") },
    { path: "z", before: file("2"), after: { type: "symlink", target: "x" } },
  ]);
  expect(diffStates(base, base)).toEqual([]);
});

test("entries compare by content and mode; a folder's mode does not count", () => {
  expect(sameEntry(file("1", 0o644), file("1", 0o755))).toBe(false);
  expect(sameEntry(dir(0o700), dir(0o755))).toBe(true);
  expect(sameEntry(undefined, undefined)).toBe(true);
  expect(sameEntry(file("1"), undefined)).toBe(false);
  expect(sameEntry({ type: "symlink", target: "a" }, { type: "symlink", target: "b" })).toBe(false);
});
