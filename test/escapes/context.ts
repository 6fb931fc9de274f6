/**
 * What every attempt works with: the stage (test/chaos/stack.ts, with three tenants), the
 * attacker's API client and servers, the canaries, and the few moves attempts share — play a
 * scripted model in a session, wait for its run, read everything the attacker can read of a
 * session and look for canaries in it, check that the worker still answers.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { gunzipSync } from "node:zlib";
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import type { ScriptedToolCall } from "../../src/providers/local-server/types";
import { sessionPrefix } from "../../src/store/session-keys";
import type { ApiAnswer, ChaosApiClient } from "../chaos/api-client";
import type { ChaosStack } from "../chaos/stack";
import type { Attacker } from "./attacker";
import { type Canaries, describeChanges, findTokens, folderState } from "./canaries";

export const ATTACKER_TENANT = "mallory";
export const VICTIM_TENANT = "victim";
/** Runs that only check the worker still answers (so the victim's folder stays as it was). */
export const PROBE_TENANT = "prober";

export type Form = "short" | "long";

/** How a run the attacker started ended, as the API shows it. */
export interface RunEnd {
  status: string;
  /** The run's error message or end reason, when it has one. */
  reason: string;
}

/** A scripted session's run and what its tools answered. */
export interface Played {
  /** The answer to the message that started it (a 4xx is a refusal). */
  answer: ApiAnswer;
  run?: RunEnd;
  /** Tool results in order: tool name, error flag and text. */
  results: Array<{ tool: string; isError: boolean; text: string }>;
}

/** Settings of the message that starts a scripted run (the MessageRequest fields an attack varies). */
export type MessageSettings = Record<string, unknown>;

const TERMINAL = new Set(["completed", "aborted", "failed", "terminated", "timed_out", "canceled"]);
const POLL_MS = 300;

export class EscapeContext {
  private sessionCounter = 0;
  private victimState: Map<string, string> = new Map();

  constructor(
    readonly form: Form,
    readonly stack: ChaosStack,
    /** The attacker's client: tenant A's key. */
    readonly api: ChaosApiClient,
    /** The victim tenant's client (used only to set the victim up and to check it). */
    readonly victimApi: ChaosApiClient,
    readonly probeApi: ChaosApiClient,
    readonly attacker: Attacker,
    readonly canaries: Canaries,
    readonly s3: S3Client,
    /** The victim's session (with a workspace holding the victim canary). */
    readonly victimSession: string,
    /** The operator's admin client (sets the victim's settings up and checks them; never the attacker's). */
    readonly operatorApi?: ChaosApiClient,
  ) {}

  /** The workspace of `sessionId` of `tenant` on the (primary, only) worker's disk. */
  workspaceOf(tenant: string, sessionId: string): string {
    return join(this.stack.workspaceRoots.primary, tenant, sessionId);
  }

  get victimWorkspace(): string {
    return this.workspaceOf(VICTIM_TENANT, this.victimSession);
  }

  /** A fresh session id for the attacker (unique per suite run). */
  newSession(label: string): string {
    this.sessionCounter += 1;
    return `${label}-${this.sessionCounter}-${randomBytes(3).toString("hex")}`.slice(0, 100);
  }

  /** Remembers the state of every other tenant's folder (the victim's, and any tenant's folder the attacker might create). */
  rememberOthers(): void {
    this.victimState = this.othersState();
  }

  /** What changed outside the attacker's and prober's folders under the workspace root since `rememberOthers`. */
  othersChanges(): string | undefined {
    const now = this.othersState();
    const changes = describeChanges(this.victimState, now);
    this.victimState = now;
    return changes;
  }

  private othersState(): Map<string, string> {
    const state = folderState(this.stack.workspaceRoots.primary);
    for (const path of [...state.keys()]) {
      const top = path.split("/")[0] ?? "";
      if (top.startsWith(ATTACKER_TENANT) || top.startsWith(PROBE_TENANT)) state.delete(path);
      // A lock file of the victim's own session comes and goes with its runs (none run during attempts).
      else if (path.endsWith(".lock")) state.delete(path);
    }
    return state;
  }

