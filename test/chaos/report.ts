/** The chaos run's figures: counted from what happened, written to bench/results/ (chaos.md, or chaos-short.md for the CI form). */
import { machineInfo, machineLine, table, writeResults } from "../../bench/support/report";
import { executionsLine } from "./executions";
import type { FaultTally } from "./faults";
import type { LoadFigures } from "./load";
import type { ChaosOptions } from "./options";
import type { ChaosPlan } from "./plan";
import type { RunOutcome, SessionRecord } from "./sessions";
import type { SessionRow, Verdict } from "./verify";

export interface ChaosSummary {
  options: ChaosOptions;
  machine: ReturnType<typeof machineInfo>;
  /** The 1-minute load average during the run (other work on the machine shows here). */
  load: LoadFigures;
  wallSeconds: number;
  faults: Omit<FaultTally, "log">;
  faultLog: string[];
  planned: {
    runs: number;
    aborts: number;
    kills: number;
    runnerSessions: number;
    runnerKills: number;
    apiRestarts?: number;
    budgetedSessions?: number;
  };
  /** Sessions not driven because the duration cap was reached first. */
  sessionsSkipped: number;
  runs: {
    completed: number;
    aborted: number;
    failed: number;
    stuck: number;
    notStarted: number;
    /** Over before the API showed their end (a later run of the session came first). */
    superseded: number;
  };
  aborts: { requested: number; landed: number; usableAfterAbort: number };
  modelCalls: number;
  verdict: Verdict;
  /** Why the exit code is not 0 (empty when the run passed). */
  failures: string[];
}

export function summarize(input: {
  options: ChaosOptions;
  plan: ChaosPlan;
  records: readonly SessionRecord[];
  faults: FaultTally;
  verdict: Verdict;
  modelCalls: number;
  load: LoadFigures;
  wallMs: number;
}): ChaosSummary {
  const { records, faults, verdict } = input;
  const runs = { completed: 0, aborted: 0, failed: 0, stuck: 0, notStarted: 0, superseded: 0 };
  // A run followed into a later one counts once as followed and the later one by how it ended.
  const followed = records.flatMap((record) => record.runs);
  for (let run = followed.pop(); run; run = followed.pop()) {
    if (run.kind === "stuck") runs.stuck += 1;
    else if (run.kind === "not_started") runs.notStarted += 1;
    else if (run.kind === "superseded") {
      runs.superseded += 1;
      followed.push(run.next);
    } else runs[run.status] += 1;
  }
  const abortedPlans = records.filter((record) => record.plan.abortAfterMs !== undefined);
  const { log, ...tally } = faults;
  const failures: string[] = [];
  if (verdict.violations.length > 0) failures.push(`${verdict.violations.length} violations`);
  if (runs.stuck > 0) failures.push(`${runs.stuck} stuck runs`);
  if (verdict.repeatedCalls.length > 0) failures.push(`${verdict.repeatedCalls.length} repeated model calls`);
  if (faults.apiExits.length > 0) failures.push(`the API server crashed ${faults.apiExits.length} times`);
  if (faults.errors.length > 0)
    failures.push(`${faults.errors.length} faults could not be applied (the run is not valid)`);
  return {
    options: input.options,
    machine: machineInfo(),
    load: input.load,
    wallSeconds: Math.round(input.wallMs / 1000),
    faults: tally,
    faultLog: log,
    planned: {
      runs: input.plan.sessions.length,
      aborts: input.plan.sessions.filter((session) => session.abortAfterMs !== undefined).length,
      kills: input.plan.faults.filter((fault) => fault.kind === "kill").length,
      runnerSessions: input.plan.sessions.filter((session) => session.onRunner).length,
      runnerKills: input.plan.faults.filter((fault) => fault.kind === "runner_kill").length,
      apiRestarts: input.plan.faults.filter((fault) => fault.kind === "api_restart").length,
      budgetedSessions: input.plan.sessions.filter((session) => session.budget).length,
    },
    sessionsSkipped: input.plan.sessions.length - records.length,
    runs,
    aborts: {
      requested: abortedPlans.filter((record) => record.abort?.requested).length,
      landed: abortedPlans.filter(
        (record) => record.runs[0]?.kind === "ended" && record.runs[0].status === "aborted",
      ).length,
      usableAfterAbort: verdict.usableAfterAbort,
    },
    modelCalls: input.modelCalls,
    verdict,
    failures,
  };
}

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

