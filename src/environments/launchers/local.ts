/**
 * The local launcher: one `keel runner` process per session on the worker's machine, started by
 * the worker and stopped when the session is idle.
 *
 * The runner process gets an environment of its own: the API's URL and a runner token of its
 * session only — nothing of the worker's (no Temporal, S3 or provider settings) — and a directory
 * of its own (its session's workspace, restored through the API, gone when it stops). The commands
 * its tools start run in its bubblewrap tool sandbox, as on any runner (an empty network namespace
 * unless the run allows more); with KEEL_SANDBOX=off on the worker, unsandboxed.
 *
 * Not a second bubblewrap box around the runner process itself: the tool sandbox inside it must
 * mount a /proc for its own PID namespace, and the kernel refuses that inside a bubblewrap box
 * with a PID namespace (its /proc is partly covered by read-only mounts), while a box without one
 * would show the runner every process of the host. Agent code runs only in the tool sandbox; the
 * runner process is Keel's own code with nothing to leak but its session's token.
 *
 * The runner stops itself after `idleMs` without a call (`keel runner --idle-exit`); the launcher
 * then revokes its token and removes its directory. A runner that dies is noticed the same way,
 * and the next `ensure` for its session starts a new one, which restores the session's workspace
 * through the API (`--snapshots`).
 */

import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import path from "node:path";
import type { Isolation } from "../../tools/sandbox";
import { type Launcher, type LauncherOptions, type LaunchRequest, launchedMcpEnv } from "./types";

export interface LocalLauncherOptions extends LauncherOptions {
  /** Folder of the runners' own directories. */
  root: string;
  /** `bwrap`: the runners' tools run in the bubblewrap sandbox; `off`: unsandboxed (KEEL_SANDBOX=off). */
  isolation: Isolation;
}

interface Launched {
  child: ChildProcess;
  exited: Promise<void>;
}

/** Keel's own root (holds src/ or dist/ and node_modules; `--import tsx` resolves from there). */
const PACKAGE_ROOT = path.resolve(__dirname, "../../..");

/** The command that runs `keel runner` with this copy of Keel (sources through tsx, or the build). */
function runnerCommand(): string[] {
  const fromSources = __filename.endsWith(".ts");
  const main = path.resolve(__dirname, `../../cli/main.${fromSources ? "ts" : "js"}`);
  return [process.execPath, ...(fromSources ? ["--import", "tsx"] : []), main, "runner"];
}

export class LocalLauncher implements Launcher {
  private readonly runners = new Map<string, Launched>();
  private readonly starting = new Map<string, Promise<void>>();
  private closed = false;

  constructor(private readonly options: LocalLauncherOptions) {}

  ensure(request: LaunchRequest): Promise<void> {
    const key = `${request.tenantId}/${request.environment}/${request.sessionId}`;
    if (this.closed || this.runners.has(key)) return Promise.resolve();
    let started = this.starting.get(key);
    if (!started) {
      started = this.start(key, request).finally(() => this.starting.delete(key));
      this.starting.set(key, started);
    }
    return started;
  }

  /** The runners running now, by `tenant/environment/session` (tests and the benchmark). */
  pids(): Record<string, number | undefined> {
    return Object.fromEntries([...this.runners].map(([key, runner]) => [key, runner.child.pid]));
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled(this.starting.values());
    const runners = [...this.runners.values()];
    for (const runner of runners) runner.child.kill("SIGTERM");
    await Promise.all(runners.map((runner) => runner.exited));
  }

  private async start(key: string, request: LaunchRequest): Promise<void> {
    const { tokens, log } = this.options;
    const { token, tokenId } = await tokens.issueToken(request.tenantId, request.environment, {
      sessionId: request.sessionId,
    });
    await mkdir(this.options.root, { recursive: true });
    const dir = await mkdtemp(path.join(path.resolve(this.options.root), "runner-"));
    const runnerArgs = [
      ...runnerCommand(),
      "--env",
      request.environment,
      "--workspace-root",
      path.join(dir, "workspaces"),
      "--snapshots",
      "--idle-exit",
      String(Math.max(1, Math.round(this.options.idleMs / 1000))),
    ];
    const sandboxed = this.options.isolation === "bwrap";
    const [command, ...args] = runnerArgs;
    // Its whole environment: nothing of the worker's (no Temporal, S3 or provider settings).
    const env: NodeJS.ProcessEnv = {
      PATH: "/usr/local/bin:/usr/bin:/bin",
      HOME: dir,
      KEEL_API_URL: this.options.apiUrl,
      KEEL_RUNNER_TOKEN: token,
      ...(sandboxed ? {} : { KEEL_SANDBOX: "off" }),
      ...launchedMcpEnv(this.options.mcpSettings),
    };
    const child = spawn(command as string, args, {
      cwd: PACKAGE_ROOT,
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let tail = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      tail = (tail + chunk.toString()).slice(-2_000);
    });
    const exited = new Promise<void>((done) => {
      let ended = false;
      const end = (fields: Record<string, unknown>, failed: boolean) => {
        if (ended) return;
        ended = true;
        this.runners.delete(key);
        log(failed ? "warn" : "info", "launched runner stopped", {
          key,
          ...fields,
          ...(failed ? { tail } : {}),
        });
        // Its token dies with it; its directory (the workspaces it restored) too.
        void tokens
          .revoke(request.tenantId, request.environment, tokenId)
          .catch((error: unknown) => log("warn", "runner token not revoked", { key, error: String(error) }))
          .then(() => rm(dir, { recursive: true, force: true }))
          .finally(done);
      };
      child.once("close", (code, signal) => end({ code, signal }, code !== 0));
      // A process that could not start emits no `close` on every platform: ended here too.
      child.once("error", (error) => end({ error: String(error) }, true));
    });
    this.runners.set(key, { child, exited });
    log("info", "runner launched", { key, pid: child.pid, sandboxed });
  }
}
