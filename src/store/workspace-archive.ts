/**
 * Session archives: one `.tar.gz` holding a session and its workspace, as written by
 * `keel export --with-workspace` and read by the import (docs/store.md, "Export with the
 * workspace"). Layout, openable with `tar xzf`:
 *
 *   session.jsonl     the pi session file (version 3)
 *   workspace/…       the workspace's files, directories and symbolic links at the leaf
 *
 * Both ways are streams (archive-stream.ts). Unpacking writes through the workspace file layer
 * (tools/workspace-fs.ts) with links refused on the way, so no entry is ever written through a
 * link an earlier entry made; links are created as links and judged once everything is
 * unpacked, by resolving each one inside the unpacked tree as the file tools would.
 */
import { fchmod } from "node:fs";
import * as fs from "node:fs/promises";
import type { Readable } from "node:stream";
import { promisify } from "node:util";
import type { ReadEntry } from "tar";
import {
  errorCode,
  lstatAt,
  openDirAt,
  openFileAt,
  PERMISSION_BITS,
  readDirAt,
  WorkspaceFs,
  WorkspacePathError,
} from "../tools/workspace-fs";
import {
  ArchiveError,
  type ArchiveLimits,
  DEFAULT_ARCHIVE_LIMITS,
  gunzipWithLimits,
  gzipStream,
  readTarStream,
  TAR_END,
  tarHeader,
  tarPadding,
} from "./archive-stream";
import { IGNORED_PATHS } from "./workspace-tree";

export { ArchiveError } from "./archive-stream";

const SESSION_FILE = "session.jsonl";
const WORKSPACE_FOLDER = "workspace";
const READ_CHUNK_BYTES = 64 * 1024;
const fchmodAsync = promisify(fchmod);

/** gzip's magic bytes: how an import body is recognized as an archive. */
export const isGzip = (body: Uint8Array): boolean => body[0] === 0x1f && body[1] === 0x8b;

/**
 * The archive of a session file and (optionally) a workspace directory, as a gzip stream. The
 * directory is read through the file layer (links never followed, only regular files opened)
 * while the stream is consumed; it must stay in place until the stream ends or is destroyed.
 */
export function packSessionArchive(jsonl: string, workspaceDir?: string): Readable {
  return gzipStream(sessionTarBlocks(Buffer.from(jsonl), workspaceDir));
}

async function* sessionTarBlocks(jsonl: Buffer, workspaceDir: string | undefined): AsyncGenerator<Buffer> {
  yield tarHeader({ path: SESSION_FILE, type: "File", mode: 0o644, size: jsonl.length });
  yield jsonl;
  yield tarPadding(jsonl.length);
  if (workspaceDir !== undefined) {
    yield tarHeader({ path: `${WORKSPACE_FOLDER}/`, type: "Directory", mode: 0o755 });
    const workspace = await WorkspaceFs.open(workspaceDir);
    try {
      yield* treeTarBlocks(workspace.rootFd, "");
    } finally {
      await workspace.close();
    }
  }
  yield TAR_END;
}

/** Files, folders and links under a held directory, sorted by name; `.keel/scratch`, sockets, FIFOs and devices left out. */
async function* treeTarBlocks(dirFd: number, relative: string): AsyncGenerator<Buffer> {
  for (const dirent of await readDirAt(dirFd)) {
    const childRelative = relative ? `${relative}/${dirent.name}` : dirent.name;
    if (IGNORED_PATHS.includes(childRelative)) continue;
    const archived = `${WORKSPACE_FOLDER}/${childRelative}`;
    const stats = await lstatAt(dirFd, dirent.name);
    if (stats?.isSymbolicLink()) {
      const target = await fs.readlink(`/proc/self/fd/${dirFd}/${dirent.name}`);
      yield tarHeader({ path: archived, type: "SymbolicLink", mode: 0o777, linkpath: target });
    } else if (stats?.isDirectory()) {
      yield tarHeader({ path: `${archived}/`, type: "Directory", mode: stats.mode & PERMISSION_BITS });
      const handle = await openDirAt(dirFd, dirent.name);
      try {
        yield* treeTarBlocks(handle.fd, childRelative);
      } finally {
        await handle.close();
      }
    } else if (stats?.isFile()) {
      yield* fileTarBlocks(dirFd, dirent.name, archived);
    }
  }
}

