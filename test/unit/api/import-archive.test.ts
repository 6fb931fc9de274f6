/**
 * The import of a session archive judges the archive's limits on its headers before it unpacks
 * anything: an archive of 150,000 empty entries is refused (413) in a few seconds, not after
 * writing the 100,000 files before the crossing entry.
 */
import { readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { ProblemError } from "../../../src/api/problems";
import { withImportedArchive } from "../../../src/api/session-archive";
import { checkArchiveLimits, DEFAULT_ARCHIVE_LIMITS } from "../../../src/store/archive-stream";
import { chunked, fixtureEntry, sessionEntry, tarGzOf } from "../../support/tar-fixture";

const archiveDirs = () => readdirSync(tmpdir()).filter((name) => name.startsWith("keel-archive-"));

/** A session archive of `count` empty files, gzipped. */
function emptyEntries(count: number): Buffer {
  const parts = [fixtureEntry(sessionEntry), fixtureEntry({ path: "workspace/", type: "Directory" })];
  for (let i = 0; i < count; i++) parts.push(fixtureEntry({ path: `workspace/f/${i}` }));
  parts.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(parts));
}

test("150,000 empty entries: 413 at the entry that crosses the limit, before any file is written", async () => {
  const archive = emptyEntries(150_000);
  const before = new Set(archiveDirs());
  // Watched while the import runs: what the import's new folders hold besides its kept copy of
  // the compressed body. Unpacking the 100,000 entries before the crossing one would show here.
  const seen = new Set<string>();
  const watch = setInterval(() => {
    for (const dir of archiveDirs().filter((name) => !before.has(name))) {
      try {
        for (const name of readdirSync(join(tmpdir(), dir))) seen.add(name);
      } catch {
        // gone with the import
      }
    }
  }, 20);
  let used = false;
  const refusal = await withImportedArchive(chunked(archive, 64 * 1024), async () => {
    used = true;
  })
    .catch((error: unknown) => error)
    .finally(() => clearInterval(watch));
  expect(refusal).toBeInstanceOf(ProblemError);
  expect(refusal).toMatchObject({
    slug: "payload-too-large",
    detail: `the archive has more than ${DEFAULT_ARCHIVE_LIMITS.maxEntries} entries`,
  });
  expect(used).toBe(false);
  // Nothing was unpacked: the folder held the kept body at most (timing: bench/archive-entry-count.ts).
  expect([...seen].filter((name) => name !== "import.tar.gz")).toEqual([]);
  // Its temporary folder is gone.
  expect(archiveDirs().filter((name) => !before.has(name))).toEqual([]);
}, 60_000);

test("the check stops reading at the crossing entry and keeps what it read", async () => {
  const archive = emptyEntries(5_000);
  const kept: Uint8Array[] = [];
  const refusal = checkArchiveLimits(
    chunked(archive, 1024),
    { ...DEFAULT_ARCHIVE_LIMITS, maxEntries: 100 },
    async (chunk) => {
      kept.push(chunk);
    },
  );
  await expect(refusal).rejects.toMatchObject({
    overLimit: true,
    message: "the archive has more than 100 entries",
  });
  const read = kept.reduce((sum, chunk) => sum + chunk.byteLength, 0);
  expect(read).toBeGreaterThan(0);
  expect(read).toBeLessThan(archive.length / 2);
});

test("an archive within the limits passes the check whole and unpacks from the kept copy", async () => {
  const archive = tarGzOf([sessionEntry, { path: "workspace/a.txt", body: "alpha\n" }]);
  const kept: Uint8Array[] = [];
  await expect(
    checkArchiveLimits(chunked(archive, 7), DEFAULT_ARCHIVE_LIMITS, async (chunk) => {
      kept.push(chunk);
    }),
  ).resolves.toEqual({ entries: 2 });
  expect(Buffer.concat(kept).equals(archive)).toBe(true);
  const files = await withImportedArchive(chunked(archive, 7), async ({ workspaceDir }) =>
    workspaceDir ? readdirSync(workspaceDir) : [],
  );
  expect(files).toEqual(["a.txt"]);
});
