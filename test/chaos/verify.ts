/**
 * The end of a chaos run: every session is read from S3, exported through the API and opened by
 * pi's own package, its final workspace is found (a worker session's: the disk copy whose holder
 * epoch is stored; a runner session's: the archive the API stores for the runner environment),
 * and the checks of ./checks run over what was found.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { HeadObjectCommand } from "@aws-sdk/client-s3";
import { holderEpochPathOf } from "../../src/activities/workspace-holder";
import { childSessionId, TASK_TOOL_NAME } from "../../src/core/agents";
import type { SessionEntry } from "../../src/core/session-types";
import { EnvironmentStore } from "../../src/environments/store";
import { createS3Client } from "../../src/store/s3-config";
import { SessionNotFoundError } from "../../src/store/session-errors";
import { entryKey } from "../../src/store/session-keys";
import { unpackSessionArchive } from "../../src/store/workspace-archive";
import { type ApiAnswer, ApiGaveUpError, type ChaosApiClient } from "./api-client";
import {
  type ChangesRecorded,
  changesNotKept,
  checkBudgetTree,
  checkDeliveries,
  checkReportedEdits,
  checkRuns,
  checkStoredSession,
  checkUnsafeCallLines,
  type RepeatedCall,
  repeatedModelCalls,
  type StoredAnswer,
  type Violation,
} from "./checks";
import { describeExecutions, type ExecutionSummary, executionsLine } from "./executions";
import { BUDGETED_CALL } from "./plan";
import { CHAOS_ENVIRONMENT } from "./runners";
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
  /** Runner sessions whose workspace was on both runner slots' disks (it moved through the API); 0 when absent. */
  workspacesOnBothRunnerRoots?: number;
  /** Tool results saying their files were not kept (a runner's store refused, failed or lost the race); 0 when absent. */
  changesNotKept?: number;
  /** Edits (`write`, `edit`) completed calls reported that were looked for in their session's final workspace. */
  reportedEditsChecked?: number;
  /** Budgeted sessions whose tree's spend was checked, and the sub-agent sessions of theirs checked against their shares. */
  budgetTreesChecked?: number;
  budgetChildrenChecked?: number;
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

