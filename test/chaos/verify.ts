/**
 * The end of a chaos run: every session is read from S3, exported through the API and opened by
 * pi's own package, and the checks of ./checks run over what was found.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HeadObjectCommand } from "@aws-sdk/client-s3";
import { holderEpochPathOf } from "../../src/activities/workspace-holder";
import { childSessionId, TASK_TOOL_NAME } from "../../src/core/agents";
import type { SessionEntry } from "../../src/core/session-types";
import { createS3Client } from "../../src/store/s3-config";
import { SessionNotFoundError } from "../../src/store/session-errors";
import { entryKey } from "../../src/store/session-keys";
import { type ApiAnswer, ApiGaveUpError, type ChaosApiClient } from "./api-client";
import {
  checkDeliveries,
  checkRuns,
  checkStoredSession,
  checkUnsafeCallLines,
  type RepeatedCall,
  repeatedModelCalls,
  type StoredAnswer,
  type Violation,
} from "./checks";
import { describeExecutions, type ExecutionSummary, executionsLine } from "./executions";
import { callTagOf } from "./scenario";
import type { SessionRecord } from "./sessions";
import { CHAOS_TENANT, type ChaosStack } from "./stack";

export interface Verdict {
  violations: Violation[];
  repeatedCalls: RepeatedCall[];
  entriesChecked: number;
  sessionsExported: number;
  sessionsOpenedByPi: number;
  /** Sub-agent sessions (children of task calls) checked, exported and opened with the others. */
  subAgentSessions: number;
  /** Aborted sessions whose follow-up run completed on an intact session. */
  usableAfterAbort: number;
  /** Sessions whose workspace was on both workers' disks (it moved; the stale copy may remain). */
  workspacesOnTwoDisks: number;
  /** Per session, what the API and Temporal said and what is stored. */
  sessions: SessionRow[];
}

export interface SessionRow {
  sessionId: string;
  record: SessionRecord;
  entries: number;
  violations: number;
  /** Temporal's own view of the session's runs. */
  executions: ExecutionSummary[];
}

interface PiOpenResult {
  file: string;
  ok: boolean;
  leafId?: string | null;
  entryCount?: number;
  messageCount?: number;
  error?: string;
}

/** The model answers in `entries` that carry a call tag, with the time their object was stored. */
async function storedAnswers(
  stack: ChaosStack,
  sessionId: string,
  entries: ReadonlyArray<{ seq: number; entry: SessionEntry }>,
): Promise<StoredAnswer[]> {
  const s3 = stack.s3().settings;
  const client = createS3Client(s3);
  try {
    const answers: StoredAnswer[] = [];
    for (const { seq, entry } of entries) {
      if (entry.type !== "message" || entry.message.role !== "assistant") continue;
      const first = entry.message.content.find((block) => block.type === "text");
      const digest = first?.type === "text" ? callTagOf(first.text) : undefined;
      if (!digest) continue;
      const head = await client.send(
        new HeadObjectCommand({
          Bucket: s3.bucket,
          Key: entryKey(s3.prefix, { tenantId: CHAOS_TENANT, sessionId }, seq),
        }),
      );
      if (head.LastModified)
        answers.push({ sessionId, seq, digest, storedAtMs: head.LastModified.getTime() });
    }
    return answers;
  } finally {
    client.destroy();
  }
}

/** The sub-agent sessions of `sessionId`'s task calls. */
function taskChildren(sessionId: string, entries: readonly SessionEntry[]): string[] {
  return entries.flatMap((entry) =>
    entry.type === "message" && entry.message.role === "assistant"
      ? entry.message.content.flatMap((block) =>
          block.type === "toolCall" && block.name === TASK_TOOL_NAME
            ? [childSessionId(sessionId, block.id)]
            : [],
        )
      : [],
  );
}

