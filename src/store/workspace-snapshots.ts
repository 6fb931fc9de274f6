// Over 400 lines: record, find and restore share one snapshot format and its S3 objects; each half alone would export them.
/**
 * Workspace snapshots in S3 (docs/store.md, "Workspace snapshots"): record a session workspace's
 * state after an entry, find the state that applies to any entry (its nearest snapshotted
 * ancestor), and restore it into a directory on any worker.
 *
 * Writes are idempotent: blobs and trees are content-addressed and created with
 * `If-None-Match: *` (a 412 means "already there"); the snapshot record of an entry is created
 * once and a retry adopts it. Only objects not known to be stored (local index) are uploaded, so
 * the bytes sent per snapshot follow what changed, not the workspace's size.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { GetObjectCommand, HeadObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { z } from "zod";
import {
  createFileAt,
  mkdirAt,
  openDirAt,
  PERMISSION_BITS,
  removeTree,
  symlinkAt,
  WorkspaceFs,
} from "../tools/workspace-fs";
import { siblingPathOf } from "../tools/workspace-siblings";
import { mapWithLimit } from "./bounded-map";
import { ConditionalObjects, readAfterConflict } from "./conditional-objects";
import { sha256Hex } from "./digest";
import type { S3Settings } from "./s3-config";
import { isNotFound, listObjects } from "./s3-requests";
import { CorruptObjectError } from "./session-errors";
import {
  type SessionRef,
  snapshotEntryIdOfKey,
  workspaceBlobKey,
  workspaceSnapshotKey,
  workspaceSnapshotsPrefix,
  workspaceTreeKey,
} from "./session-keys";
import { WorkspaceHolders } from "./workspace-holders";
import {
  type BlobSink,
  emptyIndex,
  type LocalIndex,
  readLocalIndex,
  scanWorkspace,
  type Tree,
  TreeSchema,
  writeLocalIndex,
} from "./workspace-tree";

/** Default cap on the bytes of files a snapshot records (KEEL_SNAPSHOT_MAX_BYTES). */
export const DEFAULT_SNAPSHOT_MAX_BYTES = 2 * 1024 ** 3;
const UPLOAD_CONCURRENCY = 8;

const SnapshotRecordSchema = z.object({
  version: z.literal(1),
  afterEntryId: z.string(),
  afterSeq: z.number().int().min(0),
  root: z.string().regex(/^[0-9a-f]{64}$/),
  files: z.number().int().min(0),
  bytes: z.number().int().min(0),
  createdAt: z.string(),
});
/** The record of one snapshot: which entry it follows and the root tree of the state. */
export type SnapshotRecord = z.infer<typeof SnapshotRecordSchema>;

/**
 * One step of an entry's ancestry in a snapshot lookup: an entry id, or the tool results of one
 * assistant entry. Each call of a batch snapshots at its own result (parallel calls in any
 * order), and the workspace only accumulates the batch's changes, so among a group the newest
 * snapshot is the most complete state, not the nearest.
 */
export type AncestryStep = string | readonly string[];

export interface SnapshotOptions {
  afterEntryId: string;
  afterSeq: number;
  maxBytes?: number;
  /**
   * When the entry already has a record of another state, record the directory's state in its
   * place (a newer `createdAt`) instead of adopting it. For the snapshot after a batch: a call of
   * the batch recorded its own result's state before a parallel call (whose own snapshot failed)
   * changed files. A retry finds the state it recorded and adopts it.
   */
  replaceStale?: boolean;
}

export interface SnapshotResult {
  record: SnapshotRecord;
  /** An earlier attempt had recorded this entry's snapshot: nothing was scanned or uploaded. */
  adopted: boolean;
  /** Objects and bytes this call created in S3 (blobs, trees, the record). */
  uploadedObjects: number;
  uploadedBytes: number;
  /** Files read and hashed (the others were unchanged since the last snapshot). */
  hashedFiles: number;
}

export interface RestoreResult {
  files: number;
  bytes: number;
  downloadedObjects: number;
}

/** Snapshots in progress per workspace directory on this worker: one at a time (see `snapshot`). */
const snapshotsInProgress = new Map<string, Promise<unknown>>();
let lastCreatedMs = 0;

/**
 * Now as a `createdAt`, later than every earlier one of this process: the snapshots of one batch
 * are all taken on the workspace's worker, and the newest of them must be told apart.
 */
function monotonicCreatedAt(): string {
  lastCreatedMs = Math.max(Date.now(), lastCreatedMs + 1);
  return new Date(lastCreatedMs).toISOString();
}

