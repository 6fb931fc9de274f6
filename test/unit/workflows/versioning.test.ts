/**
 * The support window, enforced: the workflow code replays the histories of runs started by the
 * current code and the last release (docs/architecture.md, "Versioning"). Every committed history
 * names the release that recorded it (test/fixtures/history-releases.json); every patch names the
 * release that added it and, once retired, the one that deprecated it (src/workflows/patches.ts).
 * When a release leaves the window these tests say what is due: a history to delete, an old
 * branch to retire with deprecatePatch, a deprecated patch to delete.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { RUN_VERSION } from "../../../src/contracts/runs";
import { PATCHES, type PatchRecord, UNRELEASED } from "../../../src/workflows/patches";

/** Releases whose runs the current code replays: the current code's and the last release's. */
const SUPPORTED_RELEASES = 2;

const root = resolve(__dirname, "../../..");
/** Release labels, newest first, from CHANGELOG.md's section headings (`## Unreleased`, `## 1.2.0 …`). */
const releases = readFileSync(join(root, "CHANGELOG.md"), "utf8")
  .split("\n")
  .flatMap((line) => (line.startsWith("## ") ? [line.slice(3).split(/\s/)[0] ?? ""] : []));
const window = releases.slice(0, SUPPORTED_RELEASES);
const historiesDir = join(root, "test/fixtures/histories");
const historyReleases: Record<string, string> = JSON.parse(
  readFileSync(join(root, "test/fixtures/history-releases.json"), "utf8"),
);

test("the changelog's top section is the unreleased code", () => {
  expect(releases[0]).toBe(UNRELEASED);
});

test("every committed history names the release that recorded it, inside the window", () => {
  const files = readdirSync(historiesDir).filter((file) => file.endsWith(".json"));
  expect(Object.keys(historyReleases).sort()).toEqual(files.sort());
  const outside = Object.entries(historyReleases).filter(([, release]) => !window.includes(release));
  // Due: delete these histories, then retire the branches only they took.
  expect(outside).toEqual([]);
});

test.each(Object.entries(PATCHES))(
  "patch %s is retired when the window passes it",
  (_name, patch: PatchRecord) => {
    expect(releases).toContain(patch.addedIn);
    // Added before the window's oldest release: every run in the window took the new branch, so
    // the old branch is due to be deleted and the patch deprecated.
    if (!window.includes(patch.addedIn)) expect(patch.deprecatedIn).toBeDefined();
    // Deprecated before the window's oldest release: no history in the window needs the id.
    if (patch.deprecatedIn !== undefined) expect(window).toContain(patch.deprecatedIn);
  },
);

test("branches are taken only through the patch table, and the run version is frozen", () => {
  const offenders: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (path.endsWith(".ts") && !path.endsWith("patches.ts")) {
        if (
          /\b(patched|deprecatePatch)\(/.test(
            readFileSync(path, "utf8").replace(/\/\/.*|\/\*[\s\S]*?\*\//g, ""),
          )
        )
          offenders.push(path);
      }
    }
  };
  walk(join(root, "src"));
  expect(offenders).toEqual([]);
  expect(RUN_VERSION).toBe(2);
});