function planCell(row: SessionRow): string {
  const plan = row.record.plan;
  const abort =
    plan.abortAfterMs === undefined
      ? ""
      : `; abort at ${(plan.abortAfterMs / 1000).toFixed(1)} s${plan.abortAfterKill ? " then after the next kill" : ""} (${row.record.abort?.detail ?? "not sent"})`;
  const budget = plan.budget
    ? `; budget ${[
        plan.budget.maxCostUsd > 0 ? `$${plan.budget.maxCostUsd}` : "",
        plan.budget.maxTokens > 0 ? `${plan.budget.maxTokens} tokens` : "",
      ]
        .filter(Boolean)
        .join(" and ")} (${plan.budget.calls} calls), ${plan.budget.parallelTasks} parallel sub-agents`
    : "";
  return `${plan.onRunner ? "on runners, " : ""}${plan.toolTurns} tool turns, model ${plan.modelLatencyMs} ms${abort}${budget}`;
}

function runsCell(row: SessionRow): string {
  return row.record.runs.map(runCell).join(" → ");
}

function runCell(run: RunOutcome): string {
  if (run.kind === "ended") return `${run.status} in ${Math.round(run.ms / 1000)} s`;
  if (run.kind === "superseded")
    return `over within ${Math.round(run.ms / 1000)} s, followed by ${run.byRunId} before the API showed its end, which then ${runCell(run.next)}`;
  if (run.kind === "stuck")
    return `stuck ${Math.round(run.ms / 1000)} s, ${Math.round(run.sinceLastFaultMs / 1000)} s after the last fault (API said: ${run.lastStatus})`;
  return `not started (${run.error})`;
}

/** Lines printed at most by failureLines: a CI log shows a failed step's tail. */
const MAX_FAILURE_LINES = 12;

/**
 * What made the run fail, one line each (violations, stuck runs, repeated model calls, faults
 * that could not be applied, API crashes), printed just before the verdict so a log's tail has
 * them; the whole is in the results file.
 */
export function failureLines(summary: ChaosSummary): string[] {
  const lines = [
    ...summary.verdict.violations.map((v) => `violation in ${v.sessionId}: ${v.kind}: ${v.detail}`),
    ...summary.verdict.sessions.flatMap((row) =>
      row.record.runs.some((run) => run.kind === "stuck") ? [`${row.sessionId}: ${runsCell(row)}`] : [],
    ),
    ...summary.verdict.repeatedCalls.map(
      (call) =>
        `repeated model call in ${call.sessionId} for seq ${call.seq}, ${call.afterStoredSeconds} s after its answer was stored`,
    ),
    ...summary.faults.errors.map((error) => `fault not applied: ${error}`),
    ...summary.faults.apiExits.map((lastWords) => `API server crashed: ${lastWords}`),
  ]
    .map((line) => line.replaceAll("\n", " "))
    .map((line) => (line.length > 400 ? `${line.slice(0, 399)}…` : line));
  return lines.length > MAX_FAILURE_LINES
    ? [...lines.slice(0, MAX_FAILURE_LINES), `… and ${lines.length - MAX_FAILURE_LINES} more (results file)`]
    : lines;
}

function sessionTable(summary: ChaosSummary): string {
  return table(
    ["session", "plan", "runs (as the API reported them)", "Temporal executions", "entries", "violations"],
    summary.verdict.sessions.map((row) => [
      row.sessionId,
      cell(planCell(row)),
      cell(runsCell(row)),
      cell(executionsLine(row.executions)),
      row.entries,
      row.violations,
    ]),
    [":---", ":---", ":---", ":---", "---:", "---:"],
  );
}

function countsByKind(summary: ChaosSummary): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const violation of summary.verdict.violations)
    counts.set(violation.kind, (counts.get(violation.kind) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1]);
}

