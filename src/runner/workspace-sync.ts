/**
 * A runner's copy of a session's workspace kept through the API, for runners whose disk does not
 * outlive them (launched runners: a process in a temporary directory, a Fargate task). The
 * workspace travels as a session archive (store/workspace-archive.ts: the same packing and the
 * same refusals on unpacking as `keel export --with-workspace` and the import), stored by the API
 * under the runner's own tenant and environment.
 */
import * as fs from "node:fs/promises";
import { Readable } from "node:stream";
import { type ApiClient, ApiError } from "../cli/client";
import { packSessionArchive, unpackSessionArchive } from "../store/workspace-archive";
import { removeTree } from "../tools/workspace-fs";
import { siblingPathOf } from "../tools/workspace-siblings";

const workspacePath = (environment: string, sessionId: string) =>
  `/v1/environments/${encodeURIComponent(environment)}/sessions/${encodeURIComponent(sessionId)}/workspace`;

/**
 * Creates `dir` from the session's stored workspace — or, for a session none was stored for yet,
 * from the nearest stored one of the sessions it was started from (the API looks them up) — or
 * empty. `dir` must not exist; it appears whole or not at all. Resolves to the session whose
 * workspace it holds, or `empty`.
 */
export async function restoreWorkspace(
  client: ApiClient,
  environment: string,
  sessionId: string,
  dir: string,
): Promise<{ from: string } | "empty"> {
  let archive: Uint8Array;
  let from: string;
  try {
    const response = await client.request(workspacePath(environment, sessionId), {
      headers: { accept: "application/gzip" },
    });
    archive = new Uint8Array(await response.arrayBuffer());
    from = response.headers.get("keel-workspace-from") ?? sessionId;
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) throw error;
    await fs.mkdir(dir, { recursive: true });
    return "empty";
  }
  await unpackWhole(Readable.from([Buffer.from(archive)]), dir);
  return { from };
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

/**
 * Unpacks a session archive's workspace beside `dir`, then renames it into place. A `dir` that
 * appeared meanwhile (another runner on the same root met the session at the same moment) is kept.
 * The staging folder is a named sibling: one a killed runner left is swept when a runner starts.
 */
async function unpackWhole(archive: Readable, dir: string): Promise<void> {
  const staging = siblingPathOf(dir, "restore");
  try {
    // The archive's workspace/ is unpacked into `staging` itself.
    await unpackSessionArchive(archive, staging);
    await fs.rename(staging, dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOTEMPTY" && error.code !== "EEXIST") throw error;
    });
  } finally {
    // Unpacked archive content: removed through held descriptors, never following a link.
    await removeTree(staging);
  }
}

/** Stores the workspace in `dir` as the session's, replacing the one stored before. */
export async function storeWorkspace(
  client: ApiClient,
  environment: string,
  sessionId: string,
  dir: string,
): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of packSessionArchive("", dir)) chunks.push(chunk as Buffer);
  await client.request(workspacePath(environment, sessionId), {
    method: "PUT",
    headers: { "content-type": "application/gzip" },
    body: Buffer.concat(chunks),
  });
}