export class WorkspaceSnapshots {
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly conditional: ConditionalObjects;
  /** Which disk holds each session's workspace copy (a copy elsewhere is stale). */
  readonly holders: WorkspaceHolders;

  constructor(
    private readonly client: S3Client,
    settings: Pick<S3Settings, "bucket" | "prefix">,
  ) {
    this.bucket = settings.bucket;
    this.prefix = settings.prefix;
    this.conditional = new ConditionalObjects(client, settings.bucket);
    this.holders = new WorkspaceHolders(client, settings);
  }

  /**
   * Records the state of `dir` as the workspace after `afterEntryId`. Idempotent: a second call
   * for the same entry returns the stored record without uploading. Snapshots of one directory
   * run one after the other (parallel tool calls each snapshot at their result): the local index
   * is not written by two at once, and a later `createdAt` means a later scan.
   */
  snapshot(ref: SessionRef, dir: string, options: SnapshotOptions): Promise<SnapshotResult> {
    const previous = snapshotsInProgress.get(dir) ?? Promise.resolve();
    const current = previous.catch(() => undefined).then(() => this.snapshotNow(ref, dir, options));
    snapshotsInProgress.set(dir, current);
    const forget = () => {
      if (snapshotsInProgress.get(dir) === current) snapshotsInProgress.delete(dir);
    };
    current.then(forget, forget);
    return current;
  }

  private async snapshotNow(ref: SessionRef, dir: string, options: SnapshotOptions): Promise<SnapshotResult> {
    const recordKey = workspaceSnapshotKey(this.prefix, ref, options.afterEntryId);
    const existing = await this.getStoredRecord(recordKey);
    if (existing && !(options.replaceStale && existing.etag)) {
      return { record: existing.record, adopted: true, uploadedObjects: 0, uploadedBytes: 0, hashedFiles: 0 };
    }

    const index = await readLocalIndex(dir);
    const stored = new Set(index.stored);
    let uploadedObjects = 0;
    let uploadedBytes = 0;
    const upload = async (key: string, body: Buffer | string, contentType: string) => {
      if (await this.conditional.createIfAbsent(key, body, contentType)) {
        uploadedObjects += 1;
        uploadedBytes += Buffer.byteLength(body);
      }
    };
    // Blobs are sent while the scan holds each file open (one upload per hash, even when two
    // files hold the same bytes), from the bytes it hashed.
    const sending = new Map<string, Promise<void>>();
    const blobs: BlobSink = {
      has: (hash) => stored.has(hash) || sending.has(hash),
      put: (hash, body) => {
        const sent = (async () => {
          if (sha256Hex(body) !== hash)
            throw new Error(`workspace blob ${hash}: the bytes to send do not match it`);
          await upload(workspaceBlobKey(this.prefix, ref, hash), body, "application/octet-stream");
          stored.add(hash);
        })();
        sending.set(hash, sent);
        return sent;
      },
    };
    const scan = await scanWorkspace(dir, index, options.maxBytes ?? DEFAULT_SNAPSHOT_MAX_BYTES, blobs);
    if (existing?.record.root === scan.root) {
      index.stored = [...stored];
      index.lastRoot = scan.root;
      await writeLocalIndex(dir, index);
      return {
        record: existing.record,
        adopted: true,
        uploadedObjects,
        uploadedBytes,
        hashedFiles: scan.hashedFiles,
      };
    }
    // Trees after blobs (a tree names only stored objects), children before parents (visit order).
    for (const tree of scan.trees) {
      if (stored.has(tree.hash)) continue;
      // Gzipped: a tree is mostly names and hex hashes, which compress to about half.
      await upload(workspaceTreeKey(this.prefix, ref, tree.hash), gzipSync(tree.body), "application/gzip");
      stored.add(tree.hash);
    }
    const record: SnapshotRecord = {
      version: 1,
      afterEntryId: options.afterEntryId,
      afterSeq: options.afterSeq,
      root: scan.root,
      files: scan.files.length,
      bytes: scan.totalBytes,
      createdAt: monotonicCreatedAt(),
    };
    const body = JSON.stringify(record);
    const written = existing?.etag
      ? await this.conditional.replaceIfMatch(recordKey, body, "application/json", existing.etag)
      : await this.conditional.createIfAbsent(recordKey, body, "application/json");
    if (written) {
      uploadedObjects += 1;
      uploadedBytes += Buffer.byteLength(body);
    }
    index.stored = [...stored];
    index.lastRoot = scan.root;
    await writeLocalIndex(dir, index);
    const final = written ? record : ((await readAfterConflict(() => this.getRecordAt(recordKey))) ?? record);
    return {
      record: final,
      adopted: !written,
      uploadedObjects,
      uploadedBytes,
      hashedFiles: scan.hashedFiles,
    };
  }

