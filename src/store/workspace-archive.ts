/**
 * Session archives: one `.tar.gz` holding a session and its workspace, as written by
 * `keel export --with-workspace` and read by the import (docs/store.md, "Export with the
 * workspace"). Layout, openable with `tar xzf`:
 *
 *   session.jsonl     the pi session file (version 3)
 *   workspace/…       the workspace's files, directories and symbolic links at the leaf
 *
 * Reading confines every path to the archive's own tree: absolute paths, `..` segments, entries
 * below a symbolic link, links whose target leaves `workspace/`, duplicates and other entry kinds
 * are refused with an `ArchiveError` naming the entry, before anything is written.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { ArchiveError, readTar, type TarEntry, writeTar } from "./tar";
import { IGNORED_PATHS } from "./workspace-tree";

export const SESSION_FILE = "session.jsonl";
export const WORKSPACE_FOLDER = "workspace";
/** Default cap on an archive's unpacked size (a small gzip body can unpack to gigabytes). */
export const DEFAULT_ARCHIVE_MAX_BYTES = 1024 ** 3;

/** gzip's magic bytes: how an import body is recognized as an archive. */
export const isGzip = (body: Uint8Array): boolean => body[0] === 0x1f && body[1] === 0x8b;

/** The archive of a session file and (optionally) a workspace directory, gzipped. */
export async function packSessionArchive(jsonl: string, workspaceDir?: string): Promise<Buffer> {
  const entries: TarEntry[] = [{ type: "file", path: SESSION_FILE, mode: 0o644, body: Buffer.from(jsonl) }];
  if (workspaceDir !== undefined) {
    entries.push({ type: "dir", path: WORKSPACE_FOLDER, mode: 0o755 });
    entries.push(...(await collectTree(workspaceDir, WORKSPACE_FOLDER, "")));
  }
  return gzipSync(writeTar(entries));
}

/** Files, folders and links under `dir`, sorted by name; `.keel/scratch`, sockets, FIFOs and devices left out. */
async function collectTree(dir: string, archivePrefix: string, relative: string): Promise<TarEntry[]> {
  const entries: TarEntry[] = [];
  const names = (await fs.readdir(path.join(dir, relative))).sort();
  for (const name of names) {
    const childRelative = relative ? `${relative}/${name}` : name;
    if (IGNORED_PATHS.includes(childRelative)) continue;
    const absolute = path.join(dir, childRelative);
    const archived = `${archivePrefix}/${childRelative}`;
    const stats = await fs.lstat(absolute);
    if (stats.isSymbolicLink()) {
      entries.push({ type: "symlink", path: archived, target: await fs.readlink(absolute) });
    } else if (stats.isDirectory()) {
      entries.push({ type: "dir", path: archived, mode: stats.mode & 0o777 });
      entries.push(...(await collectTree(dir, archivePrefix, childRelative)));
    } else if (stats.isFile()) {
      entries.push({
        type: "file",
        path: archived,
        mode: stats.mode & 0o777,
        body: await fs.readFile(absolute),
      });
    }
  }
  return entries;
}

/** What an archive holds: the session file's text and the workspace entries (paths relative to it). */
export interface SessionArchive {
  jsonl: string;
  /** Undefined when the archive has no `workspace/` folder. */
  workspace: TarEntry[] | undefined;
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

/**
 * Reads a gzipped session archive and checks every entry (see the module comment). `maxBytes`
 * caps the unpacked size.
 */
export function readSessionArchive(gzipped: Buffer, maxBytes = DEFAULT_ARCHIVE_MAX_BYTES): SessionArchive {
  let archive: Buffer;
  try {
    archive = gunzipSync(gzipped, { maxOutputLength: maxBytes });
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE")
      throw new ArchiveError(`the archive unpacks to more than ${maxBytes} bytes`);
    throw new ArchiveError(`the archive is not valid gzip: ${(error as Error).message}`);
  }
  let jsonl: string | undefined;
  let workspace: TarEntry[] | undefined;
  const seen = new Set<string>();
  const links = new Set<string>();
  const files = new Set<string>();
  for (const entry of readTar(archive)) {
    const name = confined(entry.path);
    if (seen.has(name)) throw new ArchiveError(`archive entry ${JSON.stringify(name)} appears twice`);
    seen.add(name);
    const segments = name.split("/");
    for (let i = 1; i < segments.length; i += 1) {
      const ancestor = segments.slice(0, i).join("/");
      if (links.has(ancestor)) {
        throw new ArchiveError(`archive entry ${JSON.stringify(name)} lies below a symbolic link`);
      }
      if (files.has(ancestor)) {
        throw new ArchiveError(`archive entry ${JSON.stringify(name)} lies below a file`);
      }
    }
    if (name === SESSION_FILE && entry.type === "file") {
      jsonl = entry.body.toString("utf8");
      continue;
    }
    if (name === WORKSPACE_FOLDER && entry.type === "dir") {
      workspace ??= [];
      continue;
    }
    if (segments[0] !== WORKSPACE_FOLDER || segments.length < 2) {
      throw new ArchiveError(
        `archive entry ${JSON.stringify(name)}: expected ${SESSION_FILE} and ${WORKSPACE_FOLDER}/… only`,
      );
    }
    const relative = segments.slice(1).join("/");
    if (entry.type === "symlink") {
      links.add(name);
      checkLinkTarget(relative, entry.target);
    }
    if (entry.type === "file") files.add(name);
    workspace ??= [];
    workspace.push({ ...entry, path: relative });
  }
  if (jsonl === undefined) throw new ArchiveError(`the archive has no ${SESSION_FILE}`);
  return { jsonl, workspace };
}

/** A link's target must be relative and stay inside the workspace (resolved from the link's folder). */
function checkLinkTarget(relative: string, target: string): void {
  const what = `symbolic link ${JSON.stringify(`${WORKSPACE_FOLDER}/${relative}`)} -> ${JSON.stringify(target)}`;
  if (target === "" || target.includes("\0")) throw new ArchiveError(`${what}: empty or invalid target`);
  if (target.startsWith("/")) throw new ArchiveError(`${what}: absolute targets are refused`);
  const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(relative), target));
  if (resolved === ".." || resolved.startsWith("../")) {
    throw new ArchiveError(`${what}: points outside the workspace`);
  }
}

/**
 * Writes checked workspace entries (from `readSessionArchive`) into `dir`, which must not exist
 * yet. Files keep their permission bits (owner read/write always added), folders get theirs last.
 */
export async function writeWorkspaceEntries(entries: readonly TarEntry[], dir: string): Promise<void> {
  await fs.mkdir(dir);
  const folderModes: Array<[string, number]> = [];
  for (const entry of entries) {
    const target = path.join(dir, entry.path);
    if (entry.type === "dir") {
      await fs.mkdir(target, { recursive: true });
      folderModes.push([target, entry.mode | 0o700]);
      continue;
    }
    await fs.mkdir(path.dirname(target), { recursive: true });
    if (entry.type === "symlink") await fs.symlink(entry.target, target);
    else await fs.writeFile(target, entry.body, { mode: entry.mode | 0o600, flag: "wx" });
  }
  for (const [folder, mode] of folderModes.reverse()) await fs.chmod(folder, mode);
}
