import { writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { type ApiClient, EXIT, type ExitCode, UsageError } from "../../api-client/client";
import { compareReports, type EvalReport } from "../../evals/report";
import { SuiteFileSchema, suiteFileJsonSchema } from "../../evals/suite-file";
import {
  type Command,
  type CommandContext,
  integerOption,
  listOption,
  parseCommand,
  printJson,
} from "../command";
import { evalReportHtml } from "../eval-report-page";
import { readSuiteFile, uploadedSuite } from "../eval-workspaces";
import { formatUsd, oneLine } from "../render";
import { caseFrom, importSwebench } from "./eval-cases";

const SUBCOMMANDS = `Subcommands:
  run SUITE.json --model M [--model M …] [--repeat N] [--concurrency N] [--max-cost-usd X] [--wait]
      start an eval: every case × model × repeat as a run, judged by the case's checks
  show EVAL [--html FILE]   progress, per-model pass rates (95 % interval), cost, failing cases;
                            --html: the report as one offline page, failing trials linked to their transcripts
  list                      the tenant's evals, newest first
  compare EVAL EVAL         per model, before and after; the cases whose pass rate changed
  budget EVAL [--max-cost-usd X]   raise (or, without X, lift) the budget of a paused eval
  cancel EVAL               no more trials start; the running ones are aborted
  case-from SESSION [--entry E] [--check CMD] [--id ID]
                            a suite case from a stored session: its first request on its files
  import-swebench TASKS.jsonl --repos DIR [--test-cmd CMD] [--timeout S]
                            a suite from SWE-bench-style task instances (local repositories)
  schema                    the suite file's JSON Schema
`;

interface EvalView {
  eval: {
    evalId: string;
    name?: string;
    createdAt: string;
    models: string[];
    cases: number;
    repeat: number;
    trials: number;
  };
  progress: {
    state: string;
    trials: number;
    finished: number;
    passed: number;
    costUsd: number;
    maxCostUsd?: number;
    held?: string;
  };
  report: EvalReport;
}

async function view(client: ApiClient, evalId: string): Promise<EvalView> {
  return (await client.json(
    client.api.v1.evals[":evalId"].$get({ param: { evalId }, query: {} }),
  )) as unknown as EvalView;
}

/** The eval's progress only (the API reads no trial result for it): what `--wait` polls. */
async function progressOf(client: ApiClient, evalId: string): Promise<EvalView["progress"]> {
  const answer = await client.json(
    client.api.v1.evals[":evalId"].$get({ param: { evalId }, query: { report: "false" } }),
  );
  return (answer as unknown as EvalView).progress;
}

const percent = (value: number) => `${(value * 100).toFixed(0)}%`;

/** The eval as text: progress, the per-model table, per case, and the failing trials. */
function formatEval(data: EvalView, viewerBase: string): string {
  const { progress, report } = data;
  const lines = [
    `eval ${data.eval.evalId}${data.eval.name ? ` (${data.eval.name})` : ""}: ${progress.state}, ${progress.finished}/${progress.trials} trials, ${formatUsd(progress.costUsd)}${progress.maxCostUsd !== undefined ? ` of ${formatUsd(progress.maxCostUsd)}` : ""}`,
  ];
  if (progress.held) lines.push(`  waiting: ${progress.held}`);
  if (progress.state === "paused")
    lines.push(
      `  paused at its budget: keel eval budget ${data.eval.evalId} --max-cost-usd X (or without X: no budget)`,
    );
  lines.push(
    "",
    "model                      pass    95% interval   passed  cost        tokens in/out    turns  time",
  );
  for (const model of report.models) {
    lines.push(
      [
        model.model.padEnd(26),
        percent(model.passRate).padStart(4),
        `  ${percent(model.interval[0])}–${percent(model.interval[1])}`.padEnd(15),
        `${model.passed}/${model.finished}`.padStart(7),
        `  ${formatUsd(model.costUsd)}`.padEnd(12),
        `${model.tokens.input}/${model.tokens.output}`.padStart(16),
        model.meanTurns.toFixed(1).padStart(7),
        `${(model.meanDurationMs / 1000).toFixed(1)}s`.padStart(7),
      ].join(""),
    );
  }
  lines.push(
    "",
    `case${" ".repeat(28)}${report.models.map((model) => model.model.slice(0, 14).padStart(16)).join("")}`,
  );
  for (const row of report.cases)
    lines.push(
      `${row.caseId.slice(0, 31).padEnd(32)}${row.results.map((result) => `${result.passed}/${result.finished}`.padStart(16)).join("")}`,
    );
  if (report.failing.length > 0) {
    lines.push("", "failing:");
    for (const failing of report.failing) {
      lines.push(
        `  ${failing.caseId} · ${failing.model} #${failing.repeat + 1}: ${failing.status}${failing.reason ? ` (${oneLine(failing.reason, 80)})` : ""} — ${viewerBase}/view/sessions/${failing.sessionId}`,
      );
      for (const line of failing.failed) lines.push(`      ${oneLine(line, 160)}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

async function run(argv: string[], context: CommandContext): Promise<ExitCode> {
  const parsed = parseCommand(
    argv,
    {
      model: { type: "string", multiple: true },
      repeat: { type: "string" },
      concurrency: { type: "string" },
      "max-cost-usd": { type: "string" },
      wait: { type: "boolean", default: false },
    },
    { min: 1, max: 1, names: "SUITE.json" },
    context,
  );
  const [file] = parsed.positionals as [string];
  const models = listOption(parsed.values.model);
  if (models.length === 0) throw new UsageError("name at least one --model");
  const suite = SuiteFileSchema.safeParse(readSuiteFile(file));
  if (!suite.success)
    throw new UsageError(
      `the suite ${file} is not valid: ${suite.error.issues.map((issue) => `${issue.path.join(".") || "(file)"}: ${issue.message}`).join("; ")}`,
    );
  const { client } = parsed;
  const maxCost = parsed.values["max-cost-usd"];
  const body = {
    suite: await uploadedSuite(client, suite.data, path.dirname(path.resolve(file)), context.err),
    models,
    ...optionalInteger(parsed.values.repeat, "repeat"),
    ...optionalInteger(parsed.values.concurrency, "concurrency"),
    ...(typeof maxCost === "string" ? { maxCostUsd: costOption(maxCost) } : {}),
  };
  const started = await client.json(
    client.api.v1.evals.$post(
      { json: body as never },
      { headers: { "idempotency-key": `eval-${Date.now()}-${process.pid}` } },
    ),
  );
  if (!parsed.values.wait) {
    if (parsed.json) printJson(context, started);
    else
      context.out.write(
        `eval ${started.evalId}: ${started.trials} trials started (keel eval show ${started.evalId})\n`,
      );
    return EXIT.ok;
  }
  context.err(`eval ${started.evalId}: ${started.trials} trials\n`);
  let last = "";
  for (;;) {
    const progress = await progressOf(client, started.evalId);
    const line = `${progress.state}: ${progress.finished}/${progress.trials} finished, ${progress.passed} passed, ${formatUsd(progress.costUsd)}\n`;
    if (line !== last) context.err(line);
    last = line;
    if (progress.state !== "running") {
      const data = await view(client, started.evalId);
      if (parsed.json) printJson(context, data);
      else context.out.write(formatEval(data, parsed.apiUrl));
      return progress.state === "completed" ? EXIT.ok : EXIT.failed;
    }
    await sleep(2_000);
  }
}

function optionalInteger(value: unknown, name: string): Record<string, number> {
  const parsed = integerOption(typeof value === "string" ? value : undefined, `--${name}`, 1);
  return parsed === undefined ? {} : { [name]: parsed };
}

function costOption(value: string): number {
  const cost = Number(value);
  if (!Number.isFinite(cost) || cost < 0)
    throw new UsageError(`--max-cost-usd takes a number of dollars, not ${value}`);
  return cost;
}

async function show(argv: string[], context: CommandContext): Promise<ExitCode> {
  const parsed = parseCommand(argv, { html: { type: "string" } }, { min: 1, max: 1, names: "EVAL" }, context);
  const data = await view(parsed.client, parsed.positionals[0] as string);
  const html = parsed.values.html;
  if (typeof html === "string") {
    writeFileSync(html, evalReportHtml(data, parsed.apiUrl).html);
    context.out.write(`wrote ${html}\n`);
  } else if (parsed.json) printJson(context, data);
  else context.out.write(formatEval(data, parsed.apiUrl));
  return EXIT.ok;
}

async function list(argv: string[], context: CommandContext): Promise<ExitCode> {
  const parsed = parseCommand(argv, {}, { min: 0, max: 0, names: "" }, context);
  const { evals } = await parsed.client.json(parsed.client.api.v1.evals.$get());
  if (parsed.json) printJson(context, { evals });
  else
    for (const entry of evals)
      context.out.write(
        `${entry.evalId}  ${entry.createdAt}  ${entry.trials} trials  ${entry.models.join(", ")}${entry.name ? `  ${entry.name}` : ""}\n`,
      );
  return EXIT.ok;
}

async function compare(argv: string[], context: CommandContext): Promise<ExitCode> {
  const parsed = parseCommand(argv, {}, { min: 2, max: 2, names: "EVAL EVAL" }, context);
  const [before, after] = await Promise.all(parsed.positionals.map((evalId) => view(parsed.client, evalId)));
  const comparison = compareReports((before as EvalView).report, (after as EvalView).report);
  if (parsed.json) {
    printJson(context, comparison);
    return EXIT.ok;
  }
  const lines = [`${comparison.before} → ${comparison.after}`];
  for (const model of comparison.models)
    lines.push(
      `  ${model.model}: ${percent(model.before.passRate)} (${percent(model.before.interval[0])}–${percent(model.before.interval[1])}) → ${percent(model.after.passRate)} (${percent(model.after.interval[0])}–${percent(model.after.interval[1])}), cost ${formatUsd(model.before.costUsd)} → ${formatUsd(model.after.costUsd)}`,
    );
  if (comparison.models.length === 0) lines.push("  no model ran in both");
  for (const change of comparison.changes)
    lines.push(
      `  ${change.caseId} · ${change.model}: ${change.before.passed}/${change.before.finished} → ${change.after.passed}/${change.after.finished}`,
    );
  context.out.write(`${lines.join("\n")}\n`);
  return EXIT.ok;
}

async function control(
  action: "budget" | "cancel",
  argv: string[],
  context: CommandContext,
): Promise<ExitCode> {
  const parsed = parseCommand(
    argv,
    action === "budget" ? { "max-cost-usd": { type: "string" } } : {},
    { min: 1, max: 1, names: "EVAL" },
    context,
  );
  const evalId = parsed.positionals[0] as string;
  const { client } = parsed;
  const maxCost = parsed.values["max-cost-usd"];
  const answer =
    action === "budget"
      ? await client.json(
          client.api.v1.evals[":evalId"].budget.$post({
            param: { evalId },
            json: typeof maxCost === "string" ? { maxCostUsd: costOption(maxCost) } : {},
          }),
        )
      : await client.json(client.api.v1.evals[":evalId"].cancel.$post({ param: { evalId } }));
  if (parsed.json) printJson(context, answer);
  else context.out.write(`eval ${evalId}: ${action === "budget" ? "budget sent" : "cancel sent"}\n`);
  return EXIT.ok;
}

export const evalCommand: Command = {
  usage: "keel eval run|show|list|compare|budget|cancel|case-from|import-swebench|schema …",
  summary: "evaluations: a suite of cases run against models, durably, with pass rates and costs",
  help: SUBCOMMANDS,
  run(argv, context) {
    const [sub, ...rest] = argv;
    switch (sub) {
      case "run":
        return run(rest, context);
      case "show":
        return show(rest, context);
      case "list":
        return list(rest, context);
      case "compare":
        return compare(rest, context);
      case "budget":
      case "cancel":
        return control(sub, rest, context);
      case "case-from":
        return caseFrom(rest, context);
      case "import-swebench":
        return importSwebench(rest, context);
      case "schema":
        printJson(context, suiteFileJsonSchema());
        return Promise.resolve(EXIT.ok);
      default:
        throw new UsageError(sub === undefined ? "name a subcommand" : `unknown subcommand '${sub}'`);
    }
  },
};
