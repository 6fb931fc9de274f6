/**
 * The checks a chaos run ends with, as pure functions over what was stored, exported, journaled
 * and sent: the stored session is intact (no seq gap, parent chain, every tool call answered
 * once, no adjacent user messages — the checks of test/integration/run/crash.test.ts), each
 * message the suite sent is stored exactly once, no model call was made for an answer that was
 * already stored, every run ended within its bound, no unsafe call ran twice, and every change a
 * completed call reported is in the session's final stored workspace.
 */
import { posix } from "node:path";
import { TASK_TOOL_NAME } from "../../src/core/agents";
import { convertToLlm, type Message, type ToolResultMessage } from "../../src/core/messages";
import { checkInvariants } from "../../src/core/sanitize";
import type { SessionEntry } from "../../src/core/session-types";
import type { JournalEntry } from "../../src/providers/local-server/types";
import { callTagOf } from "./scenario";
import type { RunOutcome, SentMessage, SessionRecord } from "./sessions";

export interface Violation {
  sessionId: string;
  kind: string;
  detail: string;
}

/** The stored entries of one session as `SessionStore.readEntries` returns them. */
export interface StoredSession {
  entries: ReadonlyArray<{ seq: number; entry: SessionEntry }>;
  gaps: readonly number[];
  nextSeq: number;
}

function messagesOf(entries: readonly SessionEntry[]): Message[] {
  return convertToLlm(entries.flatMap((entry) => (entry.type === "message" ? [entry.message] : [])));
}

/** Seqs 0..n-1 each present once, unique ids, parents stored before their children, invariants. */
export function checkStoredSession(sessionId: string, stored: StoredSession): Violation[] {
  const violations: Violation[] = [];
  const add = (kind: string, detail: string) => violations.push({ sessionId, kind, detail });
  const seqs = stored.entries.map(({ seq }) => seq);
  const highest = Math.max(-1, ...seqs, ...stored.gaps);
  const present = new Set(seqs);
  const missing = [...Array(highest + 1).keys()].filter((seq) => !present.has(seq));
  if (missing.length > 0)
    add("seq_gap", `entry seqs missing: ${missing.join(", ")} (highest stored ${highest})`);
  if (present.size !== seqs.length) add("duplicate_seq", `seqs stored twice among ${seqs.join(",")}`);

  const seen = new Set<string>();
  for (const { seq, entry } of stored.entries) {
    if (seen.has(entry.id)) add("duplicate_entry_id", `entry id ${entry.id} at seq ${seq} is used twice`);
    if (entry.parentId !== null && !seen.has(entry.parentId)) {
      add(
        "broken_parent_chain",
        `entry ${entry.id} at seq ${seq} has parent ${entry.parentId}, not stored before it`,
      );
    }
    seen.add(entry.id);
  }

  const messages = messagesOf(stored.entries.map(({ entry }) => entry));
  for (const violation of checkInvariants(messages)) {
    const { kind, ...rest } = violation;
    add(kind, JSON.stringify(rest));
  }
  return violations;
}

