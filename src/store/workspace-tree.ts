/**
 * A workspace as content-addressed objects: file contents are blobs named by their SHA-256, each
 * directory is a tree object (its sorted entries, JSON) named by the SHA-256 of its bytes, and
 * the root tree's hash names the whole state. Editing one file changes that blob and the trees on
 * its path to the root, nothing else.
 *
 * Scanning keeps a local index (size, mtime, ctime, inode → hash) beside the workspace, so an
 * unchanged file whose blob is stored is neither read nor hashed again. The scan touches the
 * workspace only through the workspace file layer (`src/tools/workspace-fs.ts`): nothing in the
 * tree can make it read a file outside.
 */
import { createHash } from "node:crypto";
import type { Stats } from "node:fs";
import * as fs from "node:fs/promises";
import { z } from "zod";
import {
  errorCode,
  lstatAt,
  openDirAt,
  openFileAt,
  PERMISSION_BITS,
  readDirAt,
  readLinkAt,
  WorkspaceFs,
  WorkspacePathError,
} from "../tools/workspace-fs";
import { mapWithLimit } from "./bounded-map";
import { sha256Hex } from "./digest";

/** Paths never recorded: full outputs of truncated commands (scratch, re-creatable). */
export const IGNORED_PATHS = [".keel/scratch"];

const Name = z
  .string()
  .min(1)
  .max(255)
  .refine((name) => name !== "." && name !== ".." && !name.includes("/") && !name.includes("\0"), {
    message: "not a single path component",
  });
const Hash = z.string().regex(/^[0-9a-f]{64}$/);
const Mode = z.number().int().min(0).max(0o7777);

const TreeEntrySchema = z.discriminatedUnion("type", [
  z.object({ name: Name, type: z.literal("file"), mode: Mode, size: z.number().int().min(0), hash: Hash }),
  z.object({ name: Name, type: z.literal("dir"), mode: Mode, tree: Hash }),
  z.object({ name: Name, type: z.literal("symlink"), target: z.string().min(1).max(4096) }),
]);
export type TreeEntry = z.infer<typeof TreeEntrySchema>;

export const TreeSchema = z.object({ version: z.literal(1), entries: z.array(TreeEntrySchema) });
export type Tree = z.infer<typeof TreeSchema>;

/** One tree object ready to store: its hash and exact bytes. */
interface TreeObject {
  hash: string;
  body: string;
}

/** A regular file found by a scan: where it is and what it holds. */
interface ScannedFile {
  /** Workspace-relative, POSIX separators. */
  relative: string;
  hash: string;
  size: number;
}

export interface Scan {
  root: string;
  /** Every tree object of the state, root included. */
  trees: TreeObject[];
  files: ScannedFile[];
  totalBytes: number;
  /** Files read and hashed in this scan (not found unchanged in the index). */
  hashedFiles: number;
  /** Sockets, FIFOs and devices, and names that kept changing type while looked at: not recorded. */
  skipped: string[];
}

/** Cached hash of a file, valid while its size, mtime, ctime and inode are unchanged. */
interface IndexedFile {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
  hash: string;
}

const LocalIndexSchema = z.object({
  version: z.literal(1),
  files: z.record(
    z.string(),
    z.object({ size: z.number(), mtimeMs: z.number(), ctimeMs: z.number(), ino: z.number(), hash: Hash }),
  ),
  /** Blob and tree hashes known to be stored under this session (uploaded or restored). */
  stored: z.array(Hash),
  /** Root of the last state recorded in (or restored from) S3: the workspace can be evicted while it still matches. */
  lastRoot: Hash.optional(),
});
export type LocalIndex = z.infer<typeof LocalIndexSchema>;

export const emptyIndex = (): LocalIndex => ({ version: 1, files: {}, stored: [] });

/** The workspace was larger than the snapshot cap; nothing was uploaded. */
export class WorkspaceTooLargeError extends Error {
  constructor(
    readonly totalBytes: number,
    readonly maxBytes: number,
  ) {
    super(
      `The workspace holds more than ${maxBytes} bytes of files (snapshot cap, KEEL_SNAPSHOT_MAX_BYTES); it was not snapshotted. Remove large files or raise the cap.`,
    );
    this.name = "WorkspaceTooLargeError";
  }
}

/** Files opened, hashed or uploaded at once while scanning one folder. */
const SCAN_CONCURRENCY = 16;
/** Times an entry is looked at again when it changed type between two steps (file ↔ link, …). */
const MAX_ENTRY_RETRIES = 8;
/** Files up to this size are read whole to be hashed; larger ones are hashed as they stream. */
const IN_MEMORY_HASH_BYTES = 8 * 1024 ** 2;
const READ_CHUNK_BYTES = 1024 ** 2;

/** Where a scan sends file contents: blobs it knows are stored are not read again. */
export interface BlobSink {
  has(hash: string): boolean;
  /** Stores `body` under `hash` (the SHA-256 of `body`, computed from those very bytes). */
  put(hash: string, body: Buffer): Promise<void>;
}

