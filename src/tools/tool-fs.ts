/**
 * How the file tools reach a call's workspace: only through the workspace file layer
 * (`workspace-fs.ts`), opened once per call, with the path arguments as the model gives them.
 */
import * as fs from "node:fs/promises";
import { SANDBOX_WORKSPACE_PATH } from "./sandbox";
import { ToolError } from "./tool-error";
import type { Workspace } from "./workspace";
import { errorCode, WorkspaceFs } from "./workspace-fs";

/** Runs `use` with the call's workspace opened through the layer, and closes it afterwards. */
export function withWorkspaceFs<T>(workspace: Workspace, use: (ws: WorkspaceFs) => Promise<T>): Promise<T> {
  return WorkspaceFs.with(workspace.dir, use);
}

/** `candidate` relative to `dir` when it is `dir` or lies under it lexically; undefined otherwise. */
function under(dir: string, candidate: string): string | undefined {
  if (candidate === dir) return ".";
  return candidate.startsWith(`${dir}/`) ? candidate.slice(dir.length + 1) : undefined;
}

/**
 * A path argument as the layer takes it. Besides relative paths and `/workspace/…`, the tools
 * accept the workspace's own host path, as configured or as its real path (what `pwd` prints
 * in a command run with KEEL_SANDBOX=off); it becomes a path relative to the workspace, which
 * the layer then walks beneath the workspace like any other (`..` cannot climb out). Lexical:
 * nothing is opened but the workspace's own descriptor, to read its real path.
 */
export async function layerPath(ws: WorkspaceFs, userPath: string): Promise<string> {
  if (!userPath.startsWith("/") || under(SANDBOX_WORKSPACE_PATH, userPath) !== undefined) return userPath;
  const configured = under(ws.dir, userPath);
  if (configured !== undefined) return configured;
  const real = await fs.readlink(`/proc/self/fd/${ws.rootFd}`).catch(() => undefined);
  return (real === undefined ? undefined : under(real, userPath)) ?? userPath;
}

/**
 * Rethrows a failure of the layer as the message the model reads: a file-system error by its
 * code (`messages[code]`, or "Cannot access <path>: <code>"), a ToolError (a refused path) as
 * it is; anything else unchanged.
 */
export function explain(error: unknown, userPath: string, messages: Partial<Record<string, string>>): never {
  if (error instanceof ToolError) throw error;
  const code = errorCode(error);
  if (code === undefined) throw error;
  throw new ToolError(messages[code] ?? `Cannot access ${userPath}: ${code}`);
}

/**
 * Replaces the content of an open file with `data`: written from offset 0 whatever the handle's
 * position, then cut to its length (so the file is never seen empty midway).
 */
export async function replaceContent(handle: fs.FileHandle, data: Uint8Array): Promise<void> {
  let written = 0;
  while (written < data.length) {
    const { bytesWritten } = await handle.write(data, written, data.length - written, written);
    written += bytesWritten;
  }
  await handle.truncate(data.length);
}