/** Budgeted sessions whose run ended paused at its budget (its end reason says the budget was reached). */
function endedAtBudget(summary: ChaosSummary): number {
  return summary.verdict.sessions.filter(
    (row) =>
      row.record.plan.budget !== undefined &&
      row.record.runs.some((run) => run.kind === "ended" && /budget reached/.test(run.reason)),
  ).length;
}

/** The command-line flags that give `options` again. */
function reproduceFlags(options: ChaosOptions): string {
  const seconds = (ms: number) => Math.round(ms / 1000);
  return [
    options.form === "short" ? "--short" : "",
    `--seed ${options.seed} --runs ${options.runs} --concurrency ${options.concurrency}`,
    `--kills ${options.kills} --kill-every-seconds ${seconds(options.killEveryMs)} --aborts ${options.aborts}`,
    `--temporal-restarts ${options.temporalRestarts} --s3-outages ${options.s3Outages} --s3-outage-seconds ${seconds(options.s3OutageMs)}`,
    `--runner-sessions ${options.runnerSessions} --runner-kills ${options.runnerKills}`,
    `--api-restarts ${options.apiRestarts} --budgeted-sessions ${options.budgetedSessions}`,
    `--run-bound-seconds ${seconds(options.runBoundMs)} --max-minutes ${Math.round(options.durationCapMs / 60_000)}`,
  ]
    .filter(Boolean)
    .join(" ");
}

/** The load figures, and whether the suite shared the machine (load above its CPU count). */
function loadLine({ load, machine }: ChaosSummary): string {
  const busy =
    load.max > machine.nproc
      ? ` The load exceeded the ${machine.nproc} CPUs: other work shared the machine, so runs were slower than on a quiet one.`
      : "";
  return `Load average (1 min) during the run: mean ${load.mean}, max ${load.max} (${load.samples} samples).${busy}`;
}

