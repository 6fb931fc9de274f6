import * as fs from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { runToolCall, type ToolOutput } from "../../../src/tools";
import { DEFAULT_SANDBOX_POLICY, type SandboxPolicy } from "../../../src/tools/sandbox";
import type { ToolContext } from "../../../src/tools/types";
import { prepareWorkspace, type Workspace, workspaceFor } from "../../../src/tools/workspace";

export interface Sandbox {
  /** Parent of everything the test creates. */
  base: string;
  /** A directory outside the workspace that no tool may touch. */
  outside: string;
  workspace: Workspace;
  ctx: ToolContext;
  run(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolOutput>;
  /** Every path and file content under `outside`, to compare before and after. */
  snapshotOutside(): Promise<string>;
}

async function snapshot(dir: string): Promise<string> {
  const lines: string[] = [];
  async function visit(current: string) {
    const entries = await fs.readdir(current, { withFileTypes: true });
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      const full = path.join(current, entry.name);
      if (entry.isSymbolicLink()) lines.push(`${full} -> ${await fs.readlink(full)}`);
      else if (entry.isDirectory()) {
        lines.push(`${full}/`);
        await visit(full);
      } else lines.push(`${full}: ${await fs.readFile(full, "utf8")}`);
    }
  }
  await visit(dir);
  return lines.join("\n");
}

/** A workspace with a directory beside it; tools run under `policy` (bwrap, no network by default). */
export async function makeSandbox(policy: SandboxPolicy = DEFAULT_SANDBOX_POLICY): Promise<Sandbox> {
  const base = await fs.realpath(await fs.mkdtemp(path.join(tmpdir(), "keel-tools-")));
  const outside = path.join(base, "outside");
  await fs.mkdir(path.join(outside, "nested"), { recursive: true });
  await fs.writeFile(path.join(outside, "secret.txt"), "top secret\n");
  await fs.writeFile(path.join(outside, "nested", "deep.txt"), "deep secret\n");
  const workspace = workspaceFor(path.join(base, "root"), "tenant1", "session1");
  await prepareWorkspace(workspace);
  const ctx: ToolContext = { workspace, sandbox: policy };
  return {
    base,
    outside,
    workspace,
    ctx,
    run: (name, args, signal) => runToolCall({ name, arguments: args }, { ...ctx, signal }),
    snapshotOutside: () => snapshot(outside),
  };
}

export const textOf = (output: ToolOutput): string =>
  output.content
    .map((block) => (block.type === "text" ? block.text : `[image ${block.mimeType}]`))
    .join("\n");

export async function removeSandbox(sandbox: Sandbox): Promise<void> {
  await fs.rm(sandbox.base, { recursive: true, force: true });
}
