/**
 * Export and import of a session together with its workspace (`.tar.gz`, layout in
 * store/workspace-archive.ts). The export restores the workspace at the session's leaf from its
 * snapshot into a temporary folder and archives it; the import records the archive's workspace as
 * the snapshot of the imported session's leaf, so the first run of that session (on any worker)
 * restores those files when it claims the workspace.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SessionRef } from "../store/session-keys";
import type { SessionStore } from "../store/session-store";
import { ArchiveError, type TarEntry } from "../store/tar";
import { packSessionArchive, readSessionArchive, writeWorkspaceEntries } from "../store/workspace-archive";
import { snapshotAncestry, snapshotForAncestry } from "../store/workspace-lookup";
import type { WorkspaceSnapshots } from "../store/workspace-snapshots";
import { ProblemError } from "./problems";

/** Runs `work` with a fresh temporary folder, removed afterwards whatever happens. */
async function withTempDir<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "keel-archive-"));
  try {
    return await work(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface ExportedArchive {
  archive: Buffer;
  /** The entry whose snapshot the workspace comes from; undefined: none applies (empty workspace). */
  snapshotEntryId: string | undefined;
}

/** The session file plus the workspace at its leaf (the last stored entry), as a `.tar.gz`. */
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
  return withTempDir(async (dir) => {
    const workspace = join(dir, "workspace");
    if (found) await snapshots.restore(found.from, found.record, workspace);
    else await mkdir(workspace);
    return {
      archive: await packSessionArchive(jsonl, workspace),
      snapshotEntryId: found?.record.afterEntryId,
    };
  });
}

/** An import body read as an archive: the session file's text and its checked workspace entries. */
export function readImportArchive(body: Buffer): { jsonl: string; workspace: TarEntry[] | undefined } {
  try {
    return readSessionArchive(body);
  } catch (error) {
    if (error instanceof ArchiveError) throw new ProblemError("invalid-session-file", error.message);
    throw error;
  }
}

/**
 * Records `workspace` (checked entries) as the workspace after the imported session's last entry
 * (`leaf` at `leafSeq`). Returns the files and bytes recorded.
 */
export async function importWorkspace(
  snapshots: WorkspaceSnapshots,
  ref: SessionRef,
  workspace: readonly TarEntry[],
  leaf: { id: string; seq: number },
): Promise<{ files: number; bytes: number }> {
  return withTempDir(async (dir) => {
    const folder = join(dir, "workspace");
    await writeWorkspaceEntries(workspace, folder);
    const { record } = await snapshots.snapshot(ref, folder, { afterEntryId: leaf.id, afterSeq: leaf.seq });
    return { files: record.files, bytes: record.bytes };
  });
}
