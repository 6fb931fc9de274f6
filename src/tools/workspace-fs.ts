// Over 400 lines: the one audited boundary of host-side workspace file access; its walk and its descriptor-relative primitives share the same guards.
/**
 * The one way host-side code touches the files of a session's workspace: the file tools, the bash
 * output spill, snapshots, restores and imports all open, create, list and remove workspace files
 * through this module, and nothing in the tree can redirect them outside the workspace.
 *
 * The tree is hostile (a tool process may swap any name for a link, a FIFO or a device at any
 * moment, also while host-side code runs), so no path is checked and then used. Every path is
 * walked beneath the workspace directory one component at a time, each step opened relative to
 * the open descriptor of the directory before it (`/proc/self/fd/<fd>/<name>`: Linux's `openat`,
 * which Node does not expose) and with `O_NOFOLLOW`, so a name swapped for a link between two
 * steps makes that step fail instead of following it. Links inside the tree are either refused
 * (`links: "refuse"`) or resolved by hand against the directories already held open
 * (`links: "inside"`): `..` pops back to a held directory and never above the workspace, an
 * absolute target is taken as the path the tools see (`/workspace/...`) or refused. Files are
 * opened `O_NONBLOCK` (a FIFO cannot hang the worker) and checked with `fstat` on the opened
 * descriptor, so what is read, hashed or uploaded is the file that was checked.
 *
 * Hard links need no defence here: with the sandbox on, a tool process sees only the workspace
 * mount, and `link(2)` never crosses mounts, so every hard link in the tree is to a file of the
 * same workspace.
 *
 * Linux only (the worker's platform): it needs `/proc/self/fd`.
 */
import type { Dirent, Stats } from "node:fs";
import { constants } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { SANDBOX_WORKSPACE_PATH } from "./sandbox";
import { ToolError } from "./tool-error";

const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK } =
  constants;

const MAX_PATH_BYTES = 4096;
const MAX_PATH_SEGMENT_BYTES = 255;
/** Links followed while resolving one path (Linux's own limit). */
const MAX_LINK_HOPS = 40;
/** Times a walk starts over when a name changed under it (a link appeared, a directory vanished). */
const MAX_RACE_RETRIES = 8;
/** Permission bits kept on anything the worker creates: never setuid, setgid or sticky. */
export const PERMISSION_BITS = 0o777;

/** A path that would leave the workspace, or cannot be used safely; the message is for the model. */
export class WorkspacePathError extends ToolError {
  constructor(userPath: string, reason: string) {
    super(`Path ${JSON.stringify(userPath)} refused: ${reason}.`);
    this.name = "WorkspacePathError";
  }
}

/** Refuse every link on the way (snapshots, restores, imports, the spill) or follow those that stay inside. */
export type LinkPolicy = "refuse" | "inside";

/** The errno code of a Node error (checked structurally: such errors may come from another realm). */
export const errorCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined;

const at = (dirFd: number, name: string): string => `/proc/self/fd/${dirFd}/${name}`;

/**
 * A path argument as workspace-relative components. Paths under SANDBOX_WORKSPACE_PATH are the
 * workspace as commands see it; relative paths start at the workspace; any other absolute path,
 * a NUL byte or an over-long path or component is refused. `..` stays in the list: the walk
 * resolves it against the directories it holds.
 */
function pathComponents(userPath: string): string[] {
  if (userPath.length === 0) throw new WorkspacePathError(userPath, "the path is empty");
  if (userPath.includes("\0")) throw new WorkspacePathError(userPath, "the path contains a NUL byte");
  const bytes = Buffer.byteLength(userPath, "utf8");
  if (bytes > MAX_PATH_BYTES) {
    throw new WorkspacePathError(
      `${userPath.slice(0, 64)}…`,
      `the path is ${bytes} bytes long (limit ${MAX_PATH_BYTES})`,
    );
  }
  let rest = userPath;
  if (userPath === SANDBOX_WORKSPACE_PATH) rest = ".";
  else if (userPath.startsWith(`${SANDBOX_WORKSPACE_PATH}/`))
    rest = userPath.slice(SANDBOX_WORKSPACE_PATH.length + 1);
  else if (userPath.startsWith("/")) {
    throw new WorkspacePathError(userPath, `it points outside the workspace (${SANDBOX_WORKSPACE_PATH})`);
  }
  const parts = rest.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.some((part) => Buffer.byteLength(part, "utf8") > MAX_PATH_SEGMENT_BYTES)) {
    throw new WorkspacePathError(
      `${userPath.slice(0, 64)}…`,
      `a path component is longer than ${MAX_PATH_SEGMENT_BYTES} bytes`,
    );
  }
  return parts;
}

