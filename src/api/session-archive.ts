/**
 * Export and import of a session together with its workspace (`.tar.gz`, layout in
 * store/workspace-archive.ts). The export restores the workspace at the session's leaf from its
 * snapshot into a temporary folder and archives it; the import records the archive's workspace as
 * the snapshot of the imported session's leaf, so the first run of that session (on any worker)
 * restores those files when it claims the workspace. Both ways stream: the export is packed as
 * the response is sent, the import unpacked as the request body arrives.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import type { SessionRef } from "../store/session-keys";
import type { SessionStore } from "../store/session-store";
import { ArchiveError, packSessionArchive, unpackSessionArchive } from "../store/workspace-archive";
import { snapshotAncestry, snapshotForAncestry } from "../store/workspace-lookup";
import type { WorkspaceSnapshots } from "../store/workspace-snapshots";
import { ProblemError } from "./problems";

const makeTempDir = () => mkdtemp(join(tmpdir(), "keel-archive-"));
const removeTempDir = (dir: string) => rm(dir, { recursive: true, force: true });

export interface ExportedArchive {
  /** The `.tar.gz`, produced as it is read; its temporary folder goes when the stream closes. */
  archive: Readable;
  /** The entry whose snapshot the workspace comes from; undefined: none applies (empty workspace). */
  snapshotEntryId: string | undefined;
}

/** The session file plus the workspace at its leaf (the last stored entry), as a `.tar.gz` stream. */
export async function exportSessionArchive(
  store: SessionStore,
  snapshots: WorkspaceSnapshots,
  ref: SessionRef,
): Promise<ExportedArchive> {
  const jsonl = await store.exportJsonl(ref);
  const { entries } = await store.readEntries(ref);
  const leaf = entries.at(-1)?.entry;
  const ancestry = leaf
    ? snapshotAncestry(
        entries.map((stored) => stored.entry),
        leaf.id,
      )
    : undefined;
  const found = ancestry ? await snapshotForAncestry(store, snapshots, ref, ancestry) : undefined;
  const dir = await makeTempDir();
  try {
    const workspace = join(dir, "workspace");
    if (found) await snapshots.restore(found.from, found.record, workspace);
    else await mkdir(workspace);
    const archive = packSessionArchive(jsonl, workspace);
    archive.once("close", () => void removeTempDir(dir).catch(() => undefined));
    return { archive, snapshotEntryId: found?.record.afterEntryId };
  } catch (error) {
    await removeTempDir(dir);
    throw error;
  }
}

/** An import archive unpacked: the session file's text and the folder of its workspace (undefined: none). */
export interface ImportedArchive {
  jsonl: string;
  workspaceDir: string | undefined;
}

/**
 * Unpacks an import body (a gzipped session archive, read as it arrives) into a temporary
 * folder and runs `use` with it; the folder is removed afterwards whatever happens. A refused
 * archive is a problem: `payload-too-large` (413) over a limit, `invalid-session-file` (400)
 * otherwise.
 */
export async function withImportedArchive<T>(
  body: AsyncIterable<Uint8Array>,
  use: (archive: ImportedArchive) => Promise<T>,
): Promise<T> {
  const dir = await makeTempDir();
  try {
    const workspaceDir = join(dir, "workspace");
    let unpacked: { jsonl: string; workspace: boolean };
    try {
      unpacked = await unpackSessionArchive(body, workspaceDir);
    } catch (error) {
      if (error instanceof ArchiveError) {
        throw new ProblemError(error.overLimit ? "payload-too-large" : "invalid-session-file", error.message);
      }
      throw error;
    }
    return await use({ jsonl: unpacked.jsonl, workspaceDir: unpacked.workspace ? workspaceDir : undefined });
  } finally {
    await removeTempDir(dir);
  }
}

/**
 * Records the unpacked workspace folder as the workspace after the imported session's last
 * entry (`leaf` at `leafSeq`). Returns the files and bytes recorded.
 */
export async function importWorkspace(
  snapshots: WorkspaceSnapshots,
  ref: SessionRef,
  workspaceDir: string,
  leaf: { id: string; seq: number },
): Promise<{ files: number; bytes: number }> {
  const { record } = await snapshots.snapshot(ref, workspaceDir, {
    afterEntryId: leaf.id,
    afterSeq: leaf.seq,
  });
  return { files: record.files, bytes: record.bytes };
}
