/**
 * Export and import of a session together with its workspace (`.tar.gz`, layout in
 * store/workspace-archive.ts). The export restores the workspace at the session's leaf from its
 * snapshot (or the one a runner environment stored later) into a temporary folder and archives it; the import records the archive's workspace as
 * the snapshot of the imported session's leaf, so the first run of that session (on any worker)
 * restores those files when it claims the workspace. Both ways stream: the export is packed as
 * the response is sent, the import unpacked as the request body arrives.
 */
import { createReadStream } from "node:fs";
import { mkdir, mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import type { EnvironmentStore } from "../environments/store";
import { checkArchiveLimits, DEFAULT_ARCHIVE_LIMITS } from "../store/archive-stream";
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
  /** The entry whose snapshot the workspace comes from; undefined: none applies (or a runner's). */
  snapshotEntryId: string | undefined;
  /** The runner environment whose stored workspace this is, when it is one. */
  environment?: string;
}

/** The runner environments' stored workspaces (environments/store.ts). */
export type RunnerWorkspaces = Pick<EnvironmentStore, "list" | "getWorkspace">;

/**
 * The session's workspace as the runners of the tenant's environments stored it last (the newest
 * when several environments did: each keeps one archive per session); undefined when none did.
 */
async function newestRunnerWorkspace(runners: RunnerWorkspaces, ref: SessionRef) {
  const stored = await Promise.all(
    (await runners.list(ref.tenantId)).map(async ({ name }) => {
      const found = await runners.getWorkspace(ref.tenantId, name, ref.sessionId);
      return found && found !== "current" ? { ...found, environment: name } : undefined;
    }),
  );
  let newest: (typeof stored)[number];
  for (const found of stored) if (found && (!newest || found.storedAt > newest.storedAt)) newest = found;
  return newest;
}

/**
 * The session file plus its workspace, as a `.tar.gz` stream: the workspace at its leaf (the last
 * stored entry) as workers recorded it, or, when a runner environment stored the session's
 * workspace after that (its tools ran on runners), the one the runner stored last.
 */
export async function exportSessionArchive(
  store: SessionStore,
  snapshots: WorkspaceSnapshots,
  ref: SessionRef,
  runners?: RunnerWorkspaces,
): Promise<ExportedArchive> {
  const [jsonl, found, onRunner] = await Promise.all([
    store.exportJsonl(ref),
    leafSnapshot(store, snapshots, ref),
    runners ? newestRunnerWorkspace(runners, ref) : undefined,
  ]);
  const fromRunner =
    onRunner && (!found || onRunner.storedAt.getTime() > Date.parse(found.record.createdAt))
      ? onRunner
      : undefined;
  const dir = await makeTempDir();
  try {
    const workspace = join(dir, "workspace");
    if (fromRunner) await unpackSessionArchive(Readable.from([Buffer.from(fromRunner.archive)]), workspace);
    else if (found) await snapshots.restore(found.from, found.record, workspace);
    else await mkdir(workspace);
    const archive = packSessionArchive(jsonl, workspace);
    archive.once("close", () => void removeTempDir(dir).catch(() => undefined));
    return fromRunner
      ? { archive, snapshotEntryId: undefined, environment: fromRunner.environment }
      : { archive, snapshotEntryId: found?.record.afterEntryId };
  } catch (error) {
    await removeTempDir(dir);
    throw error;
  }
}

/**
 * The workspace at the session's leaf as workers recorded it, packed as a session archive without
 * a session file (what a runner restores); undefined when no snapshot applies. A runner meeting a
 * session whose workspace only workers have (imported with its files, forked from a session that
 * ran on workers, or moved to a runner environment) starts from it.
 */
export async function leafWorkspaceArchive(
  store: SessionStore,
  snapshots: WorkspaceSnapshots,
  ref: SessionRef,
): Promise<{ archive: Buffer; from: string } | undefined> {
  const found = await leafSnapshot(store, snapshots, ref);
  if (!found) return undefined;
  const dir = await makeTempDir();
  try {
    const workspace = join(dir, "workspace");
    await snapshots.restore(found.from, found.record, workspace);
    const chunks: Buffer[] = [];
    for await (const chunk of packSessionArchive("", workspace)) chunks.push(chunk as Buffer);
    return { archive: Buffer.concat(chunks), from: found.from.sessionId };
  } finally {
    await removeTempDir(dir);
  }
}

/** The snapshot that applies to the session's leaf (across forks), if any. */
async function leafSnapshot(store: SessionStore, snapshots: WorkspaceSnapshots, ref: SessionRef) {
  const { entries } = await store.readEntries(ref);
  const leaf = entries.at(-1)?.entry;
  if (!leaf) return undefined;
  const ancestry = snapshotAncestry(
    entries.map((stored) => stored.entry),
    leaf.id,
  );
  return ancestry ? snapshotForAncestry(store, snapshots, ref, ancestry) : undefined;
}

/** An import archive unpacked: the session file's text and the folder of its workspace (undefined: none). */
export interface ImportedArchive {
  jsonl: string;
  workspaceDir: string | undefined;
}

/**
 * Unpacks an import body (a gzipped session archive) into a temporary folder and runs `use` with
 * it; the folder is removed afterwards whatever happens. The body is read once as it arrives,
 * kept compressed in that folder and judged against the archive limits by its headers alone
 * (`checkArchiveLimits`), so an archive over a limit — 150,000 empty entries — is refused at
 * the entry that crosses it, before any file is written; only then is it unpacked from the kept
 * copy. A refused archive is a problem: `payload-too-large` (413) over a limit,
 * `invalid-session-file` (400) otherwise.
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
      const kept = join(dir, "import.tar.gz");
      const handle = await open(kept, "wx", 0o600);
      try {
        await checkArchiveLimits(body, DEFAULT_ARCHIVE_LIMITS, (chunk) => handle.writeFile(chunk));
      } finally {
        await handle.close();
      }
      unpacked = await unpackSessionArchive(createReadStream(kept), workspaceDir);
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
