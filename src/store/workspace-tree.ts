/**
 * A workspace as content-addressed objects: file contents are blobs named by their SHA-256, each
 * directory is a tree object (its sorted entries, JSON) named by the SHA-256 of its bytes, and
 * the root tree's hash names the whole state. Editing one file changes that blob and the trees on
 * its path to the root, nothing else.
 *
 * Scanning keeps a local index (size, mtime, ctime, inode → hash) beside the workspace, so an
 * unchanged file is neither read nor hashed again.
 */
import { createHash } from "node:crypto";
import type { Stats } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { z } from "zod";

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

export const TreeEntrySchema = z.discriminatedUnion("type", [
  z.object({ name: Name, type: z.literal("file"), mode: Mode, size: z.number().int().min(0), hash: Hash }),
  z.object({ name: Name, type: z.literal("dir"), mode: Mode, tree: Hash }),
  z.object({ name: Name, type: z.literal("symlink"), target: z.string().min(1).max(4096) }),
]);
export type TreeEntry = z.infer<typeof TreeEntrySchema>;

export const TreeSchema = z.object({ version: z.literal(1), entries: z.array(TreeEntrySchema) });
export type Tree = z.infer<typeof TreeSchema>;

/** One tree object ready to store: its hash and exact bytes. */
export interface TreeObject {
  hash: string;
  body: string;
}

/** A regular file found by a scan: where it is and what it holds. */
export interface ScannedFile {
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
  /** Sockets, FIFOs and devices: not recorded. */
  skipped: string[];
}

/** Cached hash of a file, valid while its size, mtime, ctime and inode are unchanged. */
export interface IndexedFile {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
  hash: string;
}

export const LocalIndexSchema = z.object({
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

/** Files stat'ed or hashed at once while scanning one folder. */
const SCAN_CONCURRENCY = 16;

/** Runs `work` over `items` with at most `limit` calls in flight; rejects with the first failure. */
export async function mapWithLimit<T>(
  items: Iterable<T>,
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  const iterator = items[Symbol.iterator]();
  const worker = async () => {
    for (let next = iterator.next(); !next.done; next = iterator.next()) await work(next.value);
  };
  await Promise.all(Array.from({ length: limit }, worker));
}

export const sha256 = (data: string | Buffer): string => createHash("sha256").update(data).digest("hex");

async function hashFile(file: string): Promise<string> {
  const hash = createHash("sha256");
  const handle = await fs.open(file, "r");
  try {
    for await (const chunk of handle.createReadStream()) hash.update(chunk as Buffer);
  } finally {
    await handle.close();
  }
  return hash.digest("hex");
}

export function treeObject(entries: TreeEntry[]): TreeObject {
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const body = JSON.stringify({ version: 1, entries: sorted } satisfies Tree);
  return { hash: sha256(body), body };
}

const unchanged = (cached: IndexedFile | undefined, stats: Stats): cached is IndexedFile =>
  cached !== undefined &&
  cached.size === stats.size &&
  cached.mtimeMs === stats.mtimeMs &&
  cached.ctimeMs === stats.ctimeMs &&
  cached.ino === stats.ino;

/**
 * Scans `dir` into trees and blobs. Files unchanged since `index` keep their hash without being
 * read; `index.files` is updated in place to the scanned state. Throws WorkspaceTooLargeError
 * once the files add up to more than `maxBytes`.
 */
export async function scanWorkspace(dir: string, index: LocalIndex, maxBytes: number): Promise<Scan> {
  const trees: TreeObject[] = [];
  const files: ScannedFile[] = [];
  const skipped: string[] = [];
  const seen = new Set<string>();
  let totalBytes = 0;
  let hashedFiles = 0;

  async function visit(absolute: string, relative: string): Promise<string> {
    const names = (await fs.readdir(absolute)).sort();
    const children = names
      .map((name) => ({
        name,
        relative: relative ? `${relative}/${name}` : name,
        absolute: path.join(absolute, name),
      }))
      .filter((child) => !IGNORED_PATHS.includes(child.relative));
    // Stats and hashes of one folder in parallel (bounded): a scan is mostly waiting on the disk.
    const described = new Array<TreeEntry | undefined>(children.length);
    await mapWithLimit(children.entries(), SCAN_CONCURRENCY, async ([position, child]) => {
      const stats = await fs.lstat(child.absolute);
      const mode = stats.mode & 0o7777;
      if (stats.isSymbolicLink()) {
        described[position] = {
          name: child.name,
          type: "symlink",
          target: await fs.readlink(child.absolute),
        };
      } else if (stats.isFile()) {
        totalBytes += stats.size;
        if (totalBytes > maxBytes) throw new WorkspaceTooLargeError(totalBytes, maxBytes);
        const cached = index.files[child.relative];
        let hash: string;
        if (unchanged(cached, stats)) hash = cached.hash;
        else {
          hash = await hashFile(child.absolute);
          hashedFiles += 1;
          const { size, mtimeMs, ctimeMs, ino } = stats;
          index.files[child.relative] = { size, mtimeMs, ctimeMs, ino, hash };
        }
        seen.add(child.relative);
        files.push({ relative: child.relative, hash, size: stats.size });
        described[position] = { name: child.name, type: "file", mode, size: stats.size, hash };
      } else if (stats.isDirectory()) {
        described[position] = { name: child.name, type: "dir", mode, tree: "" };
      } else {
        skipped.push(child.relative);
      }
    });
    // Sub-folders one after another, so the number of open files stays bounded.
    const entries: TreeEntry[] = [];
    for (const [position, entry] of described.entries()) {
      if (entry?.type === "dir") {
        const child = children[position];
        if (child) entries.push({ ...entry, tree: await visit(child.absolute, child.relative) });
      } else if (entry) entries.push(entry);
    }
    const tree = treeObject(entries);
    trees.push(tree);
    return tree.hash;
  }

  const root = await visit(dir, "");
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
