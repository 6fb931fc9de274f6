/**
 * The Fargate launcher: one ECS Fargate task per session (a micro-VM of its own) running
 * `keel runner`, started by the worker through the ECS API and gone when the session is idle.
 *
 * The task gets, as container overrides, the runner's arguments (`--env E --snapshots --idle-exit
 * N`; the task definition's entry point is `keel runner`) and its variables: `KEEL_API_URL`, a
 * runner token of its session only, and the worker's MCP mounts and hosts when set (its image is
 * Keel's, so the mounted paths are there too). Nothing else of the worker's environment
 * (Temporal, S3, provider settings, MCP secrets, AWS credentials) goes with it; its task role
 * grants nothing (infra/lib/runners.ts).
 *
 * Where the token is visible: ECS keeps container overrides in the task's description, so anyone
 * who may `ecs:DescribeTasks` on the cluster can read it, while the task runs and for about an hour
 * after it stops. That is why it is a token of one session, revoked as soon as the launcher sees
 * its task stopped, and why `close()` stops the tasks and revokes theirs. (Keeping it out of the
 * description would need a Secrets Manager secret per task, or an exchange of a one-use token for
 * a fresh one on the runner's first call: not built.)
 *
 * One task per session across workers: tasks carry `startedBy` = a digest of the session, and
 * `ensure` (when this launcher has no task of the session it knows to be there, by DescribeTasks)
 * lists the cluster's tasks with it (desired status RUNNING, i.e. PENDING or RUNNING) before
 * starting one, so an activity retried on another worker finds the task the first attempt started. RunTask's `clientToken` is the new token's id: the SDK's retries of one request (an
 * answer lost on the way) do not start a second task.
 *
 * Idle stop: the runner exits after `--idle-exit`; the launcher checks its own tasks every
 * `pollMs` (DescribeTasks) and revokes the token of each one STOPPED. `ensure` is asked every
 * second while a call goes on, so it answers from what it knows for `recheckMs` before asking
 * ECS again. Not tested against real ECS: the tests drive the real SDK client against a local
 * server that speaks ECS's JSON protocol (test/unit/environments/fargate-launcher.test.ts).
 */
import { createHash } from "node:crypto";
import {
  DescribeTasksCommand,
  type ECSClient,
  ListTasksCommand,
  RunTaskCommand,
  StopTaskCommand,
} from "@aws-sdk/client-ecs";
import {
  type FargateTaskSettings,
  type Launcher,
  type LauncherOptions,
  type LaunchRequest,
  launchedMcpEnv,
} from "./types";

export interface FargateLauncherOptions extends LauncherOptions, FargateTaskSettings {
  ecs: ECSClient;
  /** How long `ensure` trusts what it last saw of a session's task before asking ECS again. */
  recheckMs?: number;
  /** How often the launcher looks for its stopped tasks (to revoke their tokens); 0: never (tests). */
  pollMs?: number;
}

/** A session's task as last seen; `tokenId` only on the tasks this launcher started. */
interface Known {
  request: LaunchRequest;
  taskArn: string;
  tokenId?: string;
  checkedAt: number;
}

const DEFAULT_RECHECK_MS = 15_000;
const DEFAULT_POLL_MS = 30_000;
/** DescribeTasks takes at most 100 tasks per request. */
const DESCRIBE_BATCH = 100;

/** `startedBy` of a session's tasks (at most 36 characters): the same on every worker. */
export function startedByFor(request: LaunchRequest): string {
  const key = `${request.tenantId}/${request.environment}/${request.sessionId}`;
  return `keel-${createHash("sha256").update(key).digest("hex").slice(0, 31)}`;
}

