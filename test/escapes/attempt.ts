/**
 * One escape attempt: what it tries, and how it judges the outcome. An attempt is `escaped` when a
 * canary moved (a secret reached the attacker, a host or other tenant's file changed or was read,
 * the worker stopped answering, a syscall a sandbox must deny succeeded), else `refused`, with
 * the one line of the API's answer or the tool's result that stopped it.
 */
import type { ApiAnswer } from "../chaos/api-client";
import type { EscapeContext, Played } from "./context";

export const ATTEMPT_CLASSES = ["API", "Sandbox", "Races", "Spill", "Archive"] as const;
export type AttemptClass = (typeof ATTEMPT_CLASSES)[number];

export interface Verdict {
  outcome: "refused" | "escaped";
  /** Refused: what stopped it (one line). Escaped: what moved, where. */
  stoppedBy: string;
}

export interface Attempt {
  id: string;
  class: AttemptClass;
  description: string;
  /** Part of the short form (`--short`). */
  short: boolean;
  run(ctx: EscapeContext): Promise<Verdict>;
}

const MAX_LINE_CHARS = 160;

/** The first non-blank line of `text`, cut to one table cell. */
export function oneLine(text: string): string {
  const line = text.split("\n").find((candidate) => candidate.trim() !== "") ?? "";
  const flat = line.trim().replaceAll("|", "\\|");
  return flat.length > MAX_LINE_CHARS ? `${flat.slice(0, MAX_LINE_CHARS - 1)}…` : flat;
}

/** The API's reason for an answer (a problem's detail or title). */
export function answerLine(answer: ApiAnswer): string {
  const body = answer.body as { detail?: unknown; title?: unknown } | undefined;
  const reason =
    typeof body?.detail === "string"
      ? body.detail
      : typeof body?.title === "string"
        ? body.title
        : answer.text;
  return oneLine(`${answer.status} ${reason}`);
}

/** What stopped a scripted run: the API's refusal, a run that failed, or the last tool result. */
export function playedLine(played: Played): string {
  if (played.answer.status >= 300) return `API ${answerLine(played.answer)}`;
  const last = played.results.at(-1);
  if (played.run && played.run.status !== "completed" && played.run.reason)
    return oneLine(`run ${played.run.status}: ${played.run.reason}`);
  return last
    ? oneLine(`${last.tool}: ${last.text}`)
    : `run ${played.run?.status ?? "?"} without a tool result`;
}

/** `escaped` with the findings when there are any, else `refused` by `stoppedBy`. */
export function judge(findings: readonly string[], stoppedBy: string): Verdict {
  return findings.length > 0
    ? { outcome: "escaped", stoppedBy: oneLine(findings.join("; ")) }
    : { outcome: "refused", stoppedBy };
}

/**
 * A marker a command prints only when the operation before it succeeded: `shell` is what the
 * command contains (`MA""RK-<tag>`), `text` what its output then holds, so the command's own text
 * (stored with the call) never matches.
 */
export function marker(tag: string): { shell: string; text: string } {
  return { shell: `echo "MA""RK-${tag}"`, text: `MARK-${tag}` };
}