  /**
   * Plays `batches` (one assistant turn of tool calls each, then a final answer) in `sessionId`
   * as the attacker, and waits up to `boundMs` for the run to end (then aborts it).
   */
  async play(
    sessionId: string,
    batches: readonly ScriptedToolCall[][],
    settings: MessageSettings = {},
    boundMs = 60_000,
    api: ChaosApiClient = this.api,
    /** The scenario's name (a session that already names one in its first message keeps it). */
    scenario = `esc-${sessionId}`,
  ): Promise<Played> {
    this.stack.llm.addScenario(scenario, {
      turns: batches.map((toolCalls, index) => ({ text: `Step ${index + 1}.`, toolCalls })),
      after: { text: "Done." },
    });
    const answer = await api.post(
      `/v1/sessions/${sessionId}/messages`,
      { text: `[scenario:${scenario}] go`, ...settings },
      `esc-${randomBytes(8).toString("hex")}`,
    );
    if (answer.status >= 300) return { answer, results: [] };
    const run = await this.waitRun(sessionId, boundMs, api);
    return { answer, run, results: await this.toolResults(sessionId, api) };
  }

  /** Polls the session until its run is over; aborts it after `boundMs`. */
  async waitRun(sessionId: string, boundMs: number, api: ChaosApiClient = this.api): Promise<RunEnd> {
    const deadline = Date.now() + boundMs;
    for (;;) {
      const view = await api.get(`/v1/sessions/${sessionId}`);
      const run = view.body?.run;
      if (run && TERMINAL.has(run.status) && view.body.status === "idle")
        return { status: run.status, reason: run.error?.message ?? run.endReason ?? "" };
      if (Date.now() > deadline) {
        await api.post(
          `/v1/sessions/${sessionId}/abort`,
          { reason: "escape suite bound" },
          `abort-${sessionId}`,
        );
        return { status: "over-bound", reason: `still ${run?.status ?? view.status} after ${boundMs} ms` };
      }
      await sleep(POLL_MS);
    }
  }

  /**
   * Approves the attacker's own pending tool calls one by one, `spacingMs` apart, until `over`
   * settles; the first of a batch waits a second (bash must be running by then).
   */
  async approveWhile(sessionId: string, over: Promise<unknown>, spacingMs: number): Promise<void> {
    let done = false;
    void over.finally(() => {
      done = true;
    });
    const approved = new Set<string>();
    while (!done) {
      const view = await this.api.get(`/v1/sessions/${sessionId}`);
      const waiting = (
        (view.body?.run?.pendingToolCalls ?? []) as Array<{ toolCallId: string; state: string }>
      ).filter((call) => call.state === "awaiting_approval" && !approved.has(call.toolCallId));
      if (waiting.length > 0) await sleep(1_000);
      for (const call of waiting) {
        approved.add(call.toolCallId);
        await this.api.post(
          `/v1/sessions/${sessionId}/approvals/${call.toolCallId}`,
          { decision: "approve" },
          `approve-${sessionId}-${call.toolCallId}`,
        );
        await sleep(spacingMs);
      }
      await sleep(POLL_MS);
    }
  }

  /** Every stored entry of the attacker's session (all pages), as the API returns them. */
  async entries(sessionId: string, api: ChaosApiClient = this.api): Promise<Array<Record<string, unknown>>> {
    const entries: Array<Record<string, unknown>> = [];
    let after: number | undefined;
    for (;;) {
      const page = await api.get(
        `/v1/sessions/${sessionId}/entries?limit=500${after === undefined ? "" : `&after=${after}`}`,
      );
      if (page.status !== 200) return entries;
      for (const item of page.body.entries as Array<{ entry: Record<string, unknown> }>)
        entries.push(item.entry);
      if (page.body.nextAfter === undefined) return entries;
      after = page.body.nextAfter;
    }
  }