  /** The snapshot recorded after `entryId`, if any. */
  getRecord(ref: SessionRef, entryId: string): Promise<SnapshotRecord | undefined> {
    return this.getRecordAt(workspaceSnapshotKey(this.prefix, ref, entryId));
  }

  /**
   * Whether `dir` still holds exactly the state last recorded in or restored from S3 (scans with
   * the local index: only changed files are read). False when it was never recorded.
   */
  async matchesLastSnapshot(dir: string): Promise<boolean> {
    const index = await readLocalIndex(dir);
    if (!index.lastRoot) return false;
    const scan = await scanWorkspace(dir, index, Number.POSITIVE_INFINITY);
    return scan.root === index.lastRoot;
  }

  /** The session's most recent snapshot (latest `createdAt`), or undefined when it has none. */
  async newestRecord(ref: SessionRef): Promise<SnapshotRecord | undefined> {
    const records = await Promise.all(
      [...(await this.snapshottedEntryIds(ref))].map((id) => this.getRecord(ref, id)),
    );
    let newest: SnapshotRecord | undefined;
    for (const record of records)
      if (record && (!newest || record.createdAt > newest.createdAt)) newest = record;
    return newest;
  }

  /** Ids of the entries that have a snapshot (one listing). */
  async snapshottedEntryIds(ref: SessionRef): Promise<Set<string>> {
    const folder = workspaceSnapshotsPrefix(this.prefix, ref);
    const ids = new Set<string>();
    for await (const object of listObjects(this.client, { Bucket: this.bucket, Prefix: folder })) {
      const id = object.Key ? snapshotEntryIdOfKey(folder, object.Key) : null;
      if (id) ids.add(id);
    }
    return ids;
  }

  /**
   * The snapshot that applies to an entry: that of the first step of `ancestry` (the entry, its
   * parent, … up to the root) that has one; for a group of entries (the tool results of one
   * batch), the newest snapshot among them (latest `createdAt`; on a tie, the first listed).
   * Undefined when none does.
   */
  async findForEntry(
    ref: SessionRef,
    ancestry: readonly AncestryStep[],
  ): Promise<SnapshotRecord | undefined> {
    const ids = await this.snapshottedEntryIds(ref);
    for (const step of ancestry) {
      const candidates = (typeof step === "string" ? [step] : step).filter((id) => ids.has(id));
      if (candidates.length === 0) continue;
      const records = await Promise.all(candidates.map((id) => this.getRecord(ref, id)));
      let newest: SnapshotRecord | undefined;
      for (const record of records)
        if (record && (!newest || record.createdAt > newest.createdAt)) newest = record;
      return newest;
    }
    return undefined;
  }