/** One regular file: its header (size and mode from the opened descriptor) and its body, read in chunks. */
async function* fileTarBlocks(dirFd: number, name: string, archived: string): AsyncGenerator<Buffer> {
  const { handle, stats } = await openFileAt(dirFd, name);
  try {
    yield tarHeader({ path: archived, type: "File", mode: stats.mode & PERMISSION_BITS, size: stats.size });
    let left = stats.size;
    while (left > 0) {
      const { bytesRead, buffer } = await handle.read(Buffer.alloc(Math.min(left, READ_CHUNK_BYTES)), 0);
      // A file that shrank while it was read is padded to the size its header announced.
      if (bytesRead === 0) {
        yield Buffer.alloc(left);
        break;
      }
      yield buffer.subarray(0, bytesRead);
      left -= bytesRead;
    }
    yield tarPadding(stats.size);
  } finally {
    await handle.close();
  }
}

/** What an unpacked archive held: the session file's text, and whether it had a `workspace/` folder. */
export interface UnpackedArchive {
  jsonl: string;
  workspace: boolean;
}

/** `name` as a confined relative path (`a/b`), or an ArchiveError saying why not. */
function confined(name: string): string {
  if (name.includes("\0")) throw new ArchiveError(`archive entry ${JSON.stringify(name)}: NUL in its path`);
  if (name.startsWith("/"))
    throw new ArchiveError(`archive entry ${JSON.stringify(name)}: absolute paths are refused`);
  const segments = name.split("/").filter((segment) => segment !== "" && segment !== ".");
  if (segments.includes("..")) {
    throw new ArchiveError(`archive entry ${JSON.stringify(name)}: ".." would leave the archive's folder`);
  }
  if (segments.length === 0) throw new ArchiveError(`archive entry ${JSON.stringify(name)}: empty path`);
  return segments.join("/");
}

/** Entry kinds unpacked as regular files (a contiguous file is one to every reader but a tape). */
const FILE_TYPES = new Set(["File", "OldFile", "ContiguousFile"]);
/** Names of the refused kinds most archives could hold, for the error message. */
const REFUSED_KINDS: Record<string, string> = {
  Link: "hard link",
  CharacterDevice: "character device",
  BlockDevice: "block device",
  FIFO: "FIFO",
};

/**
 * Reads the gzipped session archive `body` as it arrives and unpacks its `workspace/` into
 * `dir` (created here; it must not exist). Refused with an `ArchiveError` naming the entry:
 * absolute paths, `..` segments, entries below a link or a file of the archive, duplicates,
 * hard links, devices, FIFOs and every other kind, other top-level names, a missing
 * `session.jsonl`, links whose resolution inside the unpacked tree leaves it (or loops), and
 * anything over `limits` (`overLimit`). Modes keep their permission bits only. On a refusal
 * `dir` may hold part of the archive: the caller removes it.
 */