/**
 * Calls `use` with consecutive chunks of the file open at `handle`, read by position from its
 * start, up to `limit` bytes (the size `fstat` reported: a file growing while it is read is
 * recorded as the prefix that was read).
 */
async function readChunks(
  handle: fs.FileHandle,
  limit: number,
  use: (chunk: Buffer) => void,
): Promise<number> {
  let position = 0;
  while (position < limit) {
    const buffer = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, limit - position));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
    if (bytesRead === 0) break;
    use(buffer.subarray(0, bytesRead));
    position += bytesRead;
  }
  return position;
}

/** The first `limit` bytes (at most) of the file open at `handle`, from its start. */
async function readWhole(handle: fs.FileHandle, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await readChunks(handle, limit, (chunk) => chunks.push(chunk));
  return Buffer.concat(chunks);
}

/**
 * Hashes the file open at `handle` and stores it through `blobs` unless its hash is stored
 * already; both from that one descriptor. The hash and size are always those of the bytes read:
 * what is stored under a hash is the bytes that hashed to it. A large file is hashed while it
 * streams and read whole only when it must be sent.
 */
async function hashAndStore(
  handle: fs.FileHandle,
  size: number,
  blobs: BlobSink | undefined,
): Promise<{ hash: string; size: number }> {
  if (size <= IN_MEMORY_HASH_BYTES) return readAndStore(handle, size, blobs);
  const hasher = createHash("sha256");
  const read = await readChunks(handle, size, (chunk) => hasher.update(chunk));
  const hash = hasher.digest("hex");
  if (!blobs || blobs.has(hash)) return { hash, size: read };
  // Read whole to be sent (the S3 body is one buffer), one large file at a time per process.
  const turn = largeReads.then(() => readAndStore(handle, size, blobs));
  largeReads = turn.then(
    () => undefined,
    () => undefined,
  );
  return turn;
}

/** Large files being read whole to be sent, one after the other (bounds the worker's memory). */
let largeReads: Promise<void> = Promise.resolve();

async function readAndStore(
  handle: fs.FileHandle,
  size: number,
  blobs: BlobSink | undefined,
): Promise<{ hash: string; size: number }> {
  const body = await readWhole(handle, size);
  const hash = sha256Hex(body);
  if (blobs && !blobs.has(hash)) await blobs.put(hash, body);
  return { hash, size: body.length };
}

function treeObject(entries: TreeEntry[]): TreeObject {
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const body = JSON.stringify({ version: 1, entries: sorted } satisfies Tree);
  return { hash: sha256Hex(body), body };
}

const unchanged = (cached: IndexedFile | undefined, stats: Stats): cached is IndexedFile =>
  cached !== undefined &&
  cached.size === stats.size &&
  cached.mtimeMs === stats.mtimeMs &&
  cached.ctimeMs === stats.ctimeMs &&
  cached.ino === stats.ino;

/** Codes of an open that lost a race: the name became a link, a directory, or vanished. */
const RACE_CODES = new Set(["ELOOP", "ENOENT", "ENOTDIR", "EISDIR"]);
const lostRace = (error: unknown): boolean =>
  error instanceof WorkspacePathError || RACE_CODES.has(errorCode(error) ?? "");

/**
 * Scans the workspace `dir` into trees and blobs. The tree is the tools' and may change under
 * the scan (docs/store.md, "Workspace snapshots"): directories are listed through held
 * descriptors and never through a link; a link is recorded with its text (read, not followed); a
 * file is opened without following a link, checked with `fstat` on that descriptor (its size,
 * mode and mtime come from there), and hashed and sent from the same descriptor. An entry that
 * changes type while it is looked at is looked at again (bounded; then skipped).
 *
 * With `blobs`, every file whose hash is not stored yet is sent there during the scan. A file
 * unchanged since `index` (same size, mtime, ctime, inode on its descriptor) keeps its hash
 * without being read only when that hash is stored; otherwise it is read and hashed anew.
 * `index.files` is updated in place to the scanned state. Throws WorkspaceTooLargeError once the
 * files add up to more than `maxBytes` (blobs sent before that stay).
 */