  /**
   * Restores the state `record` names into `targetDir`, replacing what is there: it is built in a
   * staging sibling and swapped in, so a failure (a missing object, a tree or blob that does not
   * match its hash) leaves the old directory as it was and no staging behind. The local index of
   * `targetDir` is rewritten to the restored state (nothing is re-hashed or re-uploaded next
   * time). `record` belongs to `ref`'s session (for a fork: the session forked from).
   *
   * Everything is created through held descriptors of the staging directory: new files
   * exclusively and without following links, links as links (their text is never followed),
   * modes without setuid, setgid or sticky bits (`PERMISSION_BITS`), so no tree, however it was
   * made, writes outside the staging directory or leaves a setuid file on the host.
   */
  async restore(
    ref: SessionRef,
    record: SnapshotRecord,
    targetDir: string,
    targetRef?: SessionRef,
  ): Promise<RestoreResult> {
    const staging = siblingPathOf(targetDir, "restore");
    const index: LocalIndex = emptyIndex();
    const result: RestoreResult = { files: 0, bytes: 0, downloadedObjects: 0 };

    const build = async (treeHash: string, dirFd: number, relative: string): Promise<void> => {
      const tree = await this.getTree(ref, treeHash);
      result.downloadedObjects += 1;
      index.stored.push(treeHash);
      const names = new Set(tree.entries.map((entry) => entry.name));
      if (names.size !== tree.entries.length) throw new Error(`workspace tree ${treeHash} repeats a name`);
      const files = tree.entries.filter((entry) => entry.type === "file");
      await mapWithLimit(files, UPLOAD_CONCURRENCY, async (entry) => {
        const body = await this.getBlob(ref, entry.hash);
        result.downloadedObjects += 1;
        const stats = await createFileAt(dirFd, entry.name, body, entry.mode);
        const childRelative = relative ? `${relative}/${entry.name}` : entry.name;
        index.files[childRelative] = {
          size: stats.size,
          mtimeMs: stats.mtimeMs,
          ctimeMs: stats.ctimeMs,
          ino: stats.ino,
          hash: entry.hash,
        };
        index.stored.push(entry.hash);
        result.files += 1;
        result.bytes += body.length;
      });
      for (const entry of tree.entries) {
        if (entry.type === "symlink") await symlinkAt(entry.target, dirFd, entry.name);
        else if (entry.type === "dir") {
          await mkdirAt(dirFd, entry.name);
          const handle = await openDirAt(dirFd, entry.name);
          try {
            await build(entry.tree, handle.fd, relative ? `${relative}/${entry.name}` : entry.name);
            // A folder's mode after its content: a read-only folder must still receive its children.
            await handle.chmod(entry.mode & PERMISSION_BITS);
          } finally {
            await handle.close();
          }
        }
      }
    };

    try {
      await fs.mkdir(staging, { recursive: true, mode: 0o755 });
      await WorkspaceFs.with(staging, (workspace) => build(record.root, workspace.rootFd, ""));
    } catch (error) {
      await removeTree(staging);
      throw error;
    }
    // The swap works on paths, which is safe here: `targetDir`, `aside` and `staging` are entries
    // of the session's folder under the worker's workspace root, which host-side code alone
    // creates (a sandbox sees only its own workspace, mounted, never the folder that holds it).
    // `rename` moves the entry itself, never following a link, and the session's directory is
    // replaced whole; what is left of the old one is removed through descriptors (`removeTree`),
    // since a process that still has it mounted could change it while it goes.
    const aside = siblingPathOf(targetDir, "replaced");
    const hadTarget = await fs.rename(targetDir, aside).then(
      () => true,
      () => false,
    );
    await fs.mkdir(path.dirname(targetDir), { recursive: true });
    await fs.rename(staging, targetDir);
    if (hadTarget) await removeTree(aside);
    // Objects of another session (a fork) are not stored under the target session yet.
    const sameSession =
      !targetRef || (targetRef.tenantId === ref.tenantId && targetRef.sessionId === ref.sessionId);
    if (!sameSession) index.stored = [];
    index.lastRoot = record.root;
    await writeLocalIndex(targetDir, index);
    return result;
  }

  /** The tree `hash` of `ref`'s session; refused when its bytes do not hash to `hash`. */
  async getTree(ref: SessionRef, hash: string): Promise<Tree> {
    const key = workspaceTreeKey(this.prefix, ref, hash);
    const text = gunzipSync(await this.getObject(key)).toString("utf8");
    if (sha256Hex(text) !== hash) throw new CorruptObjectError(key, "the tree does not match its hash");
    return TreeSchema.parse(JSON.parse(text));
  }

  /** The size in bytes of the blob `hash` of `ref`'s session, without reading it. */
  async blobSize(ref: SessionRef, hash: string): Promise<number> {
    const key = workspaceBlobKey(this.prefix, ref, hash);
    const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
    return head.ContentLength ?? 0;
  }

  /** The blob `hash` of `ref`'s session; refused when its bytes do not hash to `hash`. */
  async getBlob(ref: SessionRef, hash: string): Promise<Buffer> {
    const key = workspaceBlobKey(this.prefix, ref, hash);
    const body = await this.getObject(key);
    if (sha256Hex(body) !== hash) throw new CorruptObjectError(key, "the blob's bytes do not match its hash");
    return body;
  }

  private async getObject(key: string): Promise<Buffer> {
    return (await this.getObjectAndEtag(key)).body;
  }

  private async getObjectAndEtag(key: string): Promise<{ body: Buffer; etag: string | undefined }> {
    const response = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    const body = Buffer.from((await response.Body?.transformToByteArray()) ?? new Uint8Array());
    return { body, etag: response.ETag };
  }

  private async getRecordAt(key: string): Promise<SnapshotRecord | undefined> {
    return (await this.getStoredRecord(key))?.record;
  }

  /** The record at `key` and its ETag (for a conditional replace); undefined when absent. */
  private async getStoredRecord(
    key: string,
  ): Promise<{ record: SnapshotRecord; etag: string | undefined } | undefined> {
    try {
      const { body, etag } = await this.getObjectAndEtag(key);
      return { record: SnapshotRecordSchema.parse(JSON.parse(body.toString("utf8"))), etag };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }
}