/** A directory of the workspace held open, with its path relative to the workspace ("." for the root). */
interface HeldDir {
  handle: fs.FileHandle;
  name: string;
}

/** Where a walk ended: the directory holding the last component, and that component's name and state. */
export interface Located {
  /** The directory that holds `name`, open; the walk's caller closes it through `release`. */
  readonly dirFd: number;
  /** The last component ("" when the path is the workspace itself). */
  readonly name: string;
  /** The canonical path inside the workspace, POSIX separators, "." for the root. */
  readonly relative: string;
  /** `lstat` of the last component when the walk looked; undefined when it does not exist. */
  readonly stats: Stats | undefined;
}

/** How a walk treats links and missing directories. */
export interface WalkOptions {
  links: LinkPolicy;
  /** With `links: "inside"`: follow a link at the last component too (default true). */
  followLast?: boolean;
  /** Create missing directories on the way. */
  create?: boolean;
}

/** A name changed between two steps of a walk: the walk starts over. */
class RaceError extends Error {}

/** Opens the subdirectory `name` of a held directory without following a link. */
export const openDirAt = (dirFd: number, name: string) =>
  fs.open(at(dirFd, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK);

/** `lstat` of `name` in a held directory; undefined when it does not exist. */
export const lstatAt = (dirFd: number, name: string): Promise<Stats | undefined> =>
  fs.lstat(at(dirFd, name)).catch((error: unknown) => {
    if (errorCode(error) === "ENOENT") return undefined;
    throw error;
  });

/**
 * One workspace, opened once for a sequence of operations. Every method takes a path argument
 * (relative, or under `/workspace`) and never leaves the workspace directory; `close` releases
 * the root descriptor. Methods throw WorkspacePathError for paths that are refused and the
 * file system's own errors (ENOENT, EISDIR, …) otherwise.
 */
export class WorkspaceFs {
  private constructor(
    private readonly root: fs.FileHandle,
    /** Absolute path of the workspace directory, for messages only: never used for I/O. */
    readonly dir: string,
  ) {}

  /** Opens the workspace directory (created beforehand by the caller). */
  static async open(dir: string): Promise<WorkspaceFs> {
    return new WorkspaceFs(await fs.open(dir, O_RDONLY | O_DIRECTORY), dir);
  }

  /** Runs `use` with the workspace opened, and closes it afterwards. */
  static async with<T>(dir: string, use: (workspace: WorkspaceFs) => Promise<T>): Promise<T> {
    const workspace = await WorkspaceFs.open(dir);
    try {
      return await use(workspace);
    } finally {
      await workspace.close();
    }
  }

  async close(): Promise<void> {
    await this.root.close();
  }

  /** The descriptor of the workspace directory, for `*At` calls on the root itself. */
  get rootFd(): number {
    return this.root.fd;
  }

  /**
   * Walks to the last component of `userPath` and runs `use` with the directory that holds it;
   * every directory opened on the way is closed afterwards. With `links: "inside"` a link at the
   * last component is followed too unless `followLast` is false. With `create`, missing
   * directories on the way are created (mode 0o755). A walk that loses a race (a name changed
   * between two steps) starts over, a bounded number of times.
   */
  async locate<T>(userPath: string, options: WalkOptions, use: (located: Located) => Promise<T>): Promise<T> {
    const components = pathComponents(userPath);
    for (let attempt = 0; ; attempt++) {
      const held: HeldDir[] = [];
      try {
        return await use(await this.walk(userPath, components, held, options));
      } catch (error) {
        if (!(error instanceof RaceError)) throw error;
        if (attempt >= MAX_RACE_RETRIES) {
          throw new WorkspacePathError(userPath, "it kept changing while it was opened");
        }
      } finally {
        await Promise.all(held.map((dir) => dir.handle.close().catch(() => undefined)));
      }
    }
  }

  private async walk(
    userPath: string,
    components: string[],
    held: HeldDir[],
    options: WalkOptions,
  ): Promise<Located> {
    const queue = [...components];
    let hops = 0;
    const top = () => (held.at(-1) ?? { handle: this.root }).handle.fd;
    const relative = (name?: string) => {
      const names = held.map((dir) => dir.name);
      if (name) names.push(name);
      return names.length > 0 ? names.join("/") : ".";
    };
    const goUp = () => {
      const dir = held.pop();
      if (!dir) throw new WorkspacePathError(userPath, "it points outside the workspace");
      void dir.handle.close().catch(() => undefined);
    };
    while (queue.length > 0) {
      const name = queue.shift() as string;
      if (name === "..") {
        goUp();
        continue;
      }
      const last = queue.length === 0;
      const stats = await lstatAt(top(), name);
      const follow = last ? options.links === "inside" && options.followLast !== false : true;
      if (stats?.isSymbolicLink() && follow) {
        if (options.links === "refuse") {
          throw new WorkspacePathError(userPath, `${relative(name)} is a symbolic link`);
        }
        if (++hops > MAX_LINK_HOPS) throw new WorkspacePathError(userPath, "too many symbolic links");
        const target = await fs.readlink(at(top(), name)).catch((error: unknown) => {
          // Gone, or no longer a link: the name changed under the walk.
          if (errorCode(error) === "ENOENT" || errorCode(error) === "EINVAL") throw new RaceError();
          throw error;
        });
        if (target.startsWith("/")) {
          if (target !== SANDBOX_WORKSPACE_PATH && !target.startsWith(`${SANDBOX_WORKSPACE_PATH}/`)) {
            throw new WorkspacePathError(
              userPath,
              `${relative(name)} is a symbolic link to a location outside the workspace`,
            );
          }
          while (held.length > 0) goUp();
        }
        const rest = target.startsWith("/") ? target.slice(SANDBOX_WORKSPACE_PATH.length) : target;
        queue.unshift(...rest.split("/").filter((part) => part !== "" && part !== "."));
        continue;
      }
      if (last) return { dirFd: top(), name, relative: relative(name), stats };
      if (stats === undefined) {
        if (!options.create) throw missing(relative(name));
        await fs.mkdir(at(top(), name), 0o755).catch((error: unknown) => {
          if (errorCode(error) !== "EEXIST") throw error;
        });
      } else if (!stats.isDirectory()) {
        throw Object.assign(new Error(`ENOTDIR: not a directory, ${relative(name)}`), { code: "ENOTDIR" });
      }
      let handle: fs.FileHandle;
      try {
        handle = await openDirAt(top(), name);
      } catch (error) {
        // Swapped for a link or a file, or removed, since the lstat above.
        if (["ELOOP", "ENOTDIR", "ENOENT"].includes(errorCode(error) ?? "")) throw new RaceError();
        throw error;
      }
      held.push({ handle, name });
    }
    // The path ended on a directory the walk holds (the root, or after `..` or a link): name it
    // by its parent and its name like any other last component, so one code path opens it.
    const dir = held.at(-1);
    if (!dir) return { dirFd: this.root.fd, name: "", relative: ".", stats: await this.root.stat() };
    const parentFd = (held.at(-2) ?? { handle: this.root }).handle.fd;
    return { dirFd: parentFd, name: dir.name, relative: relative(), stats: await dir.handle.stat() };
  }

  /**
   * Opens the existing regular file at `userPath` for reading (and writing too with `writable`,
   * never creating it); `stats` come from the opened descriptor. Refused: a FIFO, socket or
   * device (WorkspacePathError), a directory (EISDIR).
   */
  async openFile(
    userPath: string,
    options: { links: LinkPolicy; writable?: boolean },
  ): Promise<{ handle: fs.FileHandle; stats: Stats; relative: string }> {
    return this.locate(userPath, { links: options.links }, async (located) => {
      if (located.stats === undefined) throw missing(located.relative);
      refuseLink(located, userPath);
      const handle = await openLeaf(located, (options.writable ? O_RDWR : O_RDONLY) | O_NONBLOCK);
      return { handle, stats: await checkedRegular(handle, userPath), relative: located.relative };
    });
  }

  /** The whole content of the regular file at `userPath`. */
  async readFile(userPath: string, options: { links: LinkPolicy }): Promise<Buffer> {
    const { handle } = await this.openFile(userPath, options);
    try {
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  }

  /**
   * Opens (creating it, and its directories, when missing) the regular file at `userPath` for
   * writing. A new file gets `mode` without setuid, setgid or sticky bits. `exclusive` fails
   * when the name exists; `truncate` empties an existing file; `readable` opens it for reading
   * too. Never follows a link at the last component unless `links` is "inside" (then to the
   * link's target inside the workspace).
   */
  async openForWrite(
    userPath: string,
    options: {
      links: LinkPolicy;
      mode?: number;
      exclusive?: boolean;
      truncate?: boolean;
      readable?: boolean;
    },
  ): Promise<{ handle: fs.FileHandle; relative: string; created: boolean }> {
    return this.locate(userPath, { links: options.links, create: true }, async (located) => {
      if (located.name === "") throw eisdir(located.relative);
      refuseLink(located, userPath);
      const created = located.stats === undefined;
      const flags =
        (options.readable ? O_RDWR : O_WRONLY) |
        O_NONBLOCK |
        (created || options.exclusive ? O_CREAT | O_EXCL : 0) |
        (options.truncate ? O_TRUNC : 0);
      let handle: fs.FileHandle;
      try {
        handle = await openLeaf(located, flags, (options.mode ?? 0o644) & PERMISSION_BITS);
      } catch (error) {
        // Created by someone else since the walk looked: the walk starts over.
        if (errorCode(error) === "EEXIST" && created && !options.exclusive) throw new RaceError();
        throw error;
      }
      await checkedRegular(handle, userPath);
      return { handle, relative: located.relative, created };
    });
  }

  /** Writes `data` to the file at `userPath` (created or replaced in place); returns its canonical path. */
  async writeFile(
    userPath: string,
    data: string | Uint8Array,
    options: { links: LinkPolicy; mode?: number; exclusive?: boolean },
  ): Promise<string> {
    const { handle, relative } = await this.openForWrite(userPath, { ...options, truncate: true });
    try {
      await handle.writeFile(data);
      return relative;
    } finally {
      await handle.close();
    }
  }

  /** `lstat` of `userPath` (links on the way per `links`; a link at the last component is not followed). */
  async lstat(userPath: string, options: { links: LinkPolicy }): Promise<Stats | undefined> {
    return this.locate(userPath, { ...options, followLast: false }, async (located) => located.stats);
  }

  /**
   * Runs `use` with the directory at `userPath` held open (its descriptor, and its canonical
   * path); `readDir(fd)` and the `*At` helpers work on it.
   */
  async withDir<T>(
    userPath: string,
    options: { links: LinkPolicy; create?: boolean },
    use: (dirFd: number, relative: string) => Promise<T>,
  ): Promise<T> {
    return this.locate(userPath, options, async (located) => {
      if (located.name === "") return use(located.dirFd, located.relative);
      if (located.stats === undefined) {
        if (!options.create) throw missing(located.relative);
        await fs.mkdir(at(located.dirFd, located.name), 0o755).catch((error: unknown) => {
          if (errorCode(error) !== "EEXIST") throw error;
        });
      }
      const handle = await openDirAt(located.dirFd, located.name).catch((error: unknown) => {
        if (errorCode(error) === "ELOOP") throw new RaceError();
        throw error;
      });
      try {
        return await use(handle.fd, located.relative);
      } finally {
        await handle.close();
      }
    });
  }

  /** Creates the directory at `userPath` and its parents, refusing links on the way. */
  async mkdirp(userPath: string): Promise<void> {
    await this.withDir(userPath, { links: "refuse", create: true }, async () => undefined);
  }

  /** Creates a symbolic link at `userPath` holding `target` (never followed here). */
  async symlink(target: string, userPath: string): Promise<void> {
    await this.locate(userPath, { links: "refuse", followLast: false, create: true }, async (located) => {
      if (located.name === "") throw eisdir(located.relative);
      await fs.symlink(target, at(located.dirFd, located.name));
    });
  }

  /** Removes the file, link or (recursively) directory at `userPath`, never following a link. */
  async remove(userPath: string): Promise<void> {
    await this.locate(userPath, { links: "refuse", followLast: false }, async (located) => {
      if (located.name === "")
        throw new WorkspacePathError(userPath, "the workspace itself cannot be removed");
      await removeAt(located.dirFd, located.name);
    });
  }
}

/** Entries of a held directory, sorted by name. */
export async function readDirAt(dirFd: number): Promise<Dirent[]> {
  const entries = await fs.readdir(`/proc/self/fd/${dirFd}`, { withFileTypes: true });
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Opens the regular file `name` of a held directory for reading without following a link. */
export async function openFileAt(
  dirFd: number,
  name: string,
): Promise<{ handle: fs.FileHandle; stats: Stats }> {
  const handle = await fs.open(at(dirFd, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  return { handle, stats: await checkedRegular(handle, name) };
}

/**
 * The target text of the link `name` in a held directory (never followed); undefined when `name`
 * is gone or no longer a link (it changed since the caller looked).
 */
export async function readLinkAt(dirFd: number, name: string): Promise<string | undefined> {
  try {
    return await fs.readlink(at(dirFd, name));
  } catch (error) {
    if (errorCode(error) === "ENOENT" || errorCode(error) === "EINVAL") return undefined;
    throw error;
  }
}

/** Creates the directory `name` in a held directory (owner-only until its mode is set); fails when it exists. */
export const mkdirAt = (dirFd: number, name: string): Promise<void> => fs.mkdir(at(dirFd, name), 0o700);

/** Creates the link `name` holding `target` in a held directory (its text is never followed here); fails when it exists. */
export const symlinkAt = (target: string, dirFd: number, name: string): Promise<void> =>
  fs.symlink(target, at(dirFd, name));

/**
 * Creates the regular file `name` in a held directory, exclusively (it must not exist: a link or
 * anything else there fails with EEXIST), writes `data`, and sets `mode` without setuid, setgid
 * or sticky bits on the descriptor (no umask). Returns `fstat` of the written file.
 */
export async function createFileAt(
  dirFd: number,
  name: string,
  data: Uint8Array,
  mode: number,
): Promise<Stats> {
  const handle = await fs.open(
    at(dirFd, name),
    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK,
    mode & PERMISSION_BITS,
  );
  try {
    await handle.writeFile(data);
    await handle.chmod(mode & PERMISSION_BITS);
    return await handle.stat();
  } finally {
    await handle.close();
  }
}

/**
 * Removes the file, link or directory tree at `absolutePath`, a path host-side code chose (its
 * parent directories are not the tools' to change): the parent is opened once and everything
 * below is removed through held descriptors (`removeAt`), so a link inside, or a directory
 * swapped for a link while the removal runs, is unlinked and never followed.
 */
export async function removeTree(absolutePath: string): Promise<void> {
  let parent: fs.FileHandle;
  try {
    parent = await fs.open(path.dirname(absolutePath), O_RDONLY | O_DIRECTORY);
  } catch (error) {
    if (errorCode(error) === "ENOENT") return;
    throw error;
  }
  try {
    await removeAt(parent.fd, path.basename(absolutePath));
  } finally {
    await parent.close();
  }
}

/** Removes `name` from a held directory: a file or link by unlink, a directory with its content. */
async function removeAt(dirFd: number, name: string): Promise<void> {
  const stats = await lstatAt(dirFd, name);
  if (stats === undefined) return;
  if (!stats.isDirectory()) {
    await fs.unlink(at(dirFd, name)).catch(ignoreMissing);
    return;
  }
  const handle = await openDirAt(dirFd, name).catch((error: unknown) => {
    if (["ENOENT", "ELOOP", "ENOTDIR"].includes(errorCode(error) ?? "")) return undefined;
    throw error;
  });
  if (handle === undefined) {
    // No longer a directory: remove whatever it is now.
    await fs.unlink(at(dirFd, name)).catch(ignoreMissing);
    return;
  }
  try {
    // A folder the agent made read-only (`chmod -R a-w`) keeps a worker that is not root from
    // removing its entries: given back its owner's bits through the held handle (never a path),
    // read from that handle (the folder may have been swapped since the lstat).
    const { mode } = await handle.stat();
    if ((mode & 0o300) !== 0o300) await handle.chmod((mode & 0o777) | 0o700).catch(() => undefined);
    for (const entry of await readDirAt(handle.fd)) await removeAt(handle.fd, entry.name);
  } finally {
    await handle.close();
  }
  await fs.rmdir(at(dirFd, name)).catch(ignoreMissing);
}

function ignoreMissing(error: unknown): void {
  if (errorCode(error) !== "ENOENT") throw error;
}

async function openLeaf(located: Located, flags: number, mode?: number): Promise<fs.FileHandle> {
  try {
    return await fs.open(at(located.dirFd, located.name), flags | O_NOFOLLOW, mode);
  } catch (error) {
    // The name became a link after the walk looked at it.
    if (errorCode(error) === "ELOOP") throw new RaceError();
    throw error;
  }
}

/** A link left at the last component (links refused): refused by name, not reported as a race. */
function refuseLink(located: Located, userPath: string): void {
  if (located.stats?.isSymbolicLink()) {
    throw new WorkspacePathError(userPath, `${located.relative} is a symbolic link`);
  }
}

async function checkedRegular(handle: fs.FileHandle, userPath: string): Promise<Stats> {
  const stats = await handle.stat();
  if (stats.isFile()) return stats;
  await handle.close();
  if (stats.isDirectory()) throw eisdir(userPath);
  throw new WorkspacePathError(userPath, "it is not a regular file");
}

function missing(relative: string): Error {
  return Object.assign(new Error(`ENOENT: no such file or directory, ${relative}`), { code: "ENOENT" });
}

function eisdir(relative: string): Error {
  return Object.assign(new Error(`EISDIR: illegal operation on a directory, ${relative}`), {
    code: "EISDIR",
  });
}
