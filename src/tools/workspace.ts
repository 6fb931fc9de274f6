/**
 * The session workspace: one directory per (tenant, session) under a configurable root, the
 * confinement of every path argument to it, a per-workspace lock, and how a workspace is
 * first populated (empty, a copy of a local directory, or a git clone).
 *
 * Layout under the root:
 *   <root>/<tenantId>/<sessionId>/                the workspace (the tools' working directory)
 *   <root>/<tenantId>/<sessionId>/.keel/scratch/  full outputs of truncated bash commands
 *   <root>/<tenantId>/<sessionId>.lock            the lock file (outside the workspace)
 *
 * The scratch area is inside the workspace on purpose: a truncation notice names the file and
 * the model reads it with `read`/`grep`, which only see the workspace. `.keel/` carries its own
 * `.gitignore` (`*`) so it never shows up in `git status`, grep or find.
 */
import { randomBytes } from "node:crypto";
import type { Stats } from "node:fs";
import * as fs from "node:fs/promises";
import { hostname } from "node:os";
import * as path from "node:path";
import { cloneGitSource, type GitHosts, parseGitHosts } from "./git-source";
import { SANDBOX_WORKSPACE_PATH } from "./sandbox";
import { ToolError } from "./types";

export interface Workspace {
  /** Absolute path of the workspace directory. */
  readonly dir: string;
}

/** A resolved path argument, guaranteed to lie inside the workspace. */
export interface ResolvedPath {
  /** Absolute path with every symlink resolved; the path to do I/O on. */
  real: string;
  /** `real` relative to the workspace's real directory, POSIX separators; "." for the root. */
  relative: string;
}

export const MAX_PATH_BYTES = 4096;
export const MAX_PATH_SEGMENT_BYTES = 255;
/** Symlink hops followed while resolving a path that does not fully exist yet (as Linux's ELOOP). */
const MAX_SYMLINK_HOPS = 40;
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
export const SCRATCH_SUBDIR = ".keel/scratch";

/** A path argument that would leave the workspace, or cannot be used safely. */
export class WorkspacePathError extends ToolError {
  constructor(userPath: string, reason: string) {
    super(`Path ${JSON.stringify(userPath)} refused: ${reason}.`);
    this.name = "WorkspacePathError";
  }
}

export class WorkspaceBusyError extends Error {
  constructor(
    readonly lockPath: string,
    readonly holder: LockHolder | undefined,
  ) {
    super(
      holder
        ? `Workspace is locked by ${holder.ownerId} (pid ${holder.pid} on ${holder.hostname}, since ${holder.acquiredAt})`
        : `Workspace is locked (${lockPath})`,
    );
    this.name = "WorkspaceBusyError";
  }
}

function assertId(kind: string, id: string): void {
  if (!ID_PATTERN.test(id)) {
    throw new Error(`Invalid ${kind} ${JSON.stringify(id)}: expected 1-128 characters of [A-Za-z0-9_-]`);
  }
}

/** The workspace of one session. Pure path computation; throws on an invalid id. */
export function workspaceFor(root: string, tenantId: string, sessionId: string): Workspace {
  assertId("tenant id", tenantId);
  assertId("session id", sessionId);
  return { dir: path.join(path.resolve(root), tenantId, sessionId) };
}

export function scratchDirOf(workspace: Workspace): string {
  return path.join(workspace.dir, SCRATCH_SUBDIR);
}

/** Creates the scratch directory (and the `.gitignore` that hides `.keel/`); returns its path. */
export async function ensureScratchDir(workspace: Workspace): Promise<string> {
  const scratch = scratchDirOf(workspace);
  await fs.mkdir(scratch, { recursive: true });
  await fs.writeFile(path.join(workspace.dir, ".keel", ".gitignore"), "*\n", { flag: "w" });
  return scratch;
}

/** The errno code of a Node error (checked structurally: such errors may come from another realm). */
export const errorCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined;

/**
 * Real path of `target`, which may not exist yet: the realpath of its longest existing prefix
 * plus the missing rest. A dangling symlink on the way is followed by hand (readlink), so a link
 * to a not-yet-existing file outside is resolved to that outside location.
 */
async function realpathAllowingMissing(target: string, hops = 0): Promise<string> {
  try {
    return await fs.realpath(target);
  } catch (error) {
    const code = errorCode(error);
    if (code === "ELOOP") throw new Error("symbolic link loop");
    if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
  }
  const parent = path.dirname(target);
  if (parent === target) return target;
  const realParent = await realpathAllowingMissing(parent, hops);
  const candidate = path.join(realParent, path.basename(target));
  let stats: Stats;
  try {
    stats = await fs.lstat(candidate);
  } catch {
    return candidate;
  }
  if (!stats.isSymbolicLink()) return candidate;
  if (hops >= MAX_SYMLINK_HOPS) throw new Error("symbolic link loop");
  const linkTarget = await fs.readlink(candidate);
  return realpathAllowingMissing(path.resolve(realParent, linkTarget), hops + 1);
}

