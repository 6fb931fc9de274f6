/**
 * The sessions' folders a `keel runner` works in (one per session under its root, or the one
 * `--workspace` names), each made ready before the calls that use it and, with `--snapshots`, kept
 * through the API (workspace-sync.ts).
 */
import { mkdir, stat } from "node:fs/promises";
import path from "node:path";
import type { ApiClient } from "../api-client/client";
import { ID_PATTERN } from "../core/ids";
import type { ClaimedCall } from "../environments/calls";
import { ArchiveError } from "../store/workspace-archive";
import { prepareWorkspace } from "../tools";
import type { Workspace } from "../tools/workspace";
import { forkWorkspace, syncWorkspace } from "./workspace-sync";

/** What a runner's options say of where its calls work (runner.ts's `RunnerOptions`). */
export interface WorkspaceOptions {
  client: ApiClient;
  environment: string;
  /** One directory every call acts on (an existing checkout); else one per session under `workspaceRoot`. */
  workspace?: string;
  workspaceRoot: string;
  /**
   * Keep each session's workspace through the API: before a call, use this runner's copy only
   * while it is the one stored last (else restore the stored one), and after every call that may
   * change it store it there, before the call's result, replacing only the generation the copy
   * was restored at (an ephemeral runner, or runners of one environment on separate disks: each
   * picks up what the others left, and none overwrites another's edits).
   */
  snapshots?: boolean;
  log: (record: Record<string, unknown>) => void;
}

/**
 * The sessions' folders this runner works in, and the calls working in each: a call acts on
 * `--workspace`, or on its session's own folder under the root. The first call of a session that
 * finds no other call of this runner working in its folder makes it ready once for every call that
 * arrives meanwhile (a parallel batch shares one copy): with `snapshots` the copy is checked
 * against the stored generation and restored when it is not the current one (workspace-sync.ts);
 * without, a new session's folder is a fork of its parent's when this runner's root has it (a
 * sub-agent; else it starts empty: the parent's calls ran on another machine's disk). A session's
 * stores are made one at a time, each naming the generation the one before it left. Entries live
 * only while a call works in the session: nothing here grows with the sessions a runner has met.
 */
export class SessionCopies {
  private readonly sessions = new Map<
    string,
    { working: number; ready: Promise<Workspace>; stores: Promise<unknown> }
  >();

  /** Runs `work` in the call's workspace (an Error when it cannot be opened), counted as working there. */
  async whileWorking<T>(
    options: WorkspaceOptions,
    call: ClaimedCall,
    work: (workspace: Workspace | Error) => Promise<T>,
  ): Promise<T> {
    if (options.workspace !== undefined) return work({ dir: path.resolve(options.workspace) });
    const { sessionId } = call;
    let session = this.sessions.get(sessionId);
    if (!session) {
      const ready = readyCopy(options, call);
      session = { working: 0, ready, stores: Promise.resolve() };
      this.sessions.set(sessionId, session);
    }
    session.working++;
    try {
      return await work(await session.ready.catch((error: unknown) => error as Error));
    } finally {
      session.working--;
      // The next call checks the copy again (a failed preparation is tried again then).
      if (session.working === 0) this.sessions.delete(sessionId);
    }
  }

  /**
   * Runs `work` on `sessionId`'s copy after the stores (and marks) before it, one at a time (called
   * while working there): each store names the generation the one before it left.
   */
  store<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    const session = this.sessions.get(sessionId);
    if (!session) return work();
    const done = session.stores.then(work, work);
    session.stores = done;
    return done;
  }
}

/** Makes the call's session folder ready to work in (see `SessionCopies`). */
async function readyCopy(options: WorkspaceOptions, call: ClaimedCall): Promise<Workspace> {
  const { sessionId, forkOf } = call;
  if (!ID_PATTERN.test(sessionId)) throw new Error(`invalid session id ${JSON.stringify(sessionId)}`);
  if (forkOf !== undefined && !ID_PATTERN.test(forkOf))
    throw new Error(`invalid parent session id ${JSON.stringify(forkOf)}`);
  const root = path.resolve(options.workspaceRoot);
  await mkdir(root, { recursive: true });
  const workspace = { dir: path.join(root, sessionId) };
  if (options.snapshots) {
    const how = await syncWorkspace(options.client, options.environment, sessionId, workspace.dir);
    if (how.kind !== "current")
      options.log({ msg: "workspace restored", sessionId, from: how.kind === "empty" ? "empty" : how.from });
    return workspace;
  }
  const present = await stat(workspace.dir).then(
    () => true,
    () => false,
  );
  const parentDir = forkOf === undefined ? undefined : path.join(root, forkOf);
  if (
    !present &&
    parentDir !== undefined &&
    (await stat(parentDir).then(
      (info) => info.isDirectory(),
      () => false,
    ))
  ) {
    try {
      await forkWorkspace(parentDir, workspace.dir);
      options.log({ msg: "workspace forked", sessionId, from: forkOf });
      return workspace;
    } catch (error) {
      // The copy's checks refused the parent's folder (a link leading outside it, the archive
      // limits): the child starts empty rather than failing every call; the log says why.
      if (!(error instanceof ArchiveError)) throw error;
      options.log({
        level: "warn",
        msg: "workspace fork refused; starting empty",
        sessionId,
        error: String(error),
      });
    }
  }
  // A folder removed since (the session was deleted) comes back empty, as it always did.
  await prepareWorkspace(workspace);
  return workspace;
}