function textOf(message: Message): string {
  if (message.role !== "user") return "";
  if (typeof message.content === "string") return message.content;
  return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

/**
 * Each message the suite sent is stored as exactly one user message: never twice (a retried
 * delivery under faults, Idempotency-Key or not), never lost once the API confirmed it, never
 * when the API refused it; and every message got a final answer (202 or a clear 4xx refusal).
 * A confirmed message a run ended without reading (an abort before its turn began) is not lost
 * when a run's result hands it back (`handedBack`, the results' `unprocessed` texts), and then it
 * must not be stored as well: a caller who sends it again would have it twice.
 */
export function checkDeliveries(
  sessionId: string,
  entries: readonly SessionEntry[],
  sent: readonly SentMessage[],
  handedBack: readonly string[] = [],
): Violation[] {
  const userTexts = messagesOf(entries)
    .filter((message) => message.role === "user")
    .map(textOf);
  const violations: Violation[] = [];
  for (const message of sent) {
    const stored = userTexts.filter((text) => text.includes(message.text)).length;
    const returned = handedBack.includes(message.text);
    if (returned && stored > 0) {
      violations.push({
        sessionId,
        kind: "handed_back_but_stored",
        detail: `"${message.text}" is stored and also handed back unprocessed by a run`,
      });
    } else if (stored > 1) {
      violations.push({
        sessionId,
        kind: "message_delivered_twice",
        detail: `"${message.text}" is stored ${stored} times (Idempotency-Key ${message.idempotencyKey}, ${message.attempts} attempts)`,
      });
    } else if (stored === 0 && message.confirmed && !returned) {
      violations.push({
        sessionId,
        kind: "message_lost",
        detail: `"${message.text}" was accepted (202) but is not stored`,
      });
    } else if (message.refused && stored > 0) {
      violations.push({
        sessionId,
        kind: "refused_but_stored",
        detail: `"${message.text}" was refused (${message.error ?? "4xx"}) but is stored`,
      });
    } else if (!message.confirmed && !message.refused) {
      violations.push({
        sessionId,
        kind: "delivery_not_confirmed",
        detail: `"${message.text}" got no 202 (stored ${stored} times): ${message.error ?? "unknown"}`,
      });
    }
  }
  return violations;
}

/** A model answer found in the stored session: the request digest it carries and when it was stored. */
export interface StoredAnswer {
  sessionId: string;
  seq: number;
  digest: string;
  /** Epoch ms of the S3 object's Last-Modified (whole seconds, rounded down). */
  storedAtMs: number;
}

/** Last-Modified has whole seconds: only a call this long after it certainly came after the write. */
export const STORED_AT_RESOLUTION_MS = 1_000;

export interface RepeatedCall {
  sessionId: string;
  seq: number;
  digest: string;
  /** Seconds between the answer being stored and the repeated call. */
  afterStoredSeconds: number;
  journalSeq: number;
}

/**
 * Model calls made again for an answer that was already stored: same request digest as a stored
 * answer, arriving after that answer's object was written. (A call that was cut off before its
 * answer was stored, and then made again, is not a repeat: nothing was stored yet.)
 */
export function repeatedModelCalls(
  journal: readonly JournalEntry[],
  answers: readonly StoredAnswer[],
): RepeatedCall[] {
  const byDigest = new Map<string, StoredAnswer>();
  for (const answer of answers) byDigest.set(answer.digest, answer);
  const repeats: RepeatedCall[] = [];
  for (const call of journal) {
    const answer = byDigest.get(call.digest);
    if (!answer) continue;
    const arrived = Date.parse(call.time);
    if (arrived >= answer.storedAtMs + STORED_AT_RESOLUTION_MS) {
      repeats.push({
        sessionId: answer.sessionId,
        seq: answer.seq,
        digest: answer.digest,
        afterStoredSeconds: Math.round((arrived - answer.storedAtMs) / 100) / 10,
        journalSeq: call.seq,
      });
    }
  }
  return repeats;
}

/**
 * Runs that did not end well: stuck past the bound (counted from the later of delivery and the
 * last fault), failed (nothing in the scenario makes a run
 * fail: a failure is the faults showing through), a run that never started, an abort the API
 * gave no final answer to, and an aborted session whose follow-up did not complete (the session
 * is not usable). `temporalSays` (the
 * session's executions as Temporal reports them) is added to the detail of a stuck run. A run that
 * continued as new is judged by how its continuation ended.
 */
export function checkRuns(
  record: SessionRecord,
  temporalSays = "",
  /** Temporal's status of an execution (COMPLETED, FAILED, ...), for runs the API did not see end. */
  closedAs: (runId: string) => string | undefined = () => undefined,
): Violation[] {
  const sessionId = record.plan.sessionId;
  const violations: Violation[] = [];
  record.runs.forEach((recorded, index) => {
    const which = `run ${index + 1}`;
    const run = followContinuations(recorded, closedAs);
    if (run.kind === "stuck") {
      violations.push({
        sessionId,
        kind: "stuck_run",
        detail: `${which} not over after ${Math.round(run.ms / 1000)} s, ${Math.round(run.sinceLastFaultMs / 1000)} s after the last fault (API said: ${run.lastStatus})${temporalSays ? `; Temporal: ${temporalSays}` : ""}`,
      });
    } else if (run.kind === "superseded") {
      // Not continued as new: it ended on its own before the later run started.
      const status = closedAs(run.runId);
      if (status !== "COMPLETED")
        violations.push({
          sessionId,
          kind: "run_failed",
          detail: `${which} was followed by run ${run.byRunId} before the API showed its end; Temporal says: ${status ?? "nothing"}`,
        });
    } else if (run.kind === "not_started") {
      violations.push({ sessionId, kind: "run_not_started", detail: `${which}: ${run.error}` });
    } else if (run.status === "failed") {
      violations.push({ sessionId, kind: "run_failed", detail: `${which} failed: ${run.reason}` });
    } else if (run.status === "aborted" && (index > 0 || record.plan.abortAfterMs === undefined)) {
      violations.push({
        sessionId,
        kind: "unexpected_abort",
        detail: `${which} ended aborted: ${run.reason}`,
      });
    }
  });
  if (record.abort && !record.abort.answered) {
    violations.push({ sessionId, kind: "abort_not_answered", detail: record.abort.detail });
  }
  const last = record.runs.at(-1);
  const followUp = last && followContinuations(last, closedAs);
  if (
    record.plan.abortAfterMs !== undefined &&
    !(followUp?.kind === "ended" && followUp.status === "completed")
  ) {
    violations.push({
      sessionId,
      kind: "unusable_after_abort",
      detail: `the follow-up after the abort did not complete (${followUp ? JSON.stringify(followUp) : "not sent"})`,
    });
  }
  return violations;
}

/**
 * The outcome of the run `run` continued into, when Temporal says it continued as new (a run that
 * ends with a message handed over answers with its own id; the message runs in the next
 * execution): the same run, under the next execution's id.
 */
export function followContinuations(
  run: RunOutcome,
  closedAs: (runId: string) => string | undefined,
): RunOutcome {
  let current = run;
  while (current.kind === "superseded" && closedAs(current.runId) === "CONTINUED_AS_NEW")
    current = current.next;
  return current;
}

/** `echo <word> >> log.txt`: how the scenario's unsafe `bash` calls leave a line per run (test/chaos/scenario.ts). */
const LOG_APPEND = /echo (\w+) >> log\.txt/g;

/**
 * How the workspace changes of a session's tool calls were recorded. On workers, by snapshots:
 * the ids of the entries that have one (a call's own, at its result, or its batch's, at a later
 * result of the batch). On runners with `--snapshots`, by the result itself (`"by-result"`): a
 * runner stores the workspace through the API before it posts a call's result, and a store that
 * was refused, failed or lost to another runner's makes the result an error
 * (src/runner/runner.ts).
 */
export type ChangesRecorded = ReadonlySet<string> | "by-result";

/** How a runner's result starts saying that the call's workspace changes were not stored (src/runner/runner.ts). */
export const CHANGES_NOT_KEPT_TEXT = "The files this call changed were not kept";

function toolResultOf(entry: SessionEntry | undefined): ToolResultMessage | undefined {
  return entry?.type === "message" && entry.message.role === "toolResult" ? entry.message : undefined;
}

/** Whether a tool result says its call's changes were not kept (a runner's store did not happen). */
function saysChangesNotKept(result: ToolResultMessage): boolean {
  return result.content.some((block) => block.type === "text" && block.text.includes(CHANGES_NOT_KEPT_TEXT));
}

/**
 * The tool calls whose stored result says they ran (no error, and not that their changes were not
 * kept) and whose changes were recorded (`recorded`).
 */
export function recordedCalls(entries: readonly SessionEntry[], recorded: ChangesRecorded): Set<string> {
  const calls = new Set<string>();
  // Walking back: a result's batch goes on in the results stored after it, each the child of the last.
  const recordedFrom = new Map<string, boolean>();
  for (let index = entries.length - 1; index >= 0; index--) {
    const entry = entries[index] as SessionEntry;
    const result = toolResultOf(entry);
    if (!result) continue;
    const next = entries[index + 1];
    const batchGoesOn = toolResultOf(next) !== undefined && next?.parentId === entry.id;
    const isRecorded =
      recorded === "by-result" ||
      recorded.has(entry.id) ||
      (batchGoesOn && (recordedFrom.get((next as SessionEntry).id) ?? false));
    recordedFrom.set(entry.id, isRecorded);
    if (!result.isError && !saysChangesNotKept(result) && isRecorded) calls.add(result.toolCallId);
  }
  return calls;
}

/**
 * The session's `log.txt` (`log`, as its current copy of the workspace holds it after the run; ""
 * when there is none) is the one its `bash` calls made, each line there:
 * - at most as often as stored calls ask for it: more means an unsafe call was run again. A call
 *   cut off by a kill may have appended its line or not (its result then says its outcome is
 *   unknown);
 * - at least as often as calls whose stored result says they ran (no error) and whose change was
 *   recorded (`recorded`: on workers, a snapshot, the call's own or its batch's; on runners, the
 *   result itself): fewer means a recorded change was lost (a disk's old copy worked on, or an
 *   older snapshot restored). A worker's call whose own snapshot failed (S3 down) and whose
 *   batch's was never taken (its worker killed) is not counted: its change was never recorded
 *   (docs/store.md).
 */
export function checkUnsafeCallLines(
  sessionId: string,
  entries: readonly SessionEntry[],
  log: string,
  recorded: ChangesRecorded,
): Violation[] {
  const succeeded = recordedCalls(entries, recorded);
  const asked = new Map<string, number>();
  const ran = new Map<string, number>();
  for (const entry of entries) {
    if (entry.type !== "message" || entry.message.role !== "assistant") continue;
    for (const block of entry.message.content) {
      if (block.type !== "toolCall" || block.name !== "bash") continue;
      const command = (block.arguments as { command?: unknown }).command;
      if (typeof command !== "string") continue;
      for (const [, word] of command.matchAll(LOG_APPEND)) {
        const line = word as string;
        asked.set(line, (asked.get(line) ?? 0) + 1);
        if (succeeded.has(block.id)) ran.set(line, (ran.get(line) ?? 0) + 1);
      }
    }
  }
  const found = new Map<string, number>();
  for (const line of log.split("\n")) if (line !== "") found.set(line, (found.get(line) ?? 0) + 1);
  const tooMany = [...found].flatMap(([line, count]): Violation[] =>
    count > (asked.get(line) ?? 0)
      ? [
          {
            sessionId,
            kind: "unsafe_call_ran_twice",
            detail: `log.txt has "${line}" ${count} times; stored bash calls append it ${asked.get(line) ?? 0} times`,
          },
        ]
      : [],
  );
  const missing = [...ran].flatMap(([line, count]): Violation[] =>
    (found.get(line) ?? 0) < count
      ? [
          {
            sessionId,
            kind: "stored_change_missing",
            detail: `log.txt has "${line}" ${found.get(line) ?? 0} times; ${count} bash calls that append it have results saying they ran`,
          },
        ]
      : [],
  );
  return [...tooMany, ...missing];
}

/** A path in the workspace as `a/b` (`./a//b` too); undefined for one outside it (absolute, `..`). */
function workspacePath(path: unknown): string | undefined {
  if (typeof path !== "string" || path === "" || posix.isAbsolute(path)) return undefined;
  const normal = posix.normalize(path);
  return normal === "." || normal === ".." || normal.startsWith("../") ? undefined : normal;
}

/** A shell redirection of output to a file (`> f`, `>> f`; not `2>&1`). */
const OUTPUT_REDIRECT = /(?:^|[^0-9&<>])>>?\s*([^\s;&|<>()]+)/g;

/**
 * The workspace paths a tool call may change: `write` and `edit` their `path`, `bash` the files
 * its command redirects output to (the scenario's commands change nothing else). Other tools
 * (read, ls, grep, find, MCP calls, `task`: a sub-agent works in its own session's folder) none.
 */
function pathsChangedBy(name: string, args: Record<string, unknown>): string[] {
  if (name === "write" || name === "edit") {
    const path = workspacePath(args.path);
    return path === undefined ? [] : [path];
  }
  if (name !== "bash" || typeof args.command !== "string") return [];
  return [...args.command.matchAll(OUTPUT_REDIRECT)].flatMap(([, target]) => {
    const path = workspacePath(target);
    return path === undefined ? [] : [path];
  });
}

function occurrences(text: string, part: string): number {
  if (part === "") return 0;
  let count = 0;
  for (let at = text.indexOf(part); at !== -1; at = text.indexOf(part, at + part.length)) count += 1;
  return count;
}

const excerpt = (text: string) => JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);