const isWithin = (dir: string, candidate: string): boolean => {
  const relative = path.relative(dir, candidate);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
};

/**
 * A path as the model sees it (under SANDBOX_WORKSPACE_PATH, where bash finds the workspace)
 * turned into one relative to the workspace; other paths are returned unchanged.
 */
function fromSandboxPath(userPath: string): string {
  if (userPath === SANDBOX_WORKSPACE_PATH) return ".";
  if (userPath.startsWith(`${SANDBOX_WORKSPACE_PATH}/`))
    return `.${userPath.slice(SANDBOX_WORKSPACE_PATH.length)}`;
  return userPath;
}

/**
 * Resolves a path argument against the workspace. Paths under SANDBOX_WORKSPACE_PATH (`/workspace`)
 * are the workspace as commands see it. Relative paths are taken from the workspace
 * directory; absolute paths must point into it. Refused (WorkspacePathError): NUL bytes,
 * over-long paths or components, `..` leaving the workspace, and any symlink (also a chain, a
 * dangling one, or one created later by a bash command) whose target lies outside.
 * The check runs at call time, so it sees the file system as it is now.
 */
export async function resolveInside(workspace: Workspace, userPath: string): Promise<ResolvedPath> {
  if (userPath.length === 0) throw new WorkspacePathError(userPath, "the path is empty");
  if (userPath.includes("\0")) throw new WorkspacePathError(userPath, "the path contains a NUL byte");
  const bytes = Buffer.byteLength(userPath, "utf8");
  if (bytes > MAX_PATH_BYTES) {
    throw new WorkspacePathError(
      `${userPath.slice(0, 64)}…`,
      `the path is ${bytes} bytes long (limit ${MAX_PATH_BYTES})`,
    );
  }
  if (
    userPath.split(/[\\/]/).some((segment) => Buffer.byteLength(segment, "utf8") > MAX_PATH_SEGMENT_BYTES)
  ) {
    throw new WorkspacePathError(
      `${userPath.slice(0, 64)}…`,
      `a path component is longer than ${MAX_PATH_SEGMENT_BYTES} bytes`,
    );
  }

  const realDir = await fs.realpath(workspace.dir);
  const lexical = path.resolve(workspace.dir, fromSandboxPath(userPath));
  if (!isWithin(workspace.dir, lexical) && !isWithin(realDir, lexical)) {
    throw new WorkspacePathError(userPath, "it points outside the workspace");
  }
  let real: string;
  try {
    real = await realpathAllowingMissing(lexical);
  } catch (error) {
    throw new WorkspacePathError(userPath, error instanceof Error ? error.message : String(error));
  }
  if (!isWithin(realDir, real)) {
    throw new WorkspacePathError(
      userPath,
      "it resolves through a symbolic link to a location outside the workspace",
    );
  }
  const relative = path.relative(realDir, real).split(path.sep).join("/");
  return { real, relative: relative === "" ? "." : relative };
}

// ---- Lock

export interface LockHolder {
  ownerId: string;
  pid: number;
  hostname: string;
  acquiredAt: string;
}

export interface WorkspaceLock {
  readonly path: string;
  readonly holder: LockHolder;
  /** Removes the lock file if it is still ours. Idempotent. */
  release(): Promise<void>;
}

/** A lock file that cannot be parsed is considered abandoned after this long (a crash mid-write). */
const UNREADABLE_LOCK_STALE_MS = 10_000;

export function lockPathOf(workspace: Workspace): string {
  return `${workspace.dir}.lock`;
}

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) === "EPERM";
  }
}

async function readHolder(lockPath: string): Promise<{ holder?: LockHolder; raw: string; ageMs: number }> {
  const [raw, stats] = await Promise.all([fs.readFile(lockPath, "utf8"), fs.stat(lockPath)]);
  const ageMs = Date.now() - stats.mtimeMs;
  try {
    const parsed = JSON.parse(raw) as Partial<LockHolder>;
    if (
      typeof parsed.ownerId === "string" &&
      typeof parsed.pid === "number" &&
      typeof parsed.hostname === "string"
    ) {
      return { holder: parsed as LockHolder, raw, ageMs };
    }
  } catch {
    // Unparseable: fall through.
  }
  return { raw, ageMs };
}

/**
 * Removes a stale lock without stealing a fresh one: the file is first renamed away (only one
 * contender can win that), and put back if its content is no longer what was judged stale.
 */