export class FargateLauncher implements Launcher {
  private readonly known = new Map<string, Known>();
  private readonly pending = new Map<string, Promise<void>>();
  private readonly timer?: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: FargateLauncherOptions) {
    const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
    if (pollMs > 0) {
      this.timer = setInterval(
        () =>
          void this.reapStopped().catch((error: unknown) =>
            options.log("warn", "launched tasks not checked", { error: String(error) }),
          ),
        pollMs,
      );
      this.timer.unref();
    }
  }

  ensure(request: LaunchRequest): Promise<void> {
    const key = startedByFor(request);
    const known = this.known.get(key);
    const fresh = known && Date.now() - known.checkedAt < (this.options.recheckMs ?? DEFAULT_RECHECK_MS);
    if (this.closed || fresh) return Promise.resolve();
    let done = this.pending.get(key);
    if (!done) {
      done = this.verifyOrStart(key, request).finally(() => this.pending.delete(key));
      this.pending.set(key, done);
    }
    return done;
  }

  /** The tasks this launcher started and still counts as live, by `tenant/environment/session`. */
  tasks(): Record<string, string> {
    const mine = [...this.known.values()].filter((known) => known.tokenId !== undefined);
    return Object.fromEntries(
      mine.map(({ request, taskArn }) => [
        `${request.tenantId}/${request.environment}/${request.sessionId}`,
        taskArn,
      ]),
    );
  }

  /**
   * Revokes the tokens of this launcher's tasks that ECS reports STOPPED or no longer knows
   * (failure `MISSING`); a task ECS could not describe for another reason is asked about again.
   * Forgets other workers' tasks it has not checked within `recheckMs`.
   */
  async reapStopped(): Promise<void> {
    // Another worker's task is remembered only to spare a recheck: stale, it is worth nothing,
    // and a worker that saw many sessions' tasks must not keep them all.
    const recheckMs = this.options.recheckMs ?? DEFAULT_RECHECK_MS;
    for (const [key, known] of this.known)
      if (known.tokenId === undefined && Date.now() - known.checkedAt >= recheckMs) this.known.delete(key);
    const mine = [...this.known].filter(([, known]) => known.tokenId !== undefined);
    for (let i = 0; i < mine.length; i += DESCRIBE_BATCH) {
      const batch = mine.slice(i, i + DESCRIBE_BATCH);
      const gone = await this.stopped(batch.map(([, known]) => known.taskArn));
      for (const [key, known] of batch) if (gone.has(known.taskArn)) await this.forget(key, known, "stopped");
    }
  }

  /** Of these tasks (at most 100), those ECS reports STOPPED or does not know (`MISSING`). */
  private async stopped(taskArns: string[]): Promise<Set<string | undefined>> {
    const described = await this.options.ecs.send(
      new DescribeTasksCommand({ cluster: this.options.cluster, tasks: taskArns }),
    );
    return new Set([
      ...(described.tasks ?? []).filter((task) => task.lastStatus === "STOPPED").map((task) => task.taskArn),
      ...(described.failures ?? [])
        .filter((failure) => failure.reason === "MISSING")
        .map((failure) => failure.arn),
    ]);
  }

  /** Stops every task this launcher started and revokes their tokens (worker shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await Promise.allSettled(this.pending.values());
    const mine = [...this.known].filter(([, known]) => known.tokenId !== undefined);
    await Promise.allSettled(
      mine.map(async ([key, known]) => {
        try {
          await this.options.ecs.send(
            new StopTaskCommand({
              cluster: this.options.cluster,
              task: known.taskArn,
              reason: "Keel worker shutting down",
            }),
          );
        } catch (error) {
          this.options.log("warn", "launched task not stopped", { key, error: String(error) });
        }
        await this.forget(key, known, "stopped by the launcher");
      }),
    );
  }

  /**
   * This launcher's task of the session is asked about by its ARN (DescribeTasks answers at once,
   * where ListTasks may not list a task started a moment ago): still there → nothing to do;
   * stopped → its token is revoked. Without one, the cluster's tasks of the session (another
   * worker's) are listed; none → a task is started.
   */
  private async verifyOrStart(key: string, request: LaunchRequest): Promise<void> {
    const known = this.known.get(key);
    if (known?.tokenId !== undefined) {
      if (!(await this.stopped([known.taskArn])).has(known.taskArn)) {
        known.checkedAt = Date.now();
        return;
      }
      await this.forget(key, known, "stopped");
    }
    if (this.closed) return;
    const listed = await this.options.ecs.send(
      new ListTasksCommand({ cluster: this.options.cluster, startedBy: key, desiredStatus: "RUNNING" }),
    );
    const running = listed.taskArns?.[0];
    if (running !== undefined) {
      // Another worker's task: this launcher neither stops it nor holds its token.
      this.known.set(key, { request, taskArn: running, checkedAt: Date.now() });
      return;
    }
    await this.start(key, request);
  }

  private async start(key: string, request: LaunchRequest): Promise<void> {
    const { options } = this;
    const { token, tokenId } = await options.tokens.issueToken(request.tenantId, request.environment, {
      sessionId: request.sessionId,
    });
    let taskArn: string | undefined;
    try {
      const result = await options.ecs.send(
        new RunTaskCommand({
          cluster: options.cluster,
          taskDefinition: options.taskDefinition,
          launchType: "FARGATE",
          count: 1,
          startedBy: key,
          clientToken: tokenId,
          networkConfiguration: {
            awsvpcConfiguration: {
              subnets: options.subnets,
              securityGroups: options.securityGroups,
              assignPublicIp: options.assignPublicIp ? "ENABLED" : "DISABLED",
            },
          },
          overrides: {
            containerOverrides: [
              {
                name: options.container,
                command: [
                  "--env",
                  request.environment,
                  "--snapshots",
                  "--idle-exit",
                  String(Math.max(1, Math.round(options.idleMs / 1000))),
                ],
                // Its whole share of the worker's settings: where the API is, its session's token,
                // and where its MCP servers' programs are and which private hosts they may reach.
                environment: [
                  { name: "KEEL_API_URL", value: options.apiUrl },
                  { name: "KEEL_RUNNER_TOKEN", value: token },
                  ...Object.entries(launchedMcpEnv(options.mcpSettings)).map(([name, value]) => ({
                    name,
                    value,
                  })),
                ],
              },
            ],
          },
          tags: [
            { key: "keel:tenant", value: request.tenantId },
            { key: "keel:environment", value: request.environment },
            { key: "keel:session", value: request.sessionId },
          ],
        }),
      );
      taskArn = result.tasks?.[0]?.taskArn;
      if (taskArn === undefined) {
        const reasons = (result.failures ?? []).map((failure) => failure.reason ?? "unknown");
        throw new Error(`ECS started no runner task: ${reasons.join("; ") || "no task in the answer"}`);
      }
    } catch (error) {
      await this.revoke(key, request, tokenId);
      throw error;
    }
    this.known.set(key, { request, taskArn, tokenId, checkedAt: Date.now() });
    options.log("info", "runner task launched", { key, taskArn });
  }

  /** Drops a session's task (once, whoever notices first) and revokes its token if it is this launcher's. */
  private async forget(key: string, known: Known, why: string): Promise<void> {
    if (this.known.get(key) !== known) return;
    this.known.delete(key);
    this.options.log("info", "launched runner task ended", { key, taskArn: known.taskArn, why });
    if (known.tokenId !== undefined) await this.revoke(key, known.request, known.tokenId);
  }

  private async revoke(key: string, request: LaunchRequest, tokenId: string): Promise<void> {
    try {
      await this.options.tokens.revoke(request.tenantId, request.environment, tokenId);
    } catch (error) {
      this.options.log("warn", "runner token not revoked", { key, error: String(error) });
    }
  }
}