export function renderMarkdown(summary: ChaosSummary): string {
  const { options, faults, runs, aborts, verdict } = summary;
  const kills = faults.kills.primary + faults.kills.secondary;
  const lines = [
    "# Chaos run",
    "",
    machineLine(summary.machine),
    loadLine(summary),
    "",
    `Reproduce: \`npm run chaos -- ${reproduceFlags(options)}\``,
    "",
    `**${summary.failures.length === 0 ? "PASS" : `FAIL: ${summary.failures.join(", ")}`}** — wall time ${summary.wallSeconds} s.`,
    "",
    "## Faults",
    "",
    table(
      ["fault", "planned", "done"],
      [
        [
          "worker SIGKILL (primary + second)",
          summary.planned.kills,
          `${kills} (${faults.kills.primary} + ${faults.kills.secondary})`,
        ],
        ["second worker started / stopped", "-", `${faults.secondaryStarts} / ${faults.secondaryStops}`],
        [
          "runner SIGKILL, then a replacement (holding a call + idle)",
          summary.planned.runnerKills,
          `${faults.runnerKills.holding + faults.runnerKills.idle} (${faults.runnerKills.holding} + ${faults.runnerKills.idle})`,
        ],
        [
          "… of them alone / with a primary worker SIGKILL / with an S3 outage",
          "-",
          `${faults.runnerKills.during.alone} / ${faults.runnerKills.during.worker_kill} / ${faults.runnerKills.during.s3_outage}`,
        ],
        [
          "API server SIGKILL, then started on its port (while a runner held a call + not)",
          summary.planned.apiRestarts ?? 0,
          `${faults.apiRestarts.holding + faults.apiRestarts.idle} (${faults.apiRestarts.holding} + ${faults.apiRestarts.idle})`,
        ],
        [
          "Temporal dev server restart (same database, same port)",
          options.temporalRestarts,
          faults.temporalRestarts,
        ],
        [
          `S3 server outage (${options.s3OutageMs / 1000} s, same data folder and ports)`,
          options.s3Outages,
          faults.s3Outages,
        ],
        [
          "aborts at a random moment",
          summary.planned.aborts,
          `${aborts.requested} requested, ${aborts.landed} landed`,
        ],
        ["worker exits the suite did not cause", "-", faults.unplannedWorkerExits],
        ["API server exits (it was started again)", "-", faults.apiExits.length],
        ["faults skipped (runs over first)", "-", faults.skipped],
      ],
      [":---", "---:", "---:"],
    ),
    "",
    "## Runs and sessions",
    "",
    table(
      ["figure", "value"],
      [
        [
          "sessions driven (planned)",
          `${summary.planned.runs - summary.sessionsSkipped} (${summary.planned.runs})`,
        ],
        ["of them with tools on the runner environment (planned)", summary.planned.runnerSessions],
        [
          "runs completed / aborted / failed / stuck / not started / followed before their end was seen",
          `${runs.completed} / ${runs.aborted} / ${runs.failed} / ${runs.stuck} / ${runs.notStarted} / ${runs.superseded}`,
        ],
        [
          "sessions usable after abort (follow-up completed, session intact)",
          `${aborts.usableAfterAbort} of ${summary.planned.aborts}`,
        ],
        [
          "accepted messages a run handed back unread (abort before their turn began)",
          verdict.sessions.reduce(
            (count, row) =>
              count + row.executions.reduce((sum, execution) => sum + execution.handedBack.length, 0),
            0,
          ),
        ],
        ["entries checked", verdict.entriesChecked],
        ["sessions exported / opened by pi", `${verdict.sessionsExported} / ${verdict.sessionsOpenedByPi}`],
        ["of them sub-agent sessions", String(verdict.subAgentSessions)],
        ["workspaces that were on both workers' disks", verdict.workspacesOnTwoDisks],
        [
          "runner sessions whose workspace was on both runners' disks",
          verdict.workspacesOnBothRunnerRoots ?? 0,
        ],
        [
          "tool results saying their files were not kept (a runner's store refused, failed or lost the race)",
          verdict.changesNotKept ?? 0,
        ],
        [
          "edits (write, edit) completed calls reported, looked for in the session's final workspace",
          verdict.reportedEditsChecked ?? 0,
        ],
        [
          "budgeted sessions (parallel sub-agents): tree spend checked / runs ended at their budget / sub-agents checked against their share",
          `${verdict.budgetTreesChecked ?? 0} / ${endedAtBudget(summary)} / ${verdict.budgetChildrenChecked ?? 0}`,
        ],
        ["model calls (local LLM server journal)", summary.modelCalls],
        ["repeated model calls for a stored answer", verdict.repeatedCalls.length],
        ["violations", verdict.violations.length],
      ],
      [":---", "---:"],
    ),
    "",
  ];
  if (verdict.violations.length > 0) {
    lines.push("## Violations", "", table(["kind", "count"], countsByKind(summary), [":---", "---:"]), "");
    lines.push(
      table(
        ["session", "kind", "what is wrong"],
        verdict.violations.map((v) => [v.sessionId, v.kind, cell(v.detail)]),
        [":---", ":---", ":---"],
      ),
      "",
    );
  }
  if (verdict.repeatedCalls.length > 0) {
    lines.push(
      "## Repeated model calls",
      "",
      table(
        ["session", "seq of the stored answer", "request digest", "call after the answer was stored"],
        verdict.repeatedCalls.map((call) => [
          call.sessionId,
          call.seq,
          call.digest,
          `${call.afterStoredSeconds} s`,
        ]),
        [":---", "---:", ":---", "---:"],
      ),
      "",
    );
  }
  lines.push("## Sessions", "", sessionTable(summary), "");
  faults.apiExits.forEach((lastWords, index) => {
    lines.push(`## API server exit ${index + 1}: the last lines of its log`, "", "```", lastWords, "```", "");
  });
  if (faults.errors.length > 0)
    lines.push("## Faults that could not be applied", "", ...faults.errors.map((e) => `- ${e}`), "");
  lines.push("## Fault log", "", "```", ...summary.faultLog, "```", "");
  return lines.join("\n");
}

/**
 * Writes bench/results/chaos.{md,json} (the long form) or chaos-short.{md,json} (the CI form, so a
 * CI run never overwrites the long form's committed figures); returns the markdown's path.
 */
export function writeChaosResults(summary: ChaosSummary): string {
  const name = summary.options.form === "short" ? "chaos-short" : "chaos";
  return writeResults(name, renderMarkdown(summary), summary);
}