/** Whether the session has calls of the tools that change files (`write`, `edit`, `bash`). */
function callsChangeFiles(entries: readonly SessionEntry[]): boolean {
  return entries.some(
    (entry) =>
      entry.type === "message" &&
      entry.message.role === "assistant" &&
      entry.message.content.some(
        (block) => block.type === "toolCall" && ["write", "edit", "bash"].includes(block.name),
      ),
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

/** A file's text in the workspace folder `dir` (undefined when it is not there, or not a file). */
function fileIn(dir: string, path: string): string | undefined {
  const file = join(dir, path);
  try {
    return statSync(file).isFile() ? readFileSync(file, "utf8") : undefined;
  } catch {
    return undefined;
  }
}

/** A session's final workspace, as a folder to read, and what it is (for violations' details). */
interface FinalWorkspace {
  dir: string;
  where: string;
  /** How the changes of its calls were recorded there (checks.ts). */
  recorded: ChangesRecorded;
}

/**
 * Checks every session of `records`; `exportDir` receives the exported pi files. The final
 * workspace of a session on the runner environment is the one the API stores for it (unpacked
 * under `<stack dir>/stored-runner-workspaces/`); `runnerWorkspaceRoots` are the runners' own
 * disks (counted: sessions whose copy was on both).
 */
export async function verifySessions(
  stack: ChaosStack,
  api: ChaosApiClient,
  records: readonly SessionRecord[],
  exportDir: string,
  runnerWorkspaceRoots: readonly string[] = [],
): Promise<Verdict> {
  mkdirSync(exportDir, { recursive: true });
  const violations: Violation[] = [];
  const answers: StoredAnswer[] = [];
  const exported: Array<{ sessionId: string; file: string; entries: SessionEntry[] }> = [];
  const intact = new Set<string>();
  const entryCounts = new Map<string, number>();
  let entriesChecked = 0;
  let workspacesOnTwoDisks = 0;
  let workspacesOnBothRunnerRoots = 0;
  let notKept = 0;
  let reportedEditsChecked = 0;
  const s3 = stack.s3().settings;
  const s3Client = createS3Client(s3);
  const environments = new EnvironmentStore(s3Client, s3.bucket, s3.prefix);
  const storedRunnerWorkspaces = join(stack.dir, "stored-runner-workspaces");
  mkdirSync(storedRunnerWorkspaces, { recursive: true });

  /**
   * The session's final workspace: on runners, the archive the API stores for the environment,
   * unpacked (with none stored, an empty folder: no call's change was kept); on workers, the
   * current disk copy (or why there is none, a violation).
   */
  const finalWorkspace = async (
    sessionId: string,
    onRunner: boolean,
  ): Promise<FinalWorkspace | { problem: string }> => {
    if (onRunner) {
      const dir = join(storedRunnerWorkspaces, sessionId);
      const stored = await environments.getWorkspace(CHAOS_TENANT, CHAOS_ENVIRONMENT, sessionId);
      if (stored === "current")
        throw new Error("a stored workspace read without a held generation answered current");
      if (stored === undefined) {
        mkdirSync(dir);
        return { dir, where: "the API stores no workspace for it, so it", recorded: "by-result" };
      }
      // The archive's workspace/ is unpacked into `dir` itself.
      await unpackSessionArchive(Readable.from([Buffer.from(stored.archive)]), dir);
      return {
        dir,
        where: `the workspace the API stores for it (generation ${stored.generation})`,
        recorded: "by-result",
      };
    }
    const copy = await currentWorkspaceCopy(stack, sessionId);
    if (typeof copy !== "string") return copy;
    return {
      dir: copy,
      where: `its current copy (${copy})`,
      recorded: await stack.snapshots.snapshottedEntryIds({ tenantId: CHAOS_TENANT, sessionId }),
    };
  };

  /**
   * The workspace checks: no unsafe call ran twice, no recorded change of a `bash` call lost, every
   * edit a completed call reported present (checks.ts).
   */
  const checkWorkspace = async (
    sessionId: string,
    onRunner: boolean,
    entries: readonly SessionEntry[],
  ): Promise<Violation[]> => {
    notKept += changesNotKept(entries);
    const workspace = await finalWorkspace(sessionId, onRunner);
    if ("problem" in workspace)
      return [{ sessionId, kind: "no_current_workspace_copy", detail: workspace.problem }];
    const { dir, where, recorded } = workspace;
    const edits = checkReportedEdits(sessionId, entries, (path) => fileIn(dir, path), recorded, where);
    reportedEditsChecked += edits.checked;
    return [
      ...checkUnsafeCallLines(sessionId, entries, fileIn(dir, "log.txt") ?? "", recorded),
      ...edits.violations,
    ];
  };

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
  /** Sub-agents' sessions, found from their parents' task calls (on runners when their parent is). */
  const children: Array<{ sessionId: string; onRunner: boolean }> = [];
  /** Every session's stored entries (the budget checks read a tree's). */
  const storedEntries = new Map<string, SessionEntry[]>();

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
    storedEntries.set(sessionId, entries);
    const sessionViolations = [
      ...checkStoredSession(sessionId, stored),
      ...checkDeliveries(
        sessionId,
        entries,
        record.messages,
        sessionExecutions.flatMap((execution) => execution.handedBack),
      ),
    ];
    const onRunner = record.plan.onRunner === true;
    if (!onRunner && onDisks(stack, sessionId) > 1) workspacesOnTwoDisks += 1;
    if (
      onRunner &&
      runnerWorkspaceRoots.length > 1 &&
      runnerWorkspaceRoots.every((root) => existsSync(join(root, sessionId)))
    )
      workspacesOnBothRunnerRoots += 1;
    sessionViolations.push(...(await checkWorkspace(sessionId, onRunner, entries)));
    violations.push(...sessionViolations);
    if (sessionViolations.length === 0 && runViolations.length === 0) intact.add(sessionId);
    answers.push(...(await storedAnswers(stack, sessionId, stored.entries)));
    children.push(...taskChildren(sessionId, entries).map((child) => ({ sessionId: child, onRunner })));
    await exportSession(sessionId, entries);
  }

  // Each child: its executions replay, its session is intact (a task call an abort cut before its
  // child started has none), its workspace checks pass, its answers count for repeats, and pi
  // opens its export.
  const childExecutions = await describeExecutions(
    temporal.address,
    temporal.namespace,
    CHAOS_TENANT,
    children.map((child) => child.sessionId),
    stack.workflowBundlePath,
  );
  for (const { sessionId, onRunner } of children) {
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
    const entries = stored.entries.map(({ entry }) => entry);
    storedEntries.set(sessionId, entries);
    violations.push(...checkStoredSession(sessionId, stored));
    // A sub-agent's folder starts as a copy of its parent's: one whose calls change no file (the
    // scenario's explore agent only reads) has nothing of its own to keep.
    if (callsChangeFiles(entries)) violations.push(...(await checkWorkspace(sessionId, onRunner, entries)));
    answers.push(...(await storedAnswers(stack, sessionId, stored.entries)));
    await exportSession(sessionId, entries);
  }
  s3Client.destroy();

  // Budgeted sessions: the tree's spend within the budget plus one model call per run, each
  // sub-agent's within its share plus one.
  let budgetTreesChecked = 0;
  let budgetChildrenChecked = 0;
  for (const record of records) {
    const { budget, sessionId } = record.plan;
    const entries = storedEntries.get(sessionId);
    if (!budget || !entries) continue;
    const treeChildren = new Map(
      taskChildren(sessionId, entries).flatMap((child) => {
        const childEntries = storedEntries.get(child);
        return childEntries ? [[child, childEntries] as const] : [];
      }),
    );
    violations.push(
      ...checkBudgetTree(
        {
          sessionId,
          budget,
          entries,
          children: treeChildren,
          childOf: (callId) => childSessionId(sessionId, callId),
        },
        { tokens: BUDGETED_CALL.tokens, costUsd: BUDGETED_CALL.costUsd },
      ),
    );
    budgetTreesChecked += 1;
    budgetChildrenChecked += treeChildren.size;
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
    workspacesOnBothRunnerRoots,
    changesNotKept: notKept,
    reportedEditsChecked,
    budgetTreesChecked,
    budgetChildrenChecked,
  };
}
