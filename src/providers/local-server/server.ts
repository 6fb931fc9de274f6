/**
 * A loopback HTTP server that speaks OpenAI Chat Completions, OpenAI Responses and Anthropic
 * Messages (streaming and not), playing scripted scenarios with optional injected faults.
 *
 * Routes:
 * - `POST /v1/chat/completions`, `POST /v1/responses`, `POST /v1/messages`
 * - `GET /_journal`, `DELETE /_journal` — what was asked, when, by which model
 * - `POST /_scenarios` (`{name: {turns: [...], after?}}`), `POST /_faults` (`{faults: [...]}`),
 *   `DELETE /_faults`, `GET /_health`
 */

import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { seededRandom } from "../../core/ids";
import { DEFAULT_CUT_AFTER_EVENTS, FAULT_KINDS, FaultPlan, faultErrorReply } from "./faults";
import { normalizeRequest } from "./normalize";
import { buildReply } from "./reply";
import { builtinScenarios, resolveTurn, scenarioNameOf, turnIndexOf } from "./scenarios";
import type { Fault, JournalEntry, NormalizedRequest, RawResponse, Scenario, WireApi } from "./types";
import { type ErrorReply, encodeEvents, encodeJson, errorReply, formatSse } from "./wire";

const MAX_BODY_BYTES = 32 * 1024 * 1024;
const DIGEST_CHARS = 16;
const MS_PER_SECOND = 1000;

const ROUTES: Record<string, WireApi> = {
  "/v1/chat/completions": "openai-completions",
  "/v1/responses": "openai-responses",
  "/v1/messages": "anthropic-messages",
};

export interface LocalLlmServerOptions {
  /** Default 0: an ephemeral port. */
  port?: number;
  /** Default 127.0.0.1 (loopback only). */
  host?: string;
  /** Added to the built-in `default` and `demo` scenarios. */
  scenarios?: Record<string, Scenario>;
  faults?: Fault[];
  /** Delay before every response starts. */
  latencyMs?: number;
  /** Streaming pace for every response (default: as fast as possible). */
  tokensPerSecond?: number;
  /** Seed for rate-based faults. */
  seed?: number;
  /** Keep each request body in the journal (for assertions on what was sent). */
  journalBodies?: boolean;
}

const TurnSchema = z.object({
  thinking: z.string().optional(),
  text: z.string().optional(),
  toolCalls: z
    .array(
      z.object({
        name: z.string().min(1),
        arguments: z.record(z.string(), z.unknown()),
        id: z.string().min(1).optional(),
      }),
    )
    .optional(),
  usage: z
    .object({
      input: z.number().int().nonnegative(),
      output: z.number().int().nonnegative(),
      cacheRead: z.number().int().nonnegative(),
      cacheWrite: z.number().int().nonnegative(),
    })
    .partial()
    .optional(),
  stopReason: z.enum(["stop", "length", "refusal"]).optional(),
  raw: z
    .object({
      status: z.number().int().min(100).max(599).optional(),
      headers: z.record(z.string(), z.string()).optional(),
      body: z.string(),
    })
    .optional(),
});

const ScenariosBodySchema = z.record(
  z.string().regex(/^[A-Za-z0-9_.-]+$/),
  z.object({ turns: z.array(TurnSchema), after: TurnSchema.optional() }),
);

const FaultSchema = z.object({
  kind: z.enum(FAULT_KINDS),
  match: z
    .object({ path: z.string(), model: z.string(), scenario: z.string(), turn: z.number().int() })
    .partial()
    .optional(),
  times: z.number().int().positive().optional(),
  rate: z.number().min(0).max(1).optional(),
  retryAfterSeconds: z.number().nonnegative().optional(),
  cutAfterEvents: z.number().int().nonnegative().optional(),
  latencyMs: z.number().nonnegative().optional(),
  tokensPerSecond: z.number().positive().optional(),
});

const FaultsBodySchema = z.object({ faults: z.array(FaultSchema) });

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on("data", (part: Buffer) => {
      size += part.length;
      if (size > MAX_BODY_BYTES) {
        reject(new HttpError(413, "request body too large"));
        req.destroy();
      } else parts.push(part);
    });
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

