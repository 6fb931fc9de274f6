/**
 * The markdown of bench/results/cluster.md: the ramp, CPU per process kind, S3 requests by kind,
 * Actions, where the ramp stopped and why, the first bottleneck, and the cost of 1,000 turns.
 */
import {
  COMPUTE_PRICE_SOURCE,
  computeCost,
  S3_PRICE_SOURCE,
  s3RequestsCost,
  TEMPORAL_CLOUD_PRICE_SOURCE,
  temporalCloudActionsCost,
} from "../support/prices";
import { fixed, type MachineInfo, machineLine, table } from "../support/report";
import type { FaultRunResult } from "./fault-run";
import { TEMPORAL_HISTORY_SHARDS } from "./layout";
import { RAMP_TOOL_CALLS, type StepResult } from "./load-step";
import type { PartKind } from "./parts";

/** Kinds in the order the tables show them: Keel's own, then the servers it uses. */
const KIND_ORDER: PartKind[] = [
  "api",
  "keel-worker",
  "runner",
  "nginx",
  "temporal-frontend",
  "temporal-history",
  "temporal-matching",
  "temporal-worker",
  "postgres",
  "seaweedfs",
  "llm",
];
const KEEL_KINDS: PartKind[] = ["api", "keel-worker", "nginx"];
const SELF_HOSTED_KINDS: PartKind[] = [
  "temporal-frontend",
  "temporal-history",
  "temporal-matching",
  "temporal-worker",
  "postgres",
  "seaweedfs",
];
const TURNS = 1000;

const sumKinds = (step: StepResult, kinds: PartKind[]) =>
  kinds.reduce((sum, kind) => sum + (step.cpuSecondsPerTurn[kind] ?? 0), 0);
const ms = (value: number) => (Number.isFinite(value) ? fixed(value, 0) : "–");
const s3Total = (step: StepResult) => Object.values(step.s3PerTurn).reduce((sum, count) => sum + count, 0);

/** How a step is named in the tables: by its concurrency (ramp) or its session length (series). */
type StepLabel = (step: StepResult) => string;
const byConcurrency: StepLabel = (step) => `${step.concurrency} at once`;
const byLength: StepLabel = (step) => `${step.turnsPerSession} turns`;

function rampTable(steps: StepResult[], label: StepLabel): string {
  return table(
    [
      "step",
      "s",
      "sessions (failed)",
      "turns/s",
      "model ms / call",
      "Keel added ms / turn p50",
      "p95",
      "Actions / turn (server counter)",
      "Actions / turn (histories)",
      "S3 requests / turn",
      "history KB / turn",
      "CPU s / turn (all)",
      "machine busy",
    ],
    steps.map((step) => [
      `${label(step)}${step.cutShort ? " (cut short)" : ""}`,
      fixed(step.durationMs / 1000, 0),
      `${step.sessions.length} (${step.errors})`,
      fixed(step.turnsPerSecond, 2),
      ms(step.modelMsPerCall),
      ms(step.addedMsPerTurn.p50),
      ms(step.addedMsPerTurn.p95),
      fixed(step.serverActionsPerTurn, 2),
      fixed(step.historyActionsPerTurn, 2),
      fixed(s3Total(step), 2),
      fixed(step.historyBytesPerTurn / 1024, 1),
      fixed(sumKinds(step, KIND_ORDER), 3),
      `${fixed(step.machineBusyShare * 100, 0)} % (others ${fixed(step.othersShare * 100, 0)} %)`,
    ]),
  );
}

function cpuTable(steps: StepResult[], label: StepLabel): string {
  const kinds = KIND_ORDER.filter((kind) => steps.some((step) => step.cpuSecondsPerTurn[kind] !== undefined));
  return table(
    ["process kind", ...steps.map((step) => `${label(step)}: ms / turn (share)`)],
    kinds.map((kind) => [
      kind,
      ...steps.map((step) => {
        const value = step.cpuSecondsPerTurn[kind] ?? 0;
        const all = sumKinds(step, KIND_ORDER);
        return `${fixed(value * 1000, 1)} (${fixed((100 * value) / Math.max(all, 1e-9), 0)} %)`;
      }),
    ]),
    ["---", ...steps.map(() => "---:")],
  );
}

function s3Table(steps: StepResult[], label: StepLabel): string {
  const kinds = [...new Set(steps.flatMap((step) => Object.keys(step.s3PerTurn)))].sort();
  return table(
    ["S3 request", ...steps.map((step) => `${label(step)} / turn`)],
    kinds.map((kind) => [kind, ...steps.map((step) => fixed(step.s3PerTurn[kind] ?? 0, 2))]),
    ["---", ...steps.map(() => "---:")],
  );
}

