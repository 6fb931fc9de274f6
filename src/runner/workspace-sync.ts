/**
 * A runner's copy of a session's workspace kept through the API, for runners whose disk does not
 * outlive them (`keel runner --snapshots`: a launched runner, a Fargate task, or several runners of
 * one environment on separate disks). The workspace travels as a session archive
 * (store/workspace-archive.ts: the same packing and the same refusals on unpacking as `keel export
 * --with-workspace` and the import), stored by the API under the runner's own tenant and
 * environment.
 *
 * A copy is used only while it is the current one, as a worker's copy is only while its holder
 * epoch is stored: each stored archive has a generation (its ETag), and the copy keeps the
 * generation it was restored or stored at beside its folder (`{dir}.generation`). Before a call the
 * runner asks the API whether that is still the stored generation (a conditional GET: 304 when it
 * is) and otherwise restores the newer one; a store names the generation it replaces, so a runner
 * whose copy fell behind never overwrites another runner's edits (412: the call's result says its
 * files were not kept, and the copy is restored before its next use).
 */
import { randomBytes } from "node:crypto";
import * as fs from "node:fs/promises";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { type ApiClient, ApiError } from "../api-client/client";
import { packSessionArchive, unpackSessionArchive } from "../store/workspace-archive";
import { removeTree } from "../tools/workspace-fs";
import { siblingPathOf } from "../tools/workspace-siblings";

const workspacePath = (environment: string, sessionId: string) =>
  `/v1/environments/${encodeURIComponent(environment)}/sessions/${encodeURIComponent(sessionId)}/workspace`;

/** Where a copy keeps its generation: beside its folder, out of the sandbox's reach. */
const generationPathOf = (dir: string): string => `${dir}.generation`;

/**
 * The generation of a copy that must not be used again (its store failed, or it is being
 * replaced): it matches no stored generation, so the next check restores the stored workspace.
 */
const STALE = "stale";

/** Attempts of a store the API or the network failed (not a refusal). */
const STORE_ATTEMPTS = 3;
const STORE_RETRY_MS = 500;

/** How the copy in `dir` became the current one. */
export type SyncOutcome =
  /** It already was (or nothing is stored for the session and the copy was made here). */
  | { kind: "current" }
  /** It was restored from the stored workspace of `from` (the session, or an ancestor). */
  | { kind: "restored"; from: string }
  /** Nothing is stored for the session or its ancestors: it starts empty. */
  | { kind: "empty" };

/**
 * Makes the copy in `dir` the session's current workspace: kept while its generation is the stored
 * one, or (nothing stored for the session itself) when it was made here; otherwise replaced — by
 * the session's stored workspace, else the nearest stored one of the sessions it was started from
 * (the API looks them up), else an empty folder. The replacement appears whole or not at all.
 * Must not run while a call works in `dir`. Throws when the API cannot answer.
 */
export async function syncWorkspace(
  client: ApiClient,
  environment: string,
  sessionId: string,
  dir: string,
): Promise<SyncOutcome> {
  const [local, present] = await Promise.all([readGeneration(dir), isDirectory(dir)]);
  const held = present && local !== undefined && local !== STALE ? local : undefined;
  let response: Response | undefined;
  try {
    response = await client.request(workspacePath(environment, sessionId), {
      headers: { accept: "application/gzip", ...(held !== undefined ? { "if-none-match": held } : {}) },
    });
  } catch (error) {
    if (error instanceof ApiError && error.status === 304) return { kind: "current" };
    if (!(error instanceof ApiError && error.status === 404)) throw error;
  }
  const generation = response?.headers.get("etag") ?? undefined;
  // A copy made here for a session nothing was stored for (its calls so far changed nothing, or
  // it started from an ancestor's workspace) is the session's only one.
  if (generation === undefined && present && local === undefined) return { kind: "current" };
  const archive = response ? new Uint8Array(await response.arrayBuffer()) : undefined;
  await replaceCopy(dir, archive);
  await writeGeneration(dir, generation);
  if (!response) return { kind: "empty" };
  return { kind: "restored", from: response.headers.get("keel-workspace-from") ?? sessionId };
}

/**
 * Creates `dir` as a copy of the workspace in `sourceDir` (a sub-agent's fork of its parent's, on
 * a runner that keeps workspaces on its disk). The copy is a session archive packed and unpacked
 * on the spot: links are copied as links and never followed, only regular files are read, and a
 * link that would resolve outside the copy refuses it — whatever the source's tools do meanwhile.
 */
export async function forkWorkspace(sourceDir: string, dir: string): Promise<void> {
  await unpackWhole(packSessionArchive("", sourceDir), dir);
}

/** What became of a store: `stored`, or why the copy's changes were not kept. */
export type StoreOutcome = { kind: "stored" } | { kind: "not-kept"; reason: string };