function openWithPi(files: string[]): PiOpenResult[] {
  if (files.length === 0) return [];
  const output = execFileSync(process.execPath, [join(__dirname, "pi-open.mjs"), ...files], {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  return JSON.parse(output) as PiOpenResult[];
}

/**
 * The folder of `sessionId`'s current workspace copy among the workers' disks: the one whose
 * holder epoch (`{workspace}.holder`) is the stored one; with none stored (the workspace never
 * changed disks), the one disk that has a copy, or the first disk when none has (no tool ran).
 */
async function currentWorkspaceCopy(
  stack: ChaosStack,
  sessionId: string,
): Promise<string | { problem: string }> {
  const copies = Object.values(stack.workspaceRoots).map((root) => join(root, CHAOS_TENANT, sessionId));
  const stored = await stack.snapshots.holders.read({ tenantId: CHAOS_TENANT, sessionId });
  if (stored === undefined) {
    const present = copies.filter((dir) => existsSync(dir));
    if (present.length > 1)
      return { problem: `no holder epoch is stored, yet ${present.length} disks have a copy` };
    return present[0] ?? (copies[0] as string);
  }
  const current = copies.find((dir) => localEpochOf(dir) === stored.epoch);
  return (
    current ?? {
      problem: `no disk's copy has the stored holder epoch ${stored.epoch} (${copies.map((dir) => `${dir}: ${localEpochOf(dir) ?? "none"}`).join(", ")})`,
    }
  );
}

/** On how many workers' disks `sessionId` has a copy, or the epoch of one. */
function onDisks(stack: ChaosStack, sessionId: string): number {
  return Object.values(stack.workspaceRoots).filter((root) => {
    const dir = join(root, CHAOS_TENANT, sessionId);
    return existsSync(dir) || existsSync(holderEpochPathOf({ dir }));
  }).length;
}

function localEpochOf(dir: string): string | undefined {
  try {
    const parsed = JSON.parse(readFileSync(holderEpochPathOf({ dir }), "utf8")) as { epoch?: unknown };
    return typeof parsed.epoch === "string" ? parsed.epoch : undefined;
  } catch {
    return undefined;
  }
}

/** A workspace's `log.txt` ("" when the workspace or the file is not there). */
function workspaceLog(workspace: string): string {
  const file = join(workspace, "log.txt");
  return existsSync(file) ? readFileSync(file, "utf8") : "";
}

/**
 * Checks every session of `records`; `exportDir` receives the exported pi files. The workspaces of
 * sessions on the runner environment are under `runnerWorkspaceRoot`, the others under the stack's.
 */
export async function verifySessions(
  stack: ChaosStack,
  api: ChaosApiClient,
  records: readonly SessionRecord[],
  exportDir: string,
  runnerWorkspaceRoot?: string,
): Promise<Verdict> {
  mkdirSync(exportDir, { recursive: true });
  const violations: Violation[] = [];
  const answers: StoredAnswer[] = [];
  const exported: Array<{ sessionId: string; file: string; entries: SessionEntry[] }> = [];
  const intact = new Set<string>();
  const entryCounts = new Map<string, number>();
  let entriesChecked = 0;
  let workspacesOnTwoDisks = 0;

  const temporal = stack.temporal();
  const executions = await describeExecutions(
    temporal.address,
    temporal.namespace,
    CHAOS_TENANT,
    records.map((record) => record.plan.sessionId),
    stack.workflowBundlePath,
  );
  /** Exports the session through the API for pi to open (a failure is a violation). */
  const exportSession = async (sessionId: string, entries: SessionEntry[]) => {
    const exportFailure = (detail: string) => violations.push({ sessionId, kind: "export_failed", detail });
    let answer: ApiAnswer;
    try {
      answer = await api.get(`/v1/sessions/${sessionId}/export`);
    } catch (error) {
      if (!(error instanceof ApiGaveUpError)) throw error;
      exportFailure(error.message);
      return;
    }
    if (answer.status !== 200) {
      exportFailure(`HTTP ${answer.status}: ${answer.text.slice(0, 300)}`);
      return;
    }
    const file = join(exportDir, `${sessionId}.jsonl`);
    writeFileSync(file, answer.text);
    exported.push({ sessionId, file, entries });
  };
  /** Sub-agents' sessions, found from their parents' task calls. */
  const children: string[] = [];

  for (const record of records) {
    const sessionId = record.plan.sessionId;
    const sessionExecutions = executions.get(sessionId) ?? [];
    const runViolations = checkRuns(
      record,
      executionsLine(sessionExecutions),
      (runId) => sessionExecutions.find((execution) => execution.runId === runId)?.status,
    );
    violations.push(...runViolations);
    for (const execution of sessionExecutions) {
      if (execution.replayError === undefined) continue;
      violations.push({
        sessionId,
        kind: "history_not_replayable",
        detail: `run ${execution.runId} (${execution.status}): ${execution.replayError}`,
      });
    }
    let stored: Awaited<ReturnType<ChaosStack["store"]["readEntries"]>>;
    try {
      stored = await stack.store.readEntries({ tenantId: CHAOS_TENANT, sessionId });
    } catch (error) {
      if (!(error instanceof SessionNotFoundError)) throw error;
      violations.push({ sessionId, kind: "session_missing", detail: "nothing is stored for this session" });
      continue;
    }
    entriesChecked += stored.entries.length;
    entryCounts.set(sessionId, stored.entries.length);
    const entries = stored.entries.map(({ entry }) => entry);
    const sessionViolations = [
      ...checkStoredSession(sessionId, stored),
      ...checkDeliveries(
        sessionId,
        entries,
        record.messages,
        sessionExecutions.flatMap((execution) => execution.handedBack),
      ),
    ];
    const copy =
      record.plan.onRunner && runnerWorkspaceRoot
        ? join(runnerWorkspaceRoot, sessionId)
        : await currentWorkspaceCopy(stack, sessionId);
    if (!record.plan.onRunner && onDisks(stack, sessionId) > 1) workspacesOnTwoDisks += 1;
    if (typeof copy === "string") {
      const snapshotted = await stack.snapshots.snapshottedEntryIds({ tenantId: CHAOS_TENANT, sessionId });
      sessionViolations.push(...checkUnsafeCallLines(sessionId, entries, workspaceLog(copy), snapshotted));
    } else sessionViolations.push({ sessionId, kind: "no_current_workspace_copy", detail: copy.problem });
    violations.push(...sessionViolations);
    if (sessionViolations.length === 0 && runViolations.length === 0) intact.add(sessionId);
    answers.push(...(await storedAnswers(stack, sessionId, stored.entries)));
    children.push(...taskChildren(sessionId, entries));
    await exportSession(sessionId, entries);
  }

  // Each child: its executions replay, its session is intact (a task call an abort cut before its
  // child started has none), its answers count for repeats, and pi opens its export.
  const childExecutions = await describeExecutions(
    temporal.address,
    temporal.namespace,
    CHAOS_TENANT,
    children,
    stack.workflowBundlePath,
  );
  for (const sessionId of children) {
    for (const execution of childExecutions.get(sessionId) ?? []) {
      if (execution.replayError === undefined) continue;
      violations.push({
        sessionId,
        kind: "history_not_replayable",
        detail: `run ${execution.runId} (${execution.status}): ${execution.replayError}`,
      });
    }
    let stored: Awaited<ReturnType<ChaosStack["store"]["readEntries"]>>;
    try {
      stored = await stack.store.readEntries({ tenantId: CHAOS_TENANT, sessionId });
    } catch (error) {
      if (!(error instanceof SessionNotFoundError)) throw error;
      continue;
    }
    entriesChecked += stored.entries.length;
    violations.push(...checkStoredSession(sessionId, stored));
    answers.push(...(await storedAnswers(stack, sessionId, stored.entries)));
    await exportSession(
      sessionId,
      stored.entries.map(({ entry }) => entry),
    );
  }

  let openedByPi = 0;
  const piResults = new Map(
    openWithPi(exported.map(({ file }) => file)).map((result) => [result.file, result]),
  );
  for (const { sessionId, file, entries } of exported) {
    const pi = piResults.get(file);
    if (!pi?.ok) {
      violations.push({
        sessionId,
        kind: "pi_cannot_open",
        detail: pi?.error ?? "no answer from the pi helper",
      });
      continue;
    }
    const leafId = entries.at(-1)?.id ?? null;
    if (
      pi.entryCount !== entries.length ||
      pi.leafId !== leafId ||
      (entries.length > 0 && !pi.messageCount)
    ) {
      violations.push({
        sessionId,
        kind: "pi_disagrees",
        detail: `pi reads ${pi.entryCount} entries, leaf ${pi.leafId}, ${pi.messageCount} context messages; stored: ${entries.length} entries, leaf ${leafId}`,
      });
      continue;
    }
    openedByPi += 1;
  }

  const usableAfterAbort = records.filter(
    (record) =>
      record.plan.abortAfterMs !== undefined &&
      intact.has(record.plan.sessionId) &&
      record.runs[1]?.kind === "ended" &&
      record.runs[1].status === "completed",
  ).length;

  const sessions = records.map((record) => {
    const sessionId = record.plan.sessionId;
    return {
      sessionId,
      record,
      entries: entryCounts.get(sessionId) ?? 0,
      violations: violations.filter((violation) => violation.sessionId === sessionId).length,
      executions: executions.get(sessionId) ?? [],
    };
  });

  return {
    sessions,
    violations,
    repeatedCalls: repeatedModelCalls(stack.llm.journal(), answers),
    entriesChecked,
    sessionsExported: exported.length,
    sessionsOpenedByPi: openedByPi,
    subAgentSessions: children.length,
    usableAfterAbort,
    workspacesOnTwoDisks,
  };
}
