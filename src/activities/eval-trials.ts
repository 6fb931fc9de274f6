/**
 * The activities of an eval's trials (workflows/eval-run.ts). A trial is a run like any other:
 * its session is a fork of the case's origin (with the files as they were there) or a new one,
 * and its prompt starts the run through the one start path (`workerRunStarter`: admission under
 * the tenant's quotas, usage, the delivery id that makes a retried start deliver nothing twice).
 * After the run, `judgeEvalTrial` runs the case's checks in a sandbox on a copy of the
 * workspace restored from the run's last snapshot — the run's own workspace is never touched —
 * and stores the trial's result once.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { runInNewContext } from "node:vm";
import { ApplicationFailure, Context } from "@temporalio/activity";
import type {
  EvalActivities,
  EvalTrialInput,
  JudgeEvalTrialInput,
  StartEvalTrialResult,
} from "../contracts/activities";
import { makeUniqueEntryId, seededRandom } from "../core/ids";
import type { SessionEntry } from "../core/session-types";
import { type StoredEval, trialRun, trialSessionId } from "../evals/eval-store";
import { judgeByNumbers, summarizeRun } from "../evals/report";
import { type CheckOutcome, DEFAULT_CHECK_TIMEOUT_SECONDS, type EvalCheck } from "../evals/types";
import { isRefusal } from "../run-client/start-or-deliver";
import { sha256Hex } from "../store/digest";
import { forkSession, pathTo } from "../store/session-fork";
import { snapshotAncestry, snapshotForAncestry } from "../store/workspace-lookup";
import { recordToolTime } from "../tool-calls/lifecycle";
import { runToolCall } from "../tools";
import { prepareWorkspace } from "../tools/workspace";
import { removeTree } from "../tools/workspace-fs";
import type { ActivityDeps } from "./deps";
import { whileHeartbeating } from "./heartbeat";
import { workerRunStarter } from "./scheduled-runs";

/** The folder under a worker's workspace root where checks get their copies (no tenant id starts with "."). */
const CHECKS_FOLDER = ".eval-checks";