/** The step's S3 requests per turn by kind and key area, largest first (areas under 0.01 left out). */
function s3AreaTable(step: StepResult): string {
  const rows = Object.entries(step.s3PerTurnByArea ?? {})
    .filter(([, perTurn]) => perTurn >= 0.01)
    .sort((a, b) => b[1] - a[1]);
  return table(
    ["request and key area", "per turn"],
    rows.map(([area, perTurn]) => [area, fixed(perTurn, 2)]),
    ["---", "---:"],
  );
}

function actionsTable(step: StepResult): string {
  const rows = Object.entries(step.historyActionsByCategory).sort((a, b) => b[1] - a[1]);
  const server = Object.entries(step.serverActionsByType)
    .sort((a, b) => b[1] - a[1])
    .map(([type, count]) => `${type} ${fixed(count / Math.max(1, step.completedTurns), 2)}`)
    .join(", ");
  return `${table(
    ["billable Action (from histories)", "per turn"],
    rows.map(([category, perTurn]) => [category, fixed(perTurn, 2)]),
    ["---", "---:"],
  )}

The server's own \`action\` counter per turn by type: ${server || "(none read)"}.`;
}

/** The busiest process kind of a step and its share of the machine's two CPUs. */
function busiest(step: StepResult, nproc: number): string {
  const seconds = step.durationMs / 1000;
  const ranked = KIND_ORDER.map((kind) => ({ kind, cpu: step.cpuSecondsTotal[kind] ?? 0 })).sort(
    (a, b) => b.cpu - a.cpu,
  );
  return ranked
    .slice(0, 4)
    .map(({ kind, cpu }) => `${kind} ${fixed((100 * cpu) / (seconds * nproc), 0)} %`)
    .join(", ");
}

function costTable(steps: StepResult[], label: StepLabel): string {
  return `${table(
    [
      "step",
      "Temporal Cloud Actions USD",
      "S3 requests USD",
      "Keel compute USD (API, workers, proxy)",
      "self-hosted Temporal + PostgreSQL + SeaweedFS compute USD",
      "total with Temporal Cloud + S3",
    ],
    steps.map((step) => {
      const actions = temporalCloudActionsCost(step.historyActionsPerTurn * TURNS);
      const s3 = s3RequestsCost(
        Object.fromEntries(Object.entries(step.s3PerTurn).map(([kind, count]) => [kind, count * TURNS])),
      );
      const keel = computeCost(sumKinds(step, KEEL_KINDS) * TURNS);
      const selfHosted = computeCost(sumKinds(step, SELF_HOSTED_KINDS) * TURNS);
      return [
        label(step),
        fixed(actions, 4),
        fixed(s3, 4),
        fixed(keel, 4),
        fixed(selfHosted, 4),
        fixed(actions + s3 + keel, 4),
      ];
    }),
  )}`;
}

/** What the cost tables count and the prices they use. */
const COST_NOTE = `USD per ${TURNS.toLocaleString("en")} turns. Inputs: billable Actions per turn from the sampled histories (the
categories above), Temporal Cloud's first price tier; S3 requests per turn by kind as counted at the proxy in front of
the S3 gateway; compute = the measured CPU seconds per turn of the process kinds named, priced per vCPU-hour. With
Temporal Cloud and S3 the self-hosted column is not paid (it says what running them yourself costs in CPU). The
model's tokens, S3 storage, memory and the Temporal Cloud plan fee are left out. Prices: ${TEMPORAL_CLOUD_PRICE_SOURCE}.
${S3_PRICE_SOURCE}. ${COMPUTE_PRICE_SOURCE}.`;

function faultSection(run: FaultRunResult | undefined, note: string, sessions: number): string {
  const intro = `${sessions} sessions at once of the ramp's shape (paced model) through the API address, with the chaos suite's
client (every POST retried with its Idempotency-Key through 5xx and refused connections), while one part after
another is SIGKILLed (PostgreSQL: stopped) and started again 8 s later, 15 s apart. Then every session is checked with
the chaos suite's checks (test/chaos/checks.ts): stored entries intact (no seq gap, parent chain, tool calls answered
once, message invariants), the message stored exactly once, the run completed (stuck: not over 180 s after the last
fault). Fault run: ${note}.`;
  if (!run) return intro;
  const faults = table(
    ["part", "fault", "at s", "healthy again after s", "error"],
    run.faults.map((fault) => [
      fault.part,
      fault.how,
      fault.atSecond,
      fixed(fault.backAfterMs / 1000, 1),
      fault.error ?? "",
    ]),
    ["---", "---", "---:", "---:", "---"],
  );
  const kinds = new Map<string, number>();
  for (const violation of run.violations) kinds.set(violation.kind, (kinds.get(violation.kind) ?? 0) + 1);
  const examples = run.violations
    .slice(0, 5)
    .map((violation) => `- ${violation.sessionId} ${violation.kind}: ${violation.detail.slice(0, 300)}`)
    .join("\n");
  return `${intro}

${faults}

**${run.completed} of ${run.sessions} sessions completed in ${fixed(run.durationMs / 1000, 0)} s; ${run.violations.length} violations${
    kinds.size > 0 ? ` (${[...kinds].map(([kind, count]) => `${kind} ×${count}`).join(", ")})` : ""
  }.**${examples ? `\n\n${examples}` : ""}`;
}