function parseJsonBody(text: string): unknown {
  try {
    return text ? JSON.parse(text) : {};
  } catch {
    throw new HttpError(400, "body is not valid JSON");
  }
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** Sends a recorded response byte for byte. */
function sendRaw(res: ServerResponse, raw: RawResponse): void {
  const sse = /^(event|data):/.test(raw.body.trimStart());
  res.writeHead(raw.status ?? 200, {
    "content-type": sse ? "text/event-stream" : "application/json",
    ...raw.headers,
  });
  res.end(raw.body);
}

function lowerCaseHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === "string") headers[name.toLowerCase()] = value;
  }
  return headers;
}

function digestOf(request: NormalizedRequest): string {
  const canonical = JSON.stringify([request.system, request.messages, request.tools]);
  return createHash("sha256").update(canonical).digest("hex").slice(0, DIGEST_CHARS);
}

export class LocalLlmServer {
  private readonly server: Server;
  private readonly scenarios = builtinScenarios();
  private readonly faults: FaultPlan;
  private readonly entries: JournalEntry[] = [];
  private seq = 0;
  private address?: AddressInfo;

  constructor(private readonly options: LocalLlmServerOptions = {}) {
    for (const [name, scenario] of Object.entries(options.scenarios ?? {}))
      this.scenarios.set(name, scenario);
    this.faults = new FaultPlan(seededRandom(options.seed ?? 1));
    this.faults.add(options.faults ?? []);
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        const status = error instanceof HttpError ? error.status : 500;
        const message = error instanceof Error ? error.message : String(error);
        if (!res.headersSent) sendJson(res, status, { error: { message, type: "local_server_error" } });
        else res.destroy();
      });
    });
  }

  /** Starts listening; resolves with the base URL (`http://127.0.0.1:PORT`). */
  async start(): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(this.options.port ?? 0, this.options.host ?? "127.0.0.1", () => resolve());
    });
    this.address = this.server.address() as AddressInfo;
    return this.url;
  }

  get url(): string {
    if (!this.address) throw new Error("LocalLlmServer is not started");
    return `http://${this.address.address}:${this.address.port}`;
  }

  /** Base URL for the `openai` SDK (it appends `/chat/completions` or `/responses`). */
  get openaiBaseURL(): string {
    return `${this.url}/v1`;
  }

  /** Base URL for `@anthropic-ai/sdk` (it appends `/v1/messages`). */
  get anthropicBaseURL(): string {
    return this.url;
  }

  /** Stops listening and drops open connections (hung responses included). */
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  journal(): JournalEntry[] {
    return this.entries.map((entry) => ({ ...entry }));
  }

  clearJournal(): void {
    this.entries.length = 0;
  }

  addScenario(name: string, scenario: Scenario): void {
    this.scenarios.set(name, scenario);
  }

  addFaults(faults: Fault[]): void {
    this.faults.add(faults);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    const api = ROUTES[path];
    if (api && req.method === "POST") return this.complete(api, path, req, res);
    if (path === "/_journal" && req.method === "GET") return sendJson(res, 200, { entries: this.journal() });
    if (path === "/_journal" && req.method === "DELETE") {
      this.clearJournal();
      return sendJson(res, 200, { cleared: true });
    }
    if (path === "/_scenarios" && req.method === "POST") {
      const parsed = ScenariosBodySchema.safeParse(parseJsonBody(await readBody(req)));
      if (!parsed.success) throw new HttpError(400, parsed.error.message);
      for (const [name, scenario] of Object.entries(parsed.data)) this.addScenario(name, scenario);
      return sendJson(res, 200, { scenarios: [...this.scenarios.keys()] });
    }
    if (path === "/_faults" && req.method === "POST") {
      const parsed = FaultsBodySchema.safeParse(parseJsonBody(await readBody(req)));
      if (!parsed.success) throw new HttpError(400, parsed.error.message);
      this.addFaults(parsed.data.faults);
      return sendJson(res, 200, { faults: this.faults.list() });
    }
    if (path === "/_faults" && req.method === "DELETE") {
      this.clearFaults();
      return sendJson(res, 200, { faults: [] });
    }
    if (path === "/_health" && req.method === "GET") return sendJson(res, 200, { ok: true });
    throw new HttpError(404, `no route for ${req.method} ${path}`);
  }

  private async complete(
    api: WireApi,
    path: string,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const body = parseJsonBody(await readBody(req));
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw new HttpError(400, "body must be a JSON object");
    }
    const request = normalizeRequest(api, body as Record<string, unknown>, lowerCaseHeaders(req));
    const scenarioName = scenarioNameOf(request);
    const turn = turnIndexOf(request);
    const entry: JournalEntry = {
      seq: ++this.seq,
      time: new Date().toISOString(),
      path,
      api,
      model: request.model,
      stream: request.stream,
      scenario: scenarioName,
      turn,
      digest: digestOf(request),
      status: 200,
      outcome: "pending",
      ...(this.options.journalBodies ? { body } : {}),
    };
    this.entries.push(entry);
    let closedByClient = false;
    res.on("close", () => {
      if (!res.writableFinished && entry.outcome === "pending") {
        closedByClient = true;
        entry.outcome = "client_closed";
      }
    });

    const fault = this.faults.pick({ path, request, scenario: scenarioName, turn });
    if (fault) entry.fault = fault.kind;
    const latencyMs = fault?.kind === "slow" ? (fault.latencyMs ?? 0) : (this.options.latencyMs ?? 0);
    const tokensPerSecond = fault?.kind === "slow" ? fault.tokensPerSecond : this.options.tokensPerSecond;
    if (latencyMs > 0) await sleep(latencyMs);

    const sendError = (reply: ErrorReply) => {
      entry.status = reply.status;
      entry.outcome = "error";
      sendJson(res, reply.status, reply.body, reply.headers);
    };
    const failure = fault && faultErrorReply(api, fault);
    if (failure) return sendError(failure);
    if (fault?.kind === "hang") return; // never answer; the client times out or aborts

    const scenario = this.scenarios.get(scenarioName);
    if (!scenario) {
      return sendError(errorReply(api, 400, "invalid_request_error", `unknown scenario "${scenarioName}"`));
    }
    const scripted = resolveTurn(scenario, { request, turn, scenario: scenarioName });
    if (scripted.raw) {
      sendRaw(res, scripted.raw);
      entry.status = scripted.raw.status ?? 200;
      entry.outcome = "completed";
      return;
    }
    const reply = buildReply(request, scripted, scenarioName, turn);

    if (!request.stream) {
      if (fault?.kind === "cut_stream") {
        entry.outcome = "cut";
        res.destroy();
        return;
      }
      sendJson(res, 200, encodeJson(api, reply));
      entry.outcome = "completed";
      return;
    }

    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    const cutAfter =
      fault?.kind === "cut_stream" ? (fault.cutAfterEvents ?? DEFAULT_CUT_AFTER_EVENTS) : Infinity;
    const delayPerDelta = tokensPerSecond ? MS_PER_SECOND / tokensPerSecond : 0;
    const events = encodeEvents(api, reply);
    for (const [index, event] of events.entries()) {
      if (closedByClient) return;
      if (index >= cutAfter) {
        entry.outcome = "cut";
        res.destroy();
        return;
      }
      if (event.isDelta && delayPerDelta > 0) await sleep(delayPerDelta);
      res.write(formatSse(event));
      if (event.isDelta) {
        entry.deltaSentAt ??= [];
        entry.deltaSentAt.push(Date.now());
      }
    }
    res.end();
    entry.outcome = "completed";
  }
}

/** Creates and starts a server; see {@link LocalLlmServerOptions}. */
export async function startLocalLlmServer(options: LocalLlmServerOptions = {}): Promise<LocalLlmServer> {
  const server = new LocalLlmServer(options);
  await server.start();
  return server;
}