export function evalTrialActivities(
  deps: Pick<
    ActivityDeps,
    "evals" | "store" | "snapshots" | "workspaceRoot" | "sandbox" | "gitHosts" | "tenants" | "usage"
  >,
): EvalActivities {
  const start = workerRunStarter(deps);
  const toolTimeDeps = {
    ...(deps.usage ? { usage: deps.usage } : {}),
    now: Date.now,
    warn: (message: string, fields: Record<string, unknown>) => Context.current().log.warn(message, fields),
  };
  const evalOf = async (tenantId: string, evalId: string): Promise<StoredEval> => {
    if (!deps.evals) throw ApplicationFailure.nonRetryable("this worker has no eval store");
    const stored = await deps.evals.get(tenantId, evalId);
    if (!stored) throw ApplicationFailure.nonRetryable(`no eval ${evalId} of tenant ${tenantId}`);
    return stored;
  };

  return {
    startEvalTrial(input) {
      // Heartbeats throughout: a worker that dies here is noticed within the heartbeat timeout.
      return whileHeartbeating(Context.current(), "starting", () => startTrial(input));
    },

    judgeEvalTrial(input) {
      return whileHeartbeating(Context.current(), "judging", () => judgeTrial(input));
    },
  };

  async function startTrial({ tenantId, evalId, index }: EvalTrialInput): Promise<StartEvalTrialResult> {
    const stored = await evalOf(tenantId, evalId);
    const { evalCase, settings } = trialRun(stored, index);
    const ref = { tenantId, sessionId: trialSessionId(evalId, index) };
    let inherited = 0;
    if (evalCase.from) {
      // Ids of closing results seeded by the trial: a retried fork writes the same entries.
      const random = seededRandom(Number.parseInt(sha256Hex(`${evalId}/${index}`).slice(0, 8), 16));
      const origin = { tenantId, sessionId: evalCase.from.sessionId };
      const path = await pathTo(deps.store, origin, evalCase.from.entryId);
      if (path.length === 0) {
        const message = `the case's origin entry ${evalCase.from.entryId} is not in session ${evalCase.from.sessionId}`;
        return { type: "refused", sessionId: ref.sessionId, message };
      }
      const forked = await forkSession(deps.store, origin, await deps.store.getHeader(origin), path, ref, {
        makeId: (taken) => makeUniqueEntryId(random, taken),
        now: Date.parse(stored.createdAt),
        resume: true,
      });
      inherited = forked.entryCount;
    }
    const outcome = await start({
      ...ref,
      text: evalCase.prompt,
      settings,
      deliveryId: `keel-eval/${tenantId}/${evalId}/${index}`,
    });
    if (isRefusal(outcome)) {
      if (outcome.type === "quota-exceeded")
        return { type: "held", message: outcome.message, retryAfterSeconds: outcome.retryAfterSeconds };
      return { type: "refused", sessionId: ref.sessionId, message: outcome.message };
    }
    return {
      type: "started",
      sessionId: ref.sessionId,
      runId: outcome.runId,
      inherited,
      startedAtMs: Date.now(),
    };
  }

  async function judgeTrial(input: JudgeEvalTrialInput): Promise<{ passed: boolean; costUsd: number }> {
    const { tenantId, evalId, index } = input;
    const { plan, evalCase, settings } = trialRun(await evalOf(tenantId, evalId), index);
    const evals = deps.evals as NonNullable<typeof deps.evals>;
    const already = await evals.getTrial(tenantId, evalId, index);
    if (already) return { passed: already.passed, costUsd: already.costUsd };
    const ref = { tenantId, sessionId: input.sessionId };
    // A trial that never started may have no session; any other read that fails fails the
    // attempt (retried), never a result judged on nothing.
    const entries =
      input.status === "not-started"
        ? []
        : (await deps.store.readEntries(ref, { untilGap: true })).entries.map(({ entry }) => entry);
    const summary = summarizeRun(entries, input.inherited);
    const checks: CheckOutcome[] = [];
    const inSandbox = evalCase.checks.filter((check) => judgeByNumbers(check, summary) === undefined);
    const checkedSinceMs = Date.now();
    if (inSandbox.length > 0 && input.status !== "not-started")
      checks.push(...(await runSandboxChecks(deps, ref, entries, inSandbox, settings.workspace)));
    const sandboxed = checks.length > 0;
    for (const check of evalCase.checks) {
      const byNumbers = judgeByNumbers(check, summary);
      if (byNumbers) checks.push(byNumbers);
    }
    const passed = input.status === "completed" && checks.every((outcome) => outcome.passed);
    const { result, written } = await evals.putTrial(tenantId, evalId, {
      ...plan,
      sessionId: input.sessionId,
      status: input.status,
      ...(input.reason ? { reason: input.reason } : {}),
      passed,
      checks,
      ...summary,
      durationMs: Math.max(0, Date.now() - input.startedAtMs),
      finishedAt: new Date().toISOString(),
    });
    // The checks' sandbox time is the tenant's tool time, as a tool call's is: counted by the
    // attempt whose result was stored, so a retried judge does not count it twice.
    if (written && sandboxed) await recordToolTime(toolTimeDeps, ref, checkedSinceMs);
    return { passed: result.passed, costUsd: result.costUsd };
  }
}

/**
 * The sandboxed checks of a trial, in order, on a fresh copy of its workspace: restored from the
 * snapshot that applies to the last of `entries` (the run's last state, or its origin's), else made from the
 * run's workspace source. Commands run as the bash tool runs a model's (same sandbox, no
 * network, the check's timeout); file checks read through the read tool, which refuses what the
 * model's reads are refused (links out of the workspace, binaries). The copy is removed after.
 */
