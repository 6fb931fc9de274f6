/**
 * The session workspace: one directory per (tenant, session) under a configurable root, its
 * scratch area, a per-workspace lock, and how a workspace is first populated (empty, a copy of
 * a local directory, or a git clone). Path arguments are confined by the workspace file layer
 * (`workspace-fs.ts`), through which every file of a workspace is opened.
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
import type { FileHandle } from "node:fs/promises";
import * as fs from "node:fs/promises";
import { hostname } from "node:os";
import * as path from "node:path";
import { cloneGitSource, type GitHosts, parseGitHosts } from "./git-source";
import { errorCode, WorkspaceFs } from "./workspace-fs";
import { isProcessAlive, siblingPathOf } from "./workspace-siblings";

/** A workspace source that can never be used (a directory that is not there): not worth a retry. */
export class WorkspaceSourceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WorkspaceSourceError";
  }
}

export interface Workspace {
  /** Absolute path of the workspace directory. */
  readonly dir: string;
}

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
export const SCRATCH_SUBDIR = ".keel/scratch";

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

/** What `.keel/.gitignore` holds: nothing under `.keel/` shows in git, grep or find. */
const KEEL_GITIGNORE = "*\n";

/**
 * Creates the new file `name` in the scratch area, for writing, through the workspace file layer
 * with links refused. `.keel` and `.keel/scratch` are Keel's own names: whatever stands there
 * that is not a real directory (a link, a file) is removed (never followed) and a directory made;
 * a `.keel/.gitignore` that is anything but a file holding exactly its content is replaced by a
 * new one. The file itself is created exclusively (never an existing name). Returns its handle
 * and workspace-relative path, or undefined when any step fails (the tree changed under it):
 * the caller then keeps no full output. Nothing is written outside the workspace either way.
 */
export async function createScratchFile(
  workspace: Workspace,
  name: string,
): Promise<{ handle: FileHandle; relative: string } | undefined> {
  try {
    return await WorkspaceFs.with(workspace.dir, async (ws) => {
      for (const dir of [".keel", SCRATCH_SUBDIR]) {
        const stats = await ws.lstat(dir, { links: "refuse" });
        if (stats && !stats.isDirectory()) await ws.remove(dir);
        await ws.mkdirp(dir);
      }
      const gitignore = ".keel/.gitignore";
      const current = await ws.readFile(gitignore, { links: "refuse" }).catch(() => undefined);
      if (current?.toString("utf8") !== KEEL_GITIGNORE) {
        await ws.remove(gitignore);
        await ws
          .writeFile(gitignore, KEEL_GITIGNORE, { links: "refuse", exclusive: true })
          .catch((error: unknown) => {
            // Made meanwhile (a parallel call, a command): not written through, not needed to spill.
            if (errorCode(error) !== "EEXIST") throw error;
          });
      }
      const relative = `${SCRATCH_SUBDIR}/${name}`;
      const { handle } = await ws.openForWrite(relative, { links: "refuse", exclusive: true });
      return { handle, relative };
    });
  } catch {
    return undefined;
  }
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
      const stats = await fs.stat(source.path).catch((error: unknown) => {
        if (errorCode(error) === "ENOENT" || errorCode(error) === "ENOTDIR")
          throw new WorkspaceSourceError(
            `the workspace source directory ${source.path} does not exist on this worker`,
          );
        throw error;
      });
      if (!stats.isDirectory())
        throw new WorkspaceSourceError(`the workspace source ${source.path} is not a directory`);
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
  const staging = siblingPathOf(workspace.dir, "staging");
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
