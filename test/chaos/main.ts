/**
 * `npm run chaos -- [--short] [options]`: runs agent sessions through the HTTP API on one local
 * stack while workers, `keel runner` processes and the API server are SIGKILLed, a second worker comes and goes, the
 * Temporal dev server restarts on its database and the S3 server goes down, some sessions on budgets with parallel
 * sub-agents; then checks every session. Writes
 * bench/results/chaos.{md,json}. Exit code: 0 all checks passed, 1 a check failed (violation,
 * stuck run, repeated model call) or a fault could not be applied, 2 usage error or the stack
 * did not start. Options: test/chaos/options.ts (`--help`).
 */
import { join } from "node:path";
import { ChaosApiClient } from "./api-client";
import { playFaults } from "./faults";
import { sampleLoad } from "./load";
import { type ChaosOptions, ChaosUsageError, parseChaosOptions } from "./options";
import { type ChaosPlan, makeChaosPlan, type SessionPlan } from "./plan";
import { failureLines, renderMarkdown, summarize, writeChaosResults } from "./report";
import { type ChaosRunners, startChaosRunners } from "./runners";
import { registerSessionScenario } from "./scenario";
import { driveSession, type SessionRecord } from "./sessions";
import { startChaosStack } from "./stack";
import { verifySessions } from "./verify";

/** How long one API call keeps retrying (same Idempotency-Key) through outages. */
const API_CALL_BOUND_MS = 90_000;
/** How often the machine's load average is sampled for the report. */
const LOAD_SAMPLE_MS = 10_000;

const say = (line: string) => process.stdout.write(`chaos: ${line}\n`);

function describePlan(options: ChaosOptions, plan: ChaosPlan): string {
  const kinds = new Map<string, number>();
  for (const fault of plan.faults) kinds.set(fault.kind, (kinds.get(fault.kind) ?? 0) + 1);
  const aborted = plan.sessions
    .filter((session) => session.abortAfterMs !== undefined)
    .map((session) => `${session.index}${session.abortAfterKill ? " (after a kill)" : ""}`);
  return `${options.form} form, seed ${options.seed}: ${plan.sessions.length} sessions (${options.concurrency} at once; aborted: ${aborted.join(", ") || "none"}), faults ${[...kinds].map(([kind, count]) => `${kind}×${count}`).join(", ")} over ${Math.round((plan.faults.at(-1)?.atMs ?? 0) / 1000)} s`;
}

/** Drives the sessions `concurrency` at a time; a session waiting to start after `open()` is false is skipped. */
async function drivePool(
  sessions: readonly SessionPlan[],
  concurrency: number,
  drive: (session: SessionPlan) => Promise<SessionRecord>,
  open: () => boolean,
): Promise<SessionRecord[]> {
  const records: SessionRecord[] = [];
  let next = 0;
  const lane = async () => {
    while (next < sessions.length && open()) {
      const session = sessions[next++] as SessionPlan;
      const record = await drive(session);
      records.push(record);
      const outcome = record.runs.map((run) => (run.kind === "ended" ? run.status : run.kind)).join(" → ");
      say(`session ${session.sessionId}: ${outcome}`);
    }
  };
  await Promise.all([...Array(concurrency)].map(lane));
  return records.sort((a, b) => a.plan.index - b.plan.index);
}

async function main(): Promise<number> {
  let options: ChaosOptions;
  try {
    options = parseChaosOptions(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof ChaosUsageError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 2;
  }
  const plan = makeChaosPlan(options);
  say(describePlan(options, plan));
  const started = performance.now();
  const load = sampleLoad(LOAD_SAMPLE_MS);
  const stack = await startChaosStack();
  say(`stack up in ${Math.round((performance.now() - started) / 1000)} s (data: ${stack.dir})`);
  let failed = true;
  let runners: ChaosRunners | undefined;
  try {
    for (const session of plan.sessions) registerSessionScenario(stack.llm, session);
    await stack.startWorker("primary");
    const api = new ChaosApiClient(stack.apiUrl, stack.apiKey, API_CALL_BOUND_MS);
    runners = plan.sessions.some((session) => session.onRunner)
      ? await startChaosRunners(api, stack.apiUrl, stack.dir)
      : undefined;
    const faults = playFaults(stack, plan.faults, runners);
    const capAt = Date.now() + options.durationCapMs;
    const records = await drivePool(
      plan.sessions,
      options.concurrency,
      (session) => driveSession(api, session, options.runBoundMs, faults),
      () => Date.now() < capAt,
    );
    await faults.stop();
    say("runs over; checking every session");
    const verdict = await verifySessions(
      stack,
      api,
      records,
      join(stack.dir, "exports"),
      runners ? Object.values(runners.workspaceRoots) : [],
    ).finally(() => faults.close());
    const summary = summarize({
      options,
      plan,
      records,
      faults: faults.tally,
      verdict,
      modelCalls: stack.llm.journal().length,
      load: load.stop(),
      wallMs: performance.now() - started,
    });
    const path = writeChaosResults(summary);
    process.stdout.write(`\n${renderMarkdown(summary)}\n`);
    say(`results written to ${path}`);
    failed = summary.failures.length > 0;
    if (failed) {
      for (const line of failureLines(summary)) say(line);
      say(`FAIL (${summary.failures.join(", ")}); stack data kept in ${stack.dir}`);
    }
    return failed ? 1 : 0;
  } finally {
    await runners?.close();
    await stack.close({ keepData: failed || process.env.KEEL_KEEP_CHAOS_DATA === "1" });
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `chaos: the suite itself failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(2);
  },
);