async function runSandboxChecks(
  deps: Pick<ActivityDeps, "store" | "snapshots" | "workspaceRoot" | "sandbox" | "gitHosts">,
  ref: { tenantId: string; sessionId: string },
  entries: readonly SessionEntry[],
  checks: readonly EvalCheck[],
  source: Parameters<typeof prepareWorkspace>[1],
): Promise<CheckOutcome[]> {
  const workspace = { dir: path.join(path.resolve(deps.workspaceRoot), CHECKS_FOLDER, randomUUID()) };
  try {
    const leafId = entries.at(-1)?.id;
    const ancestry = leafId ? snapshotAncestry(entries, leafId) : undefined;
    const found = ancestry && (await snapshotForAncestry(deps.store, deps.snapshots, ref, ancestry));
    if (found) await deps.snapshots.restore(found.from, found.record, workspace.dir);
    else await prepareWorkspace(workspace, source, { ...(deps.gitHosts ? { gitHosts: deps.gitHosts } : {}) });
    const context = {
      workspace,
      sandbox: { ...deps.sandbox, network: "none" as const, tenantId: ref.tenantId },
      signal: Context.current().cancellationSignal,
    };
    const outcomes: CheckOutcome[] = [];
    for (const check of checks) outcomes.push(await runCheck(check, context));
    return outcomes;
  } finally {
    await removeTree(workspace.dir).catch(() => undefined);
  }
}

type CheckContext = Parameters<typeof runToolCall>[1];

const textOf = (output: Awaited<ReturnType<typeof runToolCall>>): string =>
  output.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n");

/** Longest a file check's pattern may run on the file's text. */
const PATTERN_TIME_MS = 200;

/**
 * Whether `pattern` (the tenant's) matches `text` (the model's), given at most `PATTERN_TIME_MS`:
 * a pattern that backtracks without end would otherwise hold this worker's one thread, and every
 * run on it, for as long as it likes. V8 stops a script past its `vm` timeout, regular
 * expressions included.
 */
function matchesWithin(pattern: string, text: string): boolean | "too-slow" {
  try {
    return (
      runInNewContext(
        'new RegExp(pattern, "m").test(text)',
        { pattern, text },
        { timeout: PATTERN_TIME_MS },
      ) === true
    );
  } catch (error) {
    if ((error as { code?: unknown }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT") return "too-slow";
    throw error;
  }
}

/** Last characters of a tool's output kept in a check's detail. */
const DETAIL_CHARS = 2_000;

async function runCheck(check: EvalCheck, context: CheckContext): Promise<CheckOutcome> {
  if (check.type === "command") {
    const timeout = check.timeoutSeconds ?? DEFAULT_CHECK_TIMEOUT_SECONDS;
    const output = await runToolCall(
      { name: "bash", arguments: { command: check.command, timeout } },
      context,
    );
    const details = output.details as { exitCode?: number | null; timedOut?: boolean } | undefined;
    const detail = textOf(output).slice(-DETAIL_CHARS);
    return { check, passed: !output.isError && details?.exitCode === 0, detail };
  }
  if (check.type === "file") {
    const output = await runToolCall({ name: "read", arguments: { path: check.path } }, context);
    const present = !output.isError;
    const wanted = check.exists ?? true;
    if (present !== wanted || !present)
      return {
        check,
        passed: present === wanted,
        detail: present ? "the file exists" : textOf(output).slice(0, DETAIL_CHARS),
      };
    const text = textOf(output);
    if (check.contains !== undefined && !text.includes(check.contains))
      return { check, passed: false, detail: `the file does not contain ${JSON.stringify(check.contains)}` };
    if (check.matches !== undefined) {
      const matched = matchesWithin(check.matches, text);
      if (matched === "too-slow")
        return {
          check,
          passed: false,
          detail: `matching /${check.matches}/ took over ${PATTERN_TIME_MS} ms: refused`,
        };
      if (!matched) return { check, passed: false, detail: `the file does not match /${check.matches}/` };
    }
    return { check, passed: true, detail: "the file is as required" };
  }
  throw new Error(`check ${check.type} is judged by the run's numbers, not in the sandbox`);
}