export function clusterReport(input: {
  machine: MachineInfo;
  parameters: {
    ramp: number[];
    stepMs: number;
    kneeGrowth: number;
    lengths: number[];
    faultSessions: number;
    llmLatencyMs: number;
    llmTokensPerSecond: number;
    commit: string;
  };
  steps: StepResult[];
  stopReason: string;
  lengthSteps: StepResult[];
  lengthNote: string;
  faultRun: FaultRunResult | undefined;
  faultNote: string;
}): string {
  const { machine, parameters, steps, stopReason, lengthSteps, lengthNote, faultRun, faultNote } = input;
  const last = steps.at(-1);
  const first = steps.at(0);
  return `# Keel on a production-shaped local cluster: a ramp of concurrent sessions

${machineLine(machine)} Commit measured: ${parameters.commit}.

The cluster (\`npm run cluster\`, bench/cluster/): PostgreSQL 15; the Temporal server 1.32.2 built from its Go
module as separate processes (2 history with ${TEMPORAL_HISTORY_SHARDS} shards, 2 matching, frontend, worker) with SQL
visibility and fairness on; SeaweedFS with a master, 3 volume servers (replication 001) and a filer with its S3
gateway; 2 API processes behind nginx; 3 Keel workers on separate workspace roots; 2 runners (idle here). Every
process shares this machine's ${machine.nproc} CPUs with the load generator, the counting S3 proxy and the model.

Load (\`npm run bench:cluster\`, bench/cluster-load.ts): each step keeps N sessions going through the API address
for ${parameters.stepMs / 1000} s: a lane posts a message to a new session, waits for the run's result, starts the next.
Each session is ${RAMP_TOOL_CALLS.length} model turns with ${RAMP_TOOL_CALLS.join(", ")} \`ls\` calls (a turn = one model call and its tool
calls). The model is the local LLM server: first byte after ${parameters.llmLatencyMs} ms, then streaming at ${parameters.llmTokensPerSecond} words/s
(20 words per tool turn, 60 in the answer). Keel's added time per turn = (session wall time − turns × the model's
mean own time per call, from the LLM server's journal) / turns, p50 and p95 over the step's sessions. The step's
CPU is read from /proc for every process tree (PostgreSQL's exited backends included). Ramp asked: ${parameters.ramp.join(", ")};
stop rule: turns/s growing less than ${fixed(parameters.kneeGrowth * 100, 0)} % from one step to the next, or errors in more than 5 % of sessions.

## Ramp

${steps.length > 0 ? rampTable(steps, byConcurrency) : "No step ran."}

**Where the ramp stopped:** ${stopReason}.
${last ? `\n**Busiest processes in the last step** (share of the machine's ${machine.nproc} CPUs): ${busiest(last, machine.nproc)}; the machine was ${fixed(last.machineBusyShare * 100, 0)} % busy.\n` : ""}
## CPU per turn by process kind

${steps.length > 0 ? cpuTable(steps, byConcurrency) : ""}

${
  last
    ? `Resident memory at the end of the last step, MB: ${Object.entries(last.rssMbByPart)
        .map(([part, mb]) => `${part} ${mb}`)
        .join(", ")} (PostgreSQL: 1 GB of shared buffers configured, not read).\n`
    : ""
}
## S3 requests per turn by kind

${steps.length > 0 ? s3Table(steps, byConcurrency) : ""}
${
  first
    ? `
What they are for at ${first.concurrency} sessions at once (key areas of Keel's S3 layout: \`sessions/entries\` one object per
session entry, \`usage\` the tenant's usage ledger, \`idempotency\` the API's Idempotency-Key records, …):

${s3AreaTable(first)}
`
    : ""
}

## Temporal Actions per turn (step of ${last?.concurrency ?? "–"})

${last ? actionsTable(last) : ""}

## How cost grows with session length

Sessions of ${parameters.lengths.join(", ")} turns (one \`ls\` call per turn, then the answer), ${"4"} at once, the model answering at
once and unpaced (this series measures what a turn costs as a session grows, not latency: "added ms" here is all of a
turn's time but the model's). Runs continue as new after 100 turns (the default \`turnsPerExecution\`); history
bytes are those of every execution of the session. Series: ${lengthNote}.

${
  lengthSteps.length > 0
    ? `${rampTable(lengthSteps, byLength)}

${s3Table(lengthSteps, byLength)}

${cpuTable(lengthSteps, byLength)}`
    : ""
}

## Faults of the cluster

${faultSection(faultRun, faultNote, parameters.faultSessions)}

## Cost of 1,000 turns

${steps.length > 0 ? costTable([...steps], byConcurrency) : ""}
${lengthSteps.length > 0 ? `\n${costTable(lengthSteps, byLength)}\n` : ""}
${COST_NOTE}
`;
}