export async function unpackSessionArchive(
  body: AsyncIterable<Uint8Array>,
  dir: string,
  limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
): Promise<UnpackedArchive> {
  await fs.mkdir(dir);
  return WorkspaceFs.with(dir, async (workspace) => {
    let jsonl: string | undefined;
    let hasWorkspace = false;
    let entries = 0;
    const folderModes: Array<[string, number]> = [];

    const unpackEntry = async (entry: ReadEntry): Promise<void> => {
      entries += 1;
      if (entries > limits.maxEntries) {
        throw new ArchiveError(`the archive has more than ${limits.maxEntries} entries`, true);
      }
      const name = confined(entry.path);
      const what = `archive entry ${JSON.stringify(name)}`;
      if (entry.size > limits.maxEntryBytes) {
        throw new ArchiveError(`${what} is larger than ${limits.maxEntryBytes} bytes`, true);
      }
      const isFile = FILE_TYPES.has(entry.type);
      if (!isFile && entry.type !== "Directory" && entry.type !== "SymbolicLink") {
        const kind = REFUSED_KINDS[entry.type] ?? `${entry.type} entry`;
        throw new ArchiveError(
          `${what} is a ${kind}; only files, directories and symbolic links are accepted (the import is refused)`,
        );
      }
      if (name === SESSION_FILE && isFile) {
        if (jsonl !== undefined) throw new ArchiveError(`${what} appears twice`);
        const chunks: Buffer[] = [];
        for await (const chunk of entry as AsyncIterable<Buffer>) chunks.push(chunk);
        jsonl = Buffer.concat(chunks).toString("utf8");
        return;
      }
      if (name === WORKSPACE_FOLDER && entry.type === "Directory") {
        hasWorkspace = true;
        return;
      }
      const segments = name.split("/");
      if (segments[0] !== WORKSPACE_FOLDER || segments.length < 2) {
        throw new ArchiveError(`${what}: expected ${SESSION_FILE} and ${WORKSPACE_FOLDER}/… only`);
      }
      hasWorkspace = true;
      const relative = segments.slice(1).join("/");
      try {
        if (entry.type === "Directory") {
          // Archives need not list a folder's parents (GNU tar given `a/b/c` does not): made here.
          const existing = await workspace.lstat(relative, { links: "refuse" }).catch((error: unknown) => {
            if (errorCode(error) === "ENOENT") return undefined;
            throw error;
          });
          if (existing && !existing.isDirectory()) throw new ArchiveError(`${what} appears twice`);
          await workspace.mkdirp(relative);
          folderModes.push([relative, ((entry.mode ?? 0o755) & PERMISSION_BITS) | 0o700]);
        } else if (entry.type === "SymbolicLink") {
          await workspace.symlink(entry.linkpath ?? "", relative);
        } else {
          await writeEntryFile(workspace, relative, entry);
        }
      } catch (error) {
        throw entryError(what, error);
      }
    };

    await readTarStream(gunzipWithLimits(body, limits), unpackEntry);
    if (jsonl === undefined) throw new ArchiveError(`the archive has no ${SESSION_FILE}`);
    await checkLinks(workspace, workspace.rootFd, "");
    // Deepest first, so a folder made read-only does not stop the change of one below it.
    for (const [folder, mode] of folderModes.reverse()) {
      await workspace.withDir(folder, { links: "refuse" }, (fd) => fchmodAsync(fd, mode));
    }
    return { jsonl, workspace: hasWorkspace };
  });
}

/** Writes a file entry's body to a new file (never an existing name), with its permission bits. */
async function writeEntryFile(workspace: WorkspaceFs, relative: string, entry: ReadEntry): Promise<void> {
  const { handle } = await workspace.openForWrite(relative, {
    links: "refuse",
    exclusive: true,
    mode: 0o600,
  });
  try {
    for await (const chunk of entry as AsyncIterable<Buffer>) await handle.write(chunk);
    // After the write: creation modes pass through the umask, and owner read/write is always kept.
    await handle.chmod(((entry.mode ?? 0o644) & PERMISSION_BITS) | 0o600);
  } finally {
    await handle.close();
  }
}

/** An unpacking error as an ArchiveError naming the entry; errors of other kinds pass through. */
function entryError(what: string, error: unknown): unknown {
  if (error instanceof ArchiveError) return error;
  if (error instanceof WorkspacePathError) return new ArchiveError(`${what}: ${error.message}`);
  switch (errorCode(error)) {
    case "EEXIST":
      return new ArchiveError(`${what} appears twice`);
    case "ENOTDIR":
      return new ArchiveError(`${what} lies below a file`);
    default:
      return error;
  }
}

/**
 * Resolves every symbolic link under the held directory `dirFd` inside the workspace, as the
 * file tools do (`links: "inside"`): a link whose resolution leaves the workspace, is absolute
 * outside `/workspace`, or loops is refused. A dangling link that stays inside is kept.
 */
async function checkLinks(workspace: WorkspaceFs, dirFd: number, relative: string): Promise<void> {
  for (const dirent of await readDirAt(dirFd)) {
    const childRelative = relative ? `${relative}/${dirent.name}` : dirent.name;
    if (dirent.isSymbolicLink()) {
      await workspace
        .locate(childRelative, { links: "inside" }, async () => undefined)
        .catch((error: unknown) => {
          if (errorCode(error) === "ENOENT" || errorCode(error) === "ENOTDIR") return;
          if (error instanceof WorkspacePathError) {
            throw new ArchiveError(
              `symbolic link ${JSON.stringify(`${WORKSPACE_FOLDER}/${childRelative}`)} is refused: ${error.message}`,
            );
          }
          throw error;
        });
    } else if (dirent.isDirectory()) {
      const handle = await openDirAt(dirFd, dirent.name);
      try {
        await checkLinks(workspace, handle.fd, childRelative);
      } finally {
        await handle.close();
      }
    }
  }
}