/**
 * Every edit a completed call reported is in the session's final stored workspace (`readFile`: a
 * file's text there by its workspace path, undefined when it has none; `where` names it for the
 * details): a `write` whose result says it ran left its exact content at its path, an `edit` its
 * `newText` (present, and every remaining `oldText` inside a `newText`, as the edit tool itself
 * decides an edit is applied) — unless a later call of the session (the same batch or a later one;
 * the session's branches share one workspace) may have changed that path (pathsChangedBy: its
 * result, if any, does not matter). Only calls whose result says they ran and whose change was
 * recorded count (`recordedCalls`): an error result, one saying its files were not kept, or a
 * worker's change no snapshot recorded promises nothing. A call that ran twice passes when its
 * content is there (`write` and `edit` are replayed safely). `bash` calls' changes are checked
 * by `checkUnsafeCallLines` (appends to `log.txt`, counted). Also: a result saying its files were
 * not kept must be an error, so the model never takes the edit for kept. `checked`: the edits
 * looked for in the workspace.
 */
export function checkReportedEdits(
  sessionId: string,
  entries: readonly SessionEntry[],
  readFile: (path: string) => string | undefined,
  recorded: ChangesRecorded,
  where: string,
): { violations: Violation[]; checked: number } {
  const violations: Violation[] = [];
  let checked = 0;
  const calls: Array<{ id: string; name: string; args: Record<string, unknown>; batch: number }> = [];
  entries.forEach((entry, batch) => {
    const result = toolResultOf(entry);
    if (result && !result.isError && saysChangesNotKept(result))
      violations.push({
        sessionId,
        kind: "not_kept_result_not_error",
        detail: `the result of ${result.toolName} call ${result.toolCallId} says its files were not kept, yet it is not an error`,
      });
    if (entry.type !== "message" || entry.message.role !== "assistant") return;
    for (const block of entry.message.content)
      if (block.type === "toolCall")
        calls.push({ id: block.id, name: block.name, args: block.arguments, batch });
  });
  const ran = recordedCalls(entries, recorded);
  for (const call of calls) {
    if ((call.name !== "write" && call.name !== "edit") || !ran.has(call.id)) continue;
    const path = workspacePath(call.args.path);
    if (path === undefined) continue;
    const changedLater = calls.some(
      (other) =>
        other.id !== call.id &&
        other.batch >= call.batch &&
        pathsChangedBy(other.name, other.args).includes(path),
    );
    if (changedLater) continue;
    checked += 1;
    const text = readFile(path);
    const missing = (what: string) =>
      violations.push({
        sessionId,
        kind: "reported_edit_missing",
        detail: `${call.name} of ${path} (call ${call.id}) has a result saying it ran and no later call changed ${path}, yet ${where} ${what}`,
      });
    if (text === undefined) {
      missing(`has no ${path}`);
      continue;
    }
    if (call.name === "write") {
      const content = call.args.content;
      if (typeof content === "string" && text !== content)
        missing(`has ${excerpt(text)} there, not the ${excerpt(content)} written`);
      continue;
    }
    const { oldText, newText } = call.args;
    if (typeof oldText !== "string" || typeof newText !== "string") continue;
    const applied =
      occurrences(text, newText) > 0 &&
      occurrences(text, oldText) === occurrences(text, newText) * occurrences(newText, oldText);
    if (!applied)
      missing(`has ${excerpt(text)} there, without the edit ${excerpt(oldText)} → ${excerpt(newText)}`);
  }
  return { violations, checked };
}