/**
 * Stores the workspace in `dir` as the session's, if the stored one is still the generation the
 * copy holds. When it is not (another runner stored since), or the API refuses or fails the store,
 * the copy is marked stale — its changes are not kept anywhere, and the next call restores the
 * stored workspace — and the outcome says why. Never throws.
 */
export async function storeWorkspace(
  client: ApiClient,
  environment: string,
  sessionId: string,
  dir: string,
): Promise<StoreOutcome> {
  const notKept = async (reason: string): Promise<StoreOutcome> => {
    await markStale(dir);
    return { kind: "not-kept", reason };
  };
  try {
    const local = await readGeneration(dir);
    if (local === STALE) return notKept("this runner's copy of the workspace is out of date");
    const chunks: Buffer[] = [];
    for await (const chunk of packSessionArchive("", dir)) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const precondition: Record<string, string> =
      local === undefined ? { "if-none-match": "*" } : { "if-match": local };
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await client.request(workspacePath(environment, sessionId), {
          method: "PUT",
          headers: { "content-type": "application/gzip", ...precondition },
          body,
        });
        const generation = response.headers.get("etag");
        if (!generation) return notKept("the API answered the store without its generation");
        await writeGeneration(dir, generation);
        return { kind: "stored" };
      } catch (error) {
        if (error instanceof ApiError && error.status === 412)
          return notKept("another runner stored a newer workspace of this session meanwhile");
        if (error instanceof ApiError && error.status === 413)
          return notKept(`the workspace is larger than the API takes (${error.message})`);
        const passing = error instanceof ApiError && (error.status === 0 || error.status >= 500);
        if (!passing || attempt >= STORE_ATTEMPTS) throw error;
        await sleep(STORE_RETRY_MS * attempt);
      }
    }
  } catch (error) {
    return notKept(
      `the workspace could not be stored (${error instanceof Error ? error.message : String(error)})`,
    );
  }
}

/**
 * Marks the copy at `dir` as one whose changes are not kept (its store failed, or its call went to
 * another attempt): the next call restores the stored workspace over it. Never throws.
 */
export async function markStale(dir: string): Promise<void> {
  await writeGeneration(dir, STALE).catch(() => undefined);
}

/**
 * Replaces the copy at `dir` with `archive`'s workspace (an empty folder without one): the new copy
 * is unpacked beside it, the old one is marked stale and moved aside, the new one renamed in.
 */
async function replaceCopy(dir: string, archive: Uint8Array | undefined): Promise<void> {
  const staging = siblingPathOf(dir, "restore");
  const aside = siblingPathOf(dir, "stale");
  try {
    // The archive's workspace/ is unpacked into `staging` itself.
    if (archive) await unpackSessionArchive(Readable.from([Buffer.from(archive)]), staging);
    else await fs.mkdir(staging);
    // A crash from here on leaves a copy that is not used again.
    await writeGeneration(dir, STALE);
    await fs.rename(dir, aside).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
    await fs.rename(staging, dir);
  } finally {
    // Unpacked archive content and the old copy: removed through held descriptors, never
    // following a link.
    await Promise.all([removeTree(staging), removeTree(aside)]);
  }
}

/**
 * Unpacks a session archive's workspace beside `dir`, then renames it into place. A `dir` that
 * appeared meanwhile (another runner on the same root met the session at the same moment) is kept.
 * The staging folder is a named sibling: one a killed runner left is swept when a runner starts.
 */
async function unpackWhole(archive: Readable, dir: string): Promise<void> {
  const staging = siblingPathOf(dir, "restore");
  try {
    await unpackSessionArchive(archive, staging);
    await fs.rename(staging, dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOTEMPTY" && error.code !== "EEXIST") throw error;
    });
  } finally {
    await removeTree(staging);
  }
}

/** The generation the copy at `dir` holds; undefined when it holds none (or its file is torn). */
async function readGeneration(dir: string): Promise<string | undefined> {
  try {
    const text = (await fs.readFile(generationPathOf(dir), "utf8")).trim();
    return text === "" ? undefined : text;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Records the copy's generation (undefined: none) atomically: a crash leaves the old or the new. */
async function writeGeneration(dir: string, generation: string | undefined): Promise<void> {
  const target = generationPathOf(dir);
  if (generation === undefined) {
    await fs.rm(target, { force: true });
    return;
  }
  const staging = `${target}.${randomBytes(6).toString("hex")}`;
  await fs.writeFile(staging, generation, { flag: "wx" });
  await fs.rename(staging, target);
}

async function isDirectory(dir: string): Promise<boolean> {
  return fs.lstat(dir).then(
    (info) => info.isDirectory(),
    () => false,
  );
}
