/** The escape suite's results: attempts by class and every attempt's outcome, to bench/results/. */
import { machineInfo, machineLine, table, writeResults } from "../../bench/support/report";
import { ATTEMPT_CLASSES, type AttemptClass } from "./attempt";
import type { Form } from "./context";

export interface AttemptRecord {
  id: string;
  class: AttemptClass;
  description: string;
  /** `error`: the suite could not carry the attempt out (it proves nothing; the run fails). */
  outcome: "refused" | "escaped" | "error";
  stoppedBy: string;
  seconds: number;
}

export interface EscapeSummary {
  form: Form;
  machine: ReturnType<typeof machineInfo>;
  wallSeconds: number;
  byClass: Array<{ class: AttemptClass; total: number; refused: number; escaped: number; errors: number }>;
  attempts: AttemptRecord[];
}

export function summarize(form: Form, attempts: AttemptRecord[], wallMs: number): EscapeSummary {
  return {
    form,
    machine: machineInfo(),
    wallSeconds: Math.round(wallMs / 1000),
    byClass: ATTEMPT_CLASSES.map((name) => {
      const of = attempts.filter((attempt) => attempt.class === name);
      const count = (outcome: AttemptRecord["outcome"]) =>
        of.filter((attempt) => attempt.outcome === outcome).length;
      return {
        class: name,
        total: of.length,
        refused: count("refused"),
        escaped: count("escaped"),
        errors: count("error"),
      };
    }),
    attempts,
  };
}

export function renderMarkdown(summary: EscapeSummary): string {
  const totals = summary.byClass.reduce(
    (sum, row) => ({
      total: sum.total + row.total,
      refused: sum.refused + row.refused,
      escaped: sum.escaped + row.escaped,
      errors: sum.errors + row.errors,
    }),
    { total: 0, refused: 0, escaped: 0, errors: 0 },
  );
  return [
    `# Escape suite (${summary.form} form)`,
    "",
    `${machineLine(summary.machine)} Wall time ${summary.wallSeconds} s. Written by \`npm run escapes${summary.form === "short" ? " -- --short" : ""}\` (docs/escapes.md).`,
    "",
    table(
      ["class", "attempts", "refused", "escaped", "errors"],
      [
        ...summary.byClass.map((row) => [row.class, row.total, row.refused, row.escaped, row.errors]),
        ["**all**", totals.total, totals.refused, totals.escaped, totals.errors],
      ],
      ["---", "---:", "---:", "---:", "---:"],
    ),
    "",
    table(
      [
        "class",
        "attempt",
        "what it tries",
        "outcome",
        "what stopped it (refused) / what moved (escaped)",
        "s",
      ],
      summary.attempts.map((attempt) => [
        attempt.class,
        `\`${attempt.id}\``,
        attempt.description.replaceAll("|", "\\|"),
        attempt.outcome === "escaped" ? "**escaped**" : attempt.outcome,
        attempt.stoppedBy,
        attempt.seconds,
      ]),
      ["---", "---", "---", "---", "---", "---:"],
    ),
  ].join("\n");
}

export function writeEscapeResults(summary: EscapeSummary): string {
  return writeResults(
    summary.form === "short" ? "escapes-short" : "escapes",
    renderMarkdown(summary),
    summary,
  );
}