/** How many of the session's tool results say their files were not kept (a runner's store did not happen). */
export function changesNotKept(entries: readonly SessionEntry[]): number {
  return entries.filter((entry) => {
    const result = toolResultOf(entry);
    return result !== undefined && saysChangesNotKept(result);
  }).length;
}

/** What one model call of a budgeted tree spends (the scripted usage: test/chaos/plan.ts, BUDGETED_CALL). */
export interface CallSpend {
  tokens: number;
  costUsd: number;
}

/** A budgeted session and the stored sessions of its sub-agents. */
export interface BudgetTree {
  sessionId: string;
  /** The run's budgets (0: none). */
  budget: { maxCostUsd: number; maxTokens: number };
  entries: readonly SessionEntry[];
  /** The sub-agents that have a stored session, by session id. */
  children: ReadonlyMap<string, readonly SessionEntry[]>;
  /** The sub-agent session each `task` call of `entries` starts (core/agents childSessionId). */
  childOf: (callId: string) => string;
}

/** Cost sums of floating-point dollars: a bound is passed only by more than this. */
const COST_SLACK_USD = 1e-9;
/** The least shares a parent with a budget used up gives (src/workflows/run/budget.ts). */
const LEAST_SHARE = { costUsd: 1e-9, tokens: 1 };