  async toolResults(sessionId: string, api: ChaosApiClient = this.api): Promise<Played["results"]> {
    const results: Played["results"] = [];
    for (const entry of await this.entries(sessionId, api)) {
      const message = entry.message as
        | {
            role?: string;
            toolName?: string;
            isError?: boolean;
            content?: Array<{ type: string; text?: string }>;
          }
        | undefined;
      if (entry.type !== "message" || message?.role !== "toolResult") continue;
      results.push({
        tool: message.toolName ?? "?",
        isError: message.isError === true,
        text: (message.content ?? []).map((block) => block.text ?? "").join("\n"),
      });
    }
    return results;
  }

  /**
   * Every place the attacker can read a session's data — its stored entries, its export (pi
   * file, and the archive with the workspace) and its S3 objects — searched for canaries.
   * Returns what was found where (empty: nothing leaked).
   */
  async leaks(sessionId: string): Promise<string[]> {
    const found: string[] = [];
    found.push(...findTokens(this.canaries, JSON.stringify(await this.entries(sessionId)), "stored entries"));
    // An export that does not answer (a workspace of many files) has nothing to show the attacker.
    const exported = await this.api.get(`/v1/sessions/${sessionId}/export`).catch(() => undefined);
    if (exported?.status === 200) found.push(...findTokens(this.canaries, exported.text, "export"));
    const archive = await this.api
      .get(`/v1/sessions/${sessionId}/export?workspace=true`)
      .catch(() => undefined);
    if (archive?.status === 200)
      found.push(...findTokens(this.canaries, readMaybeGzip(archive.bytes), "export with the workspace"));
    found.push(
      ...(await this.s3Leaks(
        sessionPrefix(this.stack.s3().settings.prefix, { tenantId: ATTACKER_TENANT, sessionId }),
      )),
    );
    return [...new Set(found)];
  }

  /** Canaries in any S3 object under `prefix`. */
  async s3Leaks(prefix: string): Promise<string[]> {
    const found: string[] = [];
    const bucket = this.stack.s3().settings.bucket;
    let token: string | undefined;
    do {
      const page = await this.s3.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const object of page.Contents ?? []) {
        if (!object.Key) continue;
        const body = await this.s3.send(new GetObjectCommand({ Bucket: bucket, Key: object.Key }));
        const bytes = Buffer.from((await body.Body?.transformToByteArray()) ?? []);
        found.push(
          ...findTokens(this.canaries, readMaybeGzip(bytes), `S3 object ${object.Key.slice(prefix.length)}`),
        );
      }
      token = page.NextContinuationToken;
    } while (token);
    return found;
  }

  /** Requests that reached the attacker's servers carrying a secret canary. */
  leakedKeys(): string[] {
    return this.attacker
      .received()
      .flatMap((entry) =>
        findTokens(
          this.canaries,
          `${entry.line}\n${entry.text}`,
          `a request to the attacker (${entry.line.slice(0, 60)})`,
        ),
      );
  }

  /** The victim session as its owner sees it: entry count and leaf (a baseline for `victimSessionChanges`). */
  async victimSessionState(): Promise<string> {
    const view = await this.victimApi.get(`/v1/sessions/${this.victimSession}`);
    return view.status === 200
      ? `${view.body.entryCount} entries, leaf ${view.body.leafId}`
      : `GET ${view.status}`;
  }

  /** Undefined when the worker still runs a tool call within `boundMs`; else why not. */
  async unresponsive(boundMs = 30_000): Promise<string | undefined> {
    const sessionId = this.newSession("probe");
    const started = Date.now();
    const played = await this.play(
      sessionId,
      [[{ name: "bash", arguments: { command: "echo alive" } }]],
      {},
      boundMs,
      this.probeApi,
    );
    const alive = played.results.some((result) => result.text.includes("alive"));
    if (alive && played.run?.status === "completed") return undefined;
    return `a probe run (bash echo) did not complete within ${boundMs} ms: ${played.run?.status ?? played.answer.status} after ${Date.now() - started} ms`;
  }
}

/**
 * Bytes to search, gzip unpacked first (archives, compressed objects); kept as a Buffer because a
 * workspace may hold a file larger than a string can be.
 */
export function readMaybeGzip(bytes: Buffer): Buffer {
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      return gunzipSync(bytes, { maxOutputLength: 3 * 1024 ** 3 });
    } catch {
      return bytes;
    }
  }
  return bytes;
}
