/**
 * An import archive over the entry limit: 150,000 empty files (the limit is 100,000). Times the
 * import's refusal (`withImportedArchive`: the limits judged on the headers, then unpacked) against
 * unpacking as it streams (`unpackSessionArchive` alone, what the import did before: the refusal
 * came at entry 100,001, after the first 100,000 files were written). Prints both.
 *
 * Run: npx tsx bench/archive-entry-count.ts [entries]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { withImportedArchive } from "../src/api/session-archive";
import { unpackSessionArchive } from "../src/store/workspace-archive";
import { fixtureEntry, SESSION_JSONL } from "../test/support/tar-fixture";

async function* once(body: Buffer): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < body.length; at += 64 * 1024) yield body.subarray(at, at + 64 * 1024);
}

async function timed(label: string, work: () => Promise<unknown>): Promise<void> {
  const started = performance.now();
  const outcome = await work().then(
    () => "accepted",
    (error: unknown) => `refused: ${error instanceof Error ? error.message : String(error)}`,
  );
  console.log(`${label}: ${Math.round(performance.now() - started)} ms, ${outcome}`);
}

async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? 150_000);
  const parts = [
    fixtureEntry({ path: "session.jsonl", body: SESSION_JSONL }),
    fixtureEntry({ path: "workspace/", type: "Directory" }),
  ];
  for (let i = 0; i < count; i++) parts.push(fixtureEntry({ path: `workspace/f/${i}` }));
  parts.push(Buffer.alloc(1024));
  const archive = gzipSync(Buffer.concat(parts));
  console.log(`${count} empty entries, ${archive.length} bytes gzipped`);
  await timed("import (headers judged first)", () =>
    withImportedArchive(once(archive), async () => undefined),
  );
  const dir = mkdtempSync(join(tmpdir(), "bench-archive-"));
  try {
    await timed("unpacked as it streams (before)", () => unpackSessionArchive(once(archive), join(dir, "w")));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