interface Spend {
  tokens: number;
  costUsd: number;
  calls: number;
}

function assistantMessages(entries: readonly SessionEntry[]) {
  return entries.flatMap((entry) =>
    entry.type === "message" && entry.message.role === "assistant" ? [entry.message] : [],
  );
}

/** The usage stored with a session's model answers, summed. */
function spendOf(entries: readonly SessionEntry[]): Spend {
  return assistantMessages(entries).reduce(
    (sum, message) => ({
      tokens: sum.tokens + message.usage.totalTokens,
      costUsd: sum.costUsd + message.usage.cost.total,
      calls: sum.calls + 1,
    }),
    { tokens: 0, costUsd: 0, calls: 0 },
  );
}

/**
 * A budgeted session's tree keeps to its budgets as docs/api.md ("Budgets that pause") bounds
 * them: each run checks its budgets after each turn, so it passes its own by at most the model
 * call that crosses it, and the tree — the session and its sub-agents, whose spend its budgets
 * cover — spends at most the budget plus one model call per run in it (`budget_exceeded_by_tree`).
 * Each sub-agent's own spend is at most its share plus one model call (`budget_exceeded_by_child`):
 * its share is what the parent had left when the batch's `task` calls started (the budget, less
 * the parent's stored spend up to the assistant entry with the calls, less what the sub-agents of
 * earlier batches spent) divided among that batch's calls (tokens rounded down; a budget used up
 * leaves the least share). Spend is the usage stored with the answers; every answer (with a call tag) must report
 * the scripted usage of one call (`budget_call_usage_unexpected`), which is what makes the bounds
 * exact.
 */