export async function scanWorkspace(
  dir: string,
  index: LocalIndex,
  maxBytes: number,
  blobs?: BlobSink,
): Promise<Scan> {
  const trees: TreeObject[] = [];
  const files: ScannedFile[] = [];
  const skipped: string[] = [];
  const seen = new Set<string>();
  let totalBytes = 0;
  let hashedFiles = 0;

  /** Counts a file of `size` bytes against the cap and records it in the scan. */
  function recordFile(name: string, relative: string, mode: number, size: number, hash: string): TreeEntry {
    seen.add(relative);
    files.push({ relative, hash, size });
    return { name, type: "file", mode: mode & PERMISSION_BITS, size, hash };
  }

  function countBytes(size: number): void {
    totalBytes += size;
    if (totalBytes > maxBytes) throw new WorkspaceTooLargeError(totalBytes, maxBytes);
  }

  /**
   * The hash of a file unchanged since the index (its `lstat`: same size, mtime, ctime, inode)
   * whose blob is stored, if it is one: then nothing of it is read. Any other file is opened.
   */
  function storedUnchanged(relative: string, stats: Stats): string | undefined {
    const cached = index.files[relative];
    return unchanged(cached, stats) && (!blobs || blobs.has(cached.hash)) ? cached.hash : undefined;
  }

  /** A file opened by the scan: hashed (and sent) from `handle`, described by its `fstat`. */
  async function describeOpened(handle: fs.FileHandle, stats: Stats, name: string, relative: string) {
    countBytes(stats.size);
    const { hash, size } = await hashAndStore(handle, stats.size, blobs);
    hashedFiles += 1;
    const { mtimeMs, ctimeMs, ino } = stats;
    // The stats taken before reading: a file changed while it was read differs next time.
    index.files[relative] = { size: stats.size, mtimeMs, ctimeMs, ino, hash };
    return recordFile(name, relative, stats.mode, size, hash);
  }

  /**
   * The tree entry of `name` in the held directory `dirFd`; "dir" for a directory when `descend`
   * is false (visited later, one at a time); undefined when it is gone or skipped.
   */
  async function describe(
    dirFd: number,
    name: string,
    relative: string,
    descend: boolean,
  ): Promise<TreeEntry | "dir" | undefined> {
    for (let attempt = 0; attempt < MAX_ENTRY_RETRIES; attempt++) {
      const stats = await lstatAt(dirFd, name);
      if (stats === undefined) return undefined;
      if (stats.isSymbolicLink()) {
        const target = await readLinkAt(dirFd, name);
        if (target !== undefined) return { name, type: "symlink", target };
      } else if (stats.isDirectory()) {
        if (!descend) return "dir";
        const handle = await openDirAt(dirFd, name).catch((error: unknown) => {
          if (lostRace(error)) return undefined;
          throw error;
        });
        if (handle) {
          try {
            const tree = await visit(handle.fd, relative);
            return { name, type: "dir", mode: (await handle.stat()).mode & PERMISSION_BITS, tree };
          } finally {
            await handle.close();
          }
        }
      } else if (stats.isFile()) {
        const known = storedUnchanged(relative, stats);
        if (known !== undefined) {
          countBytes(stats.size);
          return recordFile(name, relative, stats.mode, stats.size, known);
        }
        const opened = await openFileAt(dirFd, name).catch((error: unknown) => {
          if (lostRace(error)) return undefined;
          throw error;
        });
        if (opened) {
          try {
            return await describeOpened(opened.handle, opened.stats, name, relative);
          } finally {
            await opened.handle.close();
          }
        }
      } else {
        skipped.push(relative);
        return undefined;
      }
    }
    // Kept changing type under the scan: not recorded this time.
    skipped.push(relative);
    return undefined;
  }

  async function visit(dirFd: number, relative: string): Promise<string> {
    const children = (await readDirAt(dirFd))
      .map((entry) => ({ name: entry.name, relative: relative ? `${relative}/${entry.name}` : entry.name }))
      .filter((child) => !IGNORED_PATHS.includes(child.relative));
    // Files of one folder in parallel (bounded): a scan is mostly waiting on the disk and S3.
    const described = new Array<TreeEntry | "dir" | undefined>(children.length);
    await mapWithLimit(children.entries(), SCAN_CONCURRENCY, async ([position, child]) => {
      described[position] = await describe(dirFd, child.name, child.relative, false);
    });
    // Sub-folders one after another, so the number of open files stays bounded.
    const entries: TreeEntry[] = [];
    for (const [position, entry] of described.entries()) {
      const child = children[position];
      const done = entry === "dir" && child ? await describe(dirFd, child.name, child.relative, true) : entry;
      if (done && done !== "dir") entries.push(done);
    }
    const tree = treeObject(entries);
    trees.push(tree);
    return tree.hash;
  }

  const root = await WorkspaceFs.with(dir, (workspace) => visit(workspace.rootFd, ""));
  for (const relative of Object.keys(index.files)) if (!seen.has(relative)) delete index.files[relative];
  return { root, trees, files, totalBytes, hashedFiles, skipped };
}

/** Path of the local index of a workspace directory: beside it, out of the tools' reach. */
export const indexPathOf = (workspaceDir: string): string => `${workspaceDir}.snapshot-index.json`;

export async function readLocalIndex(workspaceDir: string): Promise<LocalIndex> {
  try {
    const parsed = LocalIndexSchema.safeParse(
      JSON.parse(await fs.readFile(indexPathOf(workspaceDir), "utf8")),
    );
    return parsed.success ? parsed.data : emptyIndex();
  } catch {
    // Missing or unreadable: start over (everything is hashed once more; S3 writes stay idempotent).
    return emptyIndex();
  }
}

/** Writes the index atomically (temporary file + rename). */
export async function writeLocalIndex(workspaceDir: string, index: LocalIndex): Promise<void> {
  const target = indexPathOf(workspaceDir);
  const temporary = `${target}.${process.pid}.tmp`;
  await fs.writeFile(temporary, JSON.stringify(index));
  await fs.rename(temporary, target);
}