async function removeStaleLock(lockPath: string, staleRaw: string): Promise<void> {
  const aside = `${lockPath}.stale-${randomBytes(6).toString("hex")}`;
  try {
    await fs.rename(lockPath, aside);
  } catch (error) {
    if (errorCode(error) === "ENOENT") return;
    throw error;
  }
  const movedRaw = await fs.readFile(aside, "utf8").catch(() => staleRaw);
  if (movedRaw !== staleRaw) await fs.link(aside, lockPath).catch(() => undefined);
  await fs.unlink(aside).catch(() => undefined);
}

/**
 * Takes the workspace's lock for `ownerId` (e.g. a run id). The lock file is created exclusively
 * (`wx`) and holds the owner id, pid and host. A lock whose process is dead on this host is
 * stale and taken over; acquiring again with the same owner id in the same process succeeds.
 * Throws WorkspaceBusyError when another live owner holds it.
 */
export async function acquireWorkspaceLock(workspace: Workspace, ownerId: string): Promise<WorkspaceLock> {
  const lockPath = lockPathOf(workspace);
  await fs.mkdir(path.dirname(lockPath), { recursive: true });
  const holder: LockHolder = {
    ownerId,
    pid: process.pid,
    hostname: hostname(),
    acquiredAt: new Date().toISOString(),
  };
  const lock = (owned: LockHolder): WorkspaceLock => ({
    path: lockPath,
    holder: owned,
    release: async () => {
      const current = await readHolder(lockPath).catch(() => undefined);
      if (current?.holder?.ownerId === owned.ownerId && current.holder.pid === owned.pid) {
        await fs.unlink(lockPath).catch(() => undefined);
      }
    },
  });

  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await fs.open(lockPath, "wx");
      try {
        await handle.writeFile(JSON.stringify(holder));
      } finally {
        await handle.close();
      }
      return lock(holder);
    } catch (error) {
      if (errorCode(error) !== "EEXIST") throw error;
    }
    const existing = await readHolder(lockPath).catch(() => undefined);
    if (!existing) continue; // released meanwhile
    const current = existing.holder;
    if (current?.ownerId === ownerId && current.pid === process.pid && current.hostname === holder.hostname) {
      return lock(current);
    }
    const stale = current
      ? current.hostname === holder.hostname && !isProcessAlive(current.pid)
      : existing.ageMs > UNREADABLE_LOCK_STALE_MS;
    if (!stale) throw new WorkspaceBusyError(lockPath, current);
    await removeStaleLock(lockPath, existing.raw);
  }
  throw new WorkspaceBusyError(lockPath, undefined);
}

// ---- Sources

export type WorkspaceSource =
  | { type: "empty" }
  /** A copy of a directory on the worker's machine (symlinks copied as links, not followed). */
  | { type: "directory"; path: string }
  /** `git clone` of a local path or an https URL on an allowed host (git-source.ts); `ref` is a branch or tag. */
  | { type: "git"; url: string; ref?: string };

export interface PopulateOptions {
  signal?: AbortSignal;
  /** Hosts git sources may name (KEEL_GIT_HOSTS); default DEFAULT_GIT_HOSTS. */
  gitHosts?: GitHosts;
}

async function populate(target: string, source: WorkspaceSource, options: PopulateOptions): Promise<void> {
  switch (source.type) {
    case "empty":
      await fs.mkdir(target);
      return;
    case "directory": {
      const stats = await fs.stat(source.path);
      if (!stats.isDirectory()) throw new Error(`Workspace source is not a directory: ${source.path}`);
      await fs.cp(source.path, target, { recursive: true, verbatimSymlinks: true, errorOnExist: true });
      return;
    }
    case "git":
      await cloneGitSource(source, target, {
        hosts: options.gitHosts ?? parseGitHosts(undefined),
        signal: options.signal,
      });
      return;
  }
}

/**
 * Creates the workspace directory from `source` unless it already exists (a resumed session or
 * a retried activity keeps what is there). Populates a temporary sibling and renames it into
 * place, so a crash never leaves a half-populated workspace. Returns whether it was created.
 */
export async function prepareWorkspace(
  workspace: Workspace,
  source: WorkspaceSource = { type: "empty" },
  options: PopulateOptions = {},
): Promise<{ created: boolean }> {
  const exists = await fs.stat(workspace.dir).then(
    (stats) => stats.isDirectory(),
    () => false,
  );
  if (exists) return { created: false };
  await fs.mkdir(path.dirname(workspace.dir), { recursive: true });
  const staging = `${workspace.dir}.staging-${randomBytes(6).toString("hex")}`;
  try {
    await populate(staging, source, options);
    await fs.rename(staging, workspace.dir);
    return { created: true };
  } catch (error) {
    await fs.rm(staging, { recursive: true, force: true });
    const code = errorCode(error);
    if (code === "EEXIST" || code === "ENOTEMPTY") return { created: false };
    throw error;
  }
}
