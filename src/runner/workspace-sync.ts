/**
 * A runner's copy of a session's workspace kept through the API, for runners whose disk does not
 * outlive them (launched runners: a process in a temporary directory, a Fargate task). The
 * workspace travels as a session archive (store/workspace-archive.ts: the same packing and the
 * same refusals on unpacking as `keel export --with-workspace` and the import), stored by the API
 * under the runner's own tenant and environment.
 */
import { randomBytes } from "node:crypto";
import * as fs from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { type ApiClient, ApiError } from "../cli/client";
import { packSessionArchive, unpackSessionArchive } from "../store/workspace-archive";

const workspacePath = (environment: string, sessionId: string) =>
  `/v1/environments/${encodeURIComponent(environment)}/sessions/${encodeURIComponent(sessionId)}/workspace`;

/**
 * Creates `dir` from the session's stored workspace, or empty when none is stored. `dir` must not
 * exist; it appears whole or not at all (unpacked beside it, then renamed).
 */
export async function restoreWorkspace(
  client: ApiClient,
  environment: string,
  sessionId: string,
  dir: string,
): Promise<"restored" | "empty"> {
  let archive: Uint8Array;
  try {
    const response = await client.request(workspacePath(environment, sessionId), {
      headers: { accept: "application/gzip" },
    });
    archive = new Uint8Array(await response.arrayBuffer());
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) throw error;
    await fs.mkdir(dir, { recursive: true });
    return "empty";
  }
  const staging = path.join(path.dirname(dir), `.restore-${randomBytes(6).toString("hex")}`);
  try {
    // The archive's workspace/ is unpacked into `staging` itself.
    await unpackSessionArchive(Readable.from([Buffer.from(archive)]), staging);
    await fs.rename(staging, dir);
  } finally {
    await fs.rm(staging, { recursive: true, force: true });
  }
  return "restored";
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