export function checkBudgetTree(tree: BudgetTree, perCall: CallSpend): Violation[] {
  const violations: Violation[] = [];
  const { maxCostUsd, maxTokens } = tree.budget;
  const over = (spend: Spend, costLimit: number, tokenLimit: number, calls: number) => {
    const parts: string[] = [];
    if (maxCostUsd > 0 && spend.costUsd > costLimit + calls * perCall.costUsd + COST_SLACK_USD)
      parts.push(
        `cost $${spend.costUsd.toFixed(6)} > $${costLimit.toFixed(6)} + ${calls} × $${perCall.costUsd}`,
      );
    if (maxTokens > 0 && spend.tokens > tokenLimit + calls * perCall.tokens)
      parts.push(`${spend.tokens} tokens > ${tokenLimit} + ${calls} × ${perCall.tokens}`);
    return parts;
  };
  const sessions: Array<[string, readonly SessionEntry[]]> = [
    [tree.sessionId, tree.entries],
    ...tree.children,
  ];
  for (const [sessionId, entries] of sessions) {
    for (const message of assistantMessages(entries)) {
      const first = message.content.find((block) => block.type === "text");
      if (first?.type !== "text" || callTagOf(first.text) === undefined) continue;
      const { totalTokens, cost } = message.usage;
      if (totalTokens !== perCall.tokens || Math.abs(cost.total - perCall.costUsd) > COST_SLACK_USD)
        violations.push({
          sessionId,
          kind: "budget_call_usage_unexpected",
          detail: `a model answer reports ${totalTokens} tokens and $${cost.total}, not the scripted ${perCall.tokens} tokens and $${perCall.costUsd}`,
        });
    }
  }

  // Each batch's sub-agents against their shares, the parent's spend counted as the batches come.
  const parentSoFar: Spend = { tokens: 0, costUsd: 0, calls: 0 };
  const earlierChildren: Spend = { tokens: 0, costUsd: 0, calls: 0 };
  for (const entry of tree.entries) {
    if (entry.type !== "message" || entry.message.role !== "assistant") continue;
    const message = entry.message;
    parentSoFar.tokens += message.usage.totalTokens;
    parentSoFar.costUsd += message.usage.cost.total;
    const tasks = message.content.filter(
      (block) => block.type === "toolCall" && block.name === TASK_TOOL_NAME,
    );
    if (tasks.length === 0) continue;
    const share = {
      costUsd: Math.max(
        (maxCostUsd - parentSoFar.costUsd - earlierChildren.costUsd) / tasks.length,
        LEAST_SHARE.costUsd,
      ),
      tokens: Math.max(
        Math.floor((maxTokens - parentSoFar.tokens - earlierChildren.tokens) / tasks.length),
        LEAST_SHARE.tokens,
      ),
    };
    for (const block of tasks) {
      if (block.type !== "toolCall") continue;
      const childId = tree.childOf(block.id);
      const childEntries = tree.children.get(childId);
      if (!childEntries) continue;
      const spend = spendOf(childEntries);
      earlierChildren.tokens += spend.tokens;
      earlierChildren.costUsd += spend.costUsd;
      const parts = over(spend, share.costUsd, share.tokens, 1);
      if (parts.length > 0)
        violations.push({
          sessionId: childId,
          kind: "budget_exceeded_by_child",
          detail: `sub-agent of ${tree.sessionId} (call ${block.id}, one of ${tasks.length}) spent more than its share plus one model call: ${parts.join("; ")}`,
        });
    }
  }

  const total = sessions.map(([, entries]) => spendOf(entries));
  const treeSpend = total.reduce((sum, spend) => ({
    tokens: sum.tokens + spend.tokens,
    costUsd: sum.costUsd + spend.costUsd,
    calls: sum.calls + spend.calls,
  }));
  const parts = over(treeSpend, maxCostUsd, maxTokens, sessions.length);
  if (parts.length > 0)
    violations.push({
      sessionId: tree.sessionId,
      kind: "budget_exceeded_by_tree",
      detail: `the session and its ${tree.children.size} sub-agents (${treeSpend.calls} model calls) spent more than the budget plus one model call per run: ${parts.join("; ")}`,
    });
  return violations;
}
