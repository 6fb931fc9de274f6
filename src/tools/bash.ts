import { type ChildProcessByStdio, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import type { FileHandle } from "node:fs/promises";
import * as fs from "node:fs/promises";
import type { Readable, Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { TOOL_REPLAY_CLASSES } from "../core/tool-replay";
import { type CallCgroup, createCallCgroup } from "./cgroup";
import { type CallEgress, startCallEgress } from "./egress-proxy";
import { groupAlive, terminateGroup } from "./process-group";
import {
  bashCommandLine,
  type CommandLine,
  egressAllowlist,
  findExecutable,
  limitNotice,
  SANDBOX_WORKSPACE_PATH,
  type SandboxPolicy,
  SandboxUnavailableError,
} from "./sandbox";
import { ToolError } from "./tool-error";
import { MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES, notices, type Truncation, truncateTail } from "./truncate";
import { defineTool, type ToolContext, type ToolOutput } from "./types";
import { createScratchFile, SCRATCH_SUBDIR, type Workspace } from "./workspace";
import { type CallQuota, prepareCallQuota } from "./workspace-quota";

const BashParameters = z.object({
  command: z.string().min(1).describe("Bash command to execute"),
  timeout: z
    .number()
    .positive()
    .optional()
    .describe("Timeout in seconds (optional; the worker's wall-time limit applies either way)"),
});

/** Bytes of the most recent output kept in memory once the output is spilled to a file. */
const ROLLING_TAIL_BYTES = 2 * MAX_OUTPUT_BYTES;
/** Minimum interval between streamed partial outputs. */
const UPDATE_INTERVAL_MS = 250;
/** How long to wait for the pipes to drain after the shell exits (background children may hold them). */
const PIPE_DRAIN_MS = 200;
/**
 * Prepended to every command: on SIGTERM the shell waits for (and so reaps) its background
 * children before exiting, instead of leaving them as orphans.
 */
const REAP_ON_TERM = "trap 'wait; exit 143' TERM\n";

/**
 * Collects a command's combined output with bounded memory. Everything stays in memory until the
 * output exceeds the display limits; from then on only a rolling tail is kept, and the whole
 * output goes to a new file in the workspace's scratch area (created and written through its own
 * descriptor, see `createScratchFile`), unless that file cannot be made or written.
 */
class OutputCollector {
  private head: Buffer[] = [];
  private tail = Buffer.alloc(0);
  private totalBytes = 0;
  private newlines = 0;
  private lastByte: number | undefined;
  private spilled = false;
  /** Workspace-relative path of the spill file while it is (being) kept; undefined once given up. */
  private kept?: string;
  private file?: FileHandle;

  constructor(private readonly workspace: Workspace) {}

  async append(chunk: Buffer): Promise<void> {
    this.totalBytes += chunk.length;
    for (const byte of chunk) if (byte === 0x0a) this.newlines++;
    this.lastByte = chunk[chunk.length - 1] ?? this.lastByte;
    const joined = Buffer.concat([this.tail, chunk]);
    this.tail = joined.subarray(Math.max(0, joined.length - ROLLING_TAIL_BYTES));
    if (this.spilled) {
      await this.write(chunk);
      return;
    }
    this.head.push(chunk);
    if (this.totalBytes > MAX_OUTPUT_BYTES || this.newlines >= MAX_OUTPUT_LINES) await this.spill();
  }

  private async spill(): Promise<void> {
    this.spilled = true;
    const head = Buffer.concat(this.head);
    this.head = [];
    const name = `bash-${Date.now()}-${randomBytes(4).toString("hex")}.log`;
    this.kept = `${SCRATCH_SUBDIR}/${name}`;
    const created = await createScratchFile(this.workspace, name);
    if (!created) this.kept = undefined;
    this.file = created?.handle;
    await this.write(head);
  }

  /** Appends to the spill file; a failed write (disk full, file limit) gives the file up. */
  private async write(data: Buffer): Promise<void> {
    const file = this.file;
    if (!file) return;
    try {
      let written = 0;
      while (written < data.length) {
        written += (await file.write(data, written, data.length - written)).bytesWritten;
      }
    } catch {
      this.file = undefined;
      this.kept = undefined;
      await file.close().catch(() => undefined);
    }
  }

  get lineCount(): number {
    if (this.totalBytes === 0) return 0;
    return this.newlines + (this.lastByte === 0x0a ? 0 : 1);
  }

  /** The output so far (its tail once spilled), without a trailing newline. */
  text(): string {
    const bytes = this.spilled ? this.tail : Buffer.concat(this.head);
    let start = 0;
    // A rolling tail may begin inside a multi-byte character.
    while (this.spilled && start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start++;
    return bytes.subarray(start).toString("utf8").replace(/\n$/, "");
  }

  get fullOutputPath(): string | undefined {
    return this.kept;
  }

  async close(): Promise<void> {
    await this.file?.close();
  }
}

interface Rendered {
  text: string;
  truncation?: Truncation;
}

function render(output: OutputCollector): Rendered {
  const truncation = truncateTail(output.text());
  const fullOutput = output.fullOutputPath;
  if (!truncation.truncated && !fullOutput) return { text: truncation.content };
  const total = output.lineCount;
  const first = total - truncation.outputLines + 1;
  const notice = truncation.lastLinePartial
    ? notices.bashPartialLine(truncation.outputBytes, total, fullOutput)
    : truncation.truncatedBy === "bytes"
      ? notices.bashBytes(first, total, total, fullOutput)
      : notices.bashLines(first, total, total, fullOutput);
  return { text: `${truncation.content}\n\n${notice}`, truncation: { ...truncation, totalLines: total } };
}

export interface BashDetails {
  exitCode: number | null;
  /** Signal that ended the shell, if any. */
  signal?: string;
  timedOut?: boolean;
  aborted?: boolean;
  truncation?: Truncation;
  /** Workspace-relative path of the complete output, when it was truncated. */
  fullOutputPath?: string;
  /** Present when the command ran without isolation (KEEL_SANDBOX=off on this worker). */
  sandbox?: "off";
}

export const bashTool = defineTool({
  name: "bash",
  description: `Execute a bash command in the workspace directory (${SANDBOX_WORKSPACE_PATH}). Returns stdout and stderr combined. Output is truncated to the last ${MAX_OUTPUT_LINES} lines or ${MAX_OUTPUT_BYTES / 1024}KB (whichever is hit first); if truncated, the full output is saved to a file in the workspace (named in the output). Optionally provide a timeout in seconds. Commands that fail report their exit code.`,
  parameters: BashParameters,
  replay: TOOL_REPLAY_CLASSES.bash,
  async execute({ command, timeout }, { workspace, sandbox, signal, onUpdate }): Promise<ToolOutput> {
    const workspaceDir = await fs.realpath(workspace.dir);
    const cgroup = createCallCgroup(sandbox.limits);
    let egress: CallEgress | undefined;
    try {
      egress = await egressFor(sandbox);
      const quota = await prepareCallQuota(workspaceDir, sandbox.limits);
      const limited = { ...sandbox, limits: quota.limits };
      const line = bashCommandLine(workspaceDir, limited, REAP_ON_TERM + command, cgroup, egress);
      const output = await runCommand(line, { workspace, sandbox, signal, onUpdate, timeout, cgroup, quota });
      return withNotices(output, [
        ...(await quotaNotices(quota, output)),
        ...(egress?.refusals ?? []).map(
          ({ host, port, reason }) => `[network: ${host}:${port} refused: ${reason}]`,
        ),
        ...(sandbox.missingSecrets ?? []).map((name) => `[secrets: ${name} is not set for this tenant]`),
      ]);
    } catch (error) {
      if (error instanceof SandboxUnavailableError) throw new ToolError(error.message, { refused: true });
      throw error;
    } finally {
      await egress?.close();
      await cgroup?.remove();
    }
  },
});

/**
 * The call's egress proxy when its run allows a list of hosts or names secrets (and the sandbox
 * can bridge to it): it reaches the run's list and the secrets' hosts, and injects the values.
 */
async function egressFor(sandbox: SandboxPolicy): Promise<CallEgress | undefined> {
  const allow = egressAllowlist(sandbox);
  if (allow === undefined || sandbox.isolation === "off") return undefined;
  if (!findExecutable("socat")) {
    throw new SandboxUnavailableError(
      `This run ${typeof sandbox.network === "object" ? "asks for a network allowlist" : "names tenant secrets"}, but socat (the sandbox's bridge to the egress proxy) is not installed on this worker; nothing was run.`,
    );
  }
  try {
    return await startCallEgress(
      allow,
      { secrets: sandbox.secrets, missing: sandbox.missingSecrets },
      sandbox.egressOptions,
    );
  } catch (error) {
    throw new SandboxUnavailableError(
      `${error instanceof Error ? error.message : String(error)}; nothing was run.`,
    );
  }
}

/** The workspace quota's notice, when the call reached it (measured once the call's processes are gone). */
async function quotaNotices(quota: CallQuota, output: ToolOutput): Promise<string[]> {
  const text = output.content.map((block) => (block.type === "text" ? block.text : "")).join("");
  const notice = await quota.finish(text, (output.details as BashDetails | undefined)?.exitCode ?? null);
  return notice ? [notice] : [];
}

/** The output with notice lines at its end: hosts the egress proxy refused, secrets the tenant lacks. */
function withNotices(output: ToolOutput, lines: readonly string[]): ToolOutput {
  if (lines.length === 0) return output;
  const text = output.content.map((block) => (block.type === "text" ? block.text : "")).join("");
  return { ...output, content: [{ type: "text", text: `${text}\n\n${lines.join("\n")}` }] };
}

interface RunOptions extends Pick<ToolContext, "workspace" | "sandbox" | "signal" | "onUpdate"> {
  /** The model's timeout argument, in seconds. */
  timeout?: number;
  cgroup?: CallCgroup;
  /** The workspace quota: watched while the command runs, which it ends when the workspace is over it. */
  quota?: CallQuota;
}

/** Runs one prepared command line to its end (exit, timeout or abort) and renders its result. */
async function runCommand(
  line: CommandLine,
  { workspace, sandbox, signal, onUpdate, timeout, cgroup, quota }: RunOptions,
): Promise<ToolOutput> {
  const limitMs = Math.min(
    timeout !== undefined ? timeout * 1000 : Number.POSITIVE_INFINITY,
    sandbox.limits.wallTimeMs,
  );
  const timeoutLabel =
    timeout !== undefined && timeout * 1000 <= sandbox.limits.wallTimeMs
      ? `${timeout} seconds`
      : `${sandbox.limits.wallTimeMs / 1000} seconds (the wall-time limit of a command)`;
  const output = new OutputCollector(workspace);
  const inputs = line.inputs ?? [];
  // The input pipes make the stdio array variable-length, which spawn's typings cannot follow.
  const child = spawn(line.file, line.args, {
    cwd: line.cwd,
    detached: true,
    env: line.env,
    stdio: ["ignore", "pipe", "pipe", ...inputs.map(() => "pipe" as const)],
  }) as ChildProcessByStdio<null, Readable, Readable>;
  inputs.forEach((data, i) => {
    const input = child.stdio[3 + i] as Writable;
    // A process that dies before reading its input closes the pipe: its exit is the result.
    input.on("error", () => {});
    input.end(data);
  });

  let stopping: Promise<void> | undefined;
  let timedOut = false;
  const stop = () => {
    if (child.pid !== undefined && !stopping) stopping = terminateGroup(child.pid);
  };
  const onAbort = () => stop();
  signal?.addEventListener("abort", onAbort, { once: true });
  if (signal?.aborted) stop();
  const timer = setTimeout(() => {
    timedOut = true;
    stop();
  }, limitMs);
  const stopCpuWatch = cgroup?.watchCpu(sandbox.limits.cpuSeconds, stop);
  const stopQuotaWatch = quota?.watch(stop);

  let lastUpdate = 0;
  let writes = Promise.resolve();
  const onData = (chunk: Buffer) => {
    writes = writes.then(() => output.append(chunk));
    if (onUpdate && Date.now() - lastUpdate >= UPDATE_INTERVAL_MS) {
      lastUpdate = Date.now();
      void writes.then(() => onUpdate({ content: [{ type: "text", text: render(output).text }] }));
    }
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);

  const pipesClosed = Promise.all([
    new Promise((resolve) => child.stdout.once("close", resolve)),
    new Promise((resolve) => child.stderr.once("close", resolve)),
  ]);
  const exit = await new Promise<
    { started: true; code: number | null; signal: NodeJS.Signals | null } | { started: false; error: Error }
  >((resolve) => {
    child.once("error", (error) => resolve({ started: false, error }));
    child.once("exit", (code, exitSignal) => resolve({ started: true, code, signal: exitSignal }));
  });
  await Promise.race([pipesClosed, sleep(PIPE_DRAIN_MS)]);
  child.stdout.destroy();
  child.stderr.destroy();
  clearTimeout(timer);
  stopCpuWatch?.();
  stopQuotaWatch?.();
  signal?.removeEventListener("abort", onAbort);
  if (stopping) await stopping;
  else if (child.pid !== undefined && (signal?.aborted || timedOut) && groupAlive(child.pid)) {
    await terminateGroup(child.pid);
  }
  await writes;
  await output.close();

  if (!exit.started) {
    return {
      content: [{ type: "text", text: `Failed to start bash: ${exit.error.message}` }],
      isError: true,
    };
  }
  const { text, truncation } = render(output);
  const details: BashDetails = {
    exitCode: exit.code,
    ...(exit.signal ? { signal: exit.signal } : {}),
    ...(truncation ? { truncation, fullOutputPath: output.fullOutputPath } : {}),
    ...(sandbox.isolation === "off" ? { sandbox: "off" as const } : {}),
  };
  const withStatus = (status: string) => (text ? `${text}\n\n${status}` : status);
  if (signal?.aborted) {
    return {
      content: [{ type: "text", text: withStatus("Command aborted") }],
      details: { ...details, aborted: true },
      isError: true,
    };
  }
  const limit = limitNotice(output.text(), exit.code, sandbox.limits, {
    ...(cgroup?.hits() ?? { processes: false, memory: false, cpu: false }),
    workspace: quota !== undefined && (quota.ended || quota.boundsFileSize),
  });
  const withLimit = (status: string) => withStatus(limit ? `${status} ${limit}` : status);
  if (timedOut) {
    return {
      content: [{ type: "text", text: withLimit(`Command timed out after ${timeoutLabel}`) }],
      details: { ...details, timedOut: true },
      isError: true,
    };
  }
  if (exit.code !== 0) {
    const status =
      exit.code === null ? `Command killed by ${exit.signal}` : `Command exited with code ${exit.code}`;
    return { content: [{ type: "text", text: withLimit(status) }], details, isError: true };
  }
  return { content: [{ type: "text", text: text || "(no output)" }], details, isError: false };
}
