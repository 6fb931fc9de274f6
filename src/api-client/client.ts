/**
 * The HTTP API as seen by the `keel` command: the typed client `hc<ApiApp>` from `hono/client`
 * (request and response types come from the API's own route declarations), the bearer key and
 * an Idempotency-Key on every POST, problem+json answers turned into `ApiError`, `503
 * temporal-unavailable` retried after its `Retry-After`, and the Server-Sent Events of a run
 * read with `eventsource-parser`.
 */

import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { type ClientResponse, hc } from "hono/client";
import type { SuccessStatusCode } from "hono/utils/http-status";
import type { ApiApp } from "../api/app";
import type { RunWait } from "../contracts/waits";
import type { WebhookEvent } from "../contracts/webhooks";
import type { AgentEvent, LiveEvent } from "../core/events";
import type { WebhookDelivery, WebhookEndpoint } from "../tenants/webhooks";
import type { SecretMetadata, SecretPlacement } from "../vault/types";

/** Where the CLI's exit code comes from: see `exitCodeOf`. */
export const EXIT = { ok: 0, failed: 1, usage: 2, refused: 3 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Attempts of a request answered `503 temporal-unavailable` or `storage-unavailable` (with `Retry-After`). */
const MAX_ATTEMPTS = 4;
const DEFAULT_RETRY_AFTER_SECONDS = 1;

/** A problem+json answer (or a transport failure, `status` 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    /** The problem slug (`run-busy`, `session-not-found`, …), or `network` for transport failures. */
    readonly slug: string,
    message: string,
    readonly body?: unknown,
    /** The request's path (`/v1/sessions/abc/events`), for hints that name what was asked for. */
    readonly path?: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/**
 * What to do about an error, for people (one line, or undefined when the message says it all):
 * a missing key names KEEL_API_KEY (KEEL_ADMIN_KEY on the admin API), an unknown session names
 * its id and `keel sessions`, an API that cannot be reached names the local stack.
 */
export function hintFor(error: ApiError): string | undefined {
  if (error.status === 0) {
    return "Is the API running? `npm run dev` starts the local stack; set KEEL_API_URL or pass --url for another.";
  }
  if (error.status === 401) {
    // The admin API takes the operator's key, which no tenant key opens.
    if (/\/v1\/admin(\/|$)/.test(error.path ?? "")) {
      return "Set KEEL_ADMIN_KEY or pass --key <operator key> (the local stack's operator key is keel-dev-admin-key).";
    }
    return "Set KEEL_API_KEY or pass --key <API key> (the local stack's key is keel-dev-key).";
  }
  if (error.slug === "vault-not-configured") {
    return "The API has no vault: set KEEL_VAULT_KEY_FILE (keel dev sets one) or KEEL_VAULT_KMS_KEY_ID on the API and the workers (docs/deploy.md).";
  }
  if (error.slug === "secret-not-found") return "`keel secret list` lists this API key's tenant's secrets.";
  if (error.slug === "webhook-not-found")
    return "`keel webhook list` lists this API key's tenant's endpoints.";
  if (error.slug === "session-not-found") {
    const id = /^\/v1\/sessions\/([^/?]+)/.exec(error.path ?? "")?.[1];
    const named = id === undefined ? "That session" : `Session ${JSON.stringify(decodeURIComponent(id))}`;
    return `${named} does not exist for this API key; \`keel sessions\` lists yours.`;
  }
  return undefined;
}

/** A command line that cannot be run (exit code 2). */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** 0 ok · 1 failed run or server error · 2 usage error · 3 not found or refused. */
export function exitCodeOf(error: unknown): ExitCode {
  if (error instanceof UsageError) return EXIT.usage;
  if (error instanceof ApiError) {
    if (error.status === 400 || error.status === 413 || error.status === 415) return EXIT.usage;
    if (error.status >= 401 && error.status < 500) return EXIT.refused;
  }
  return EXIT.failed;
}

type FetchInput = Parameters<typeof fetch>[0];

export interface ApiClientOptions {
  baseUrl: string;
  apiKey?: string;
}

/** The typed client of the API: `api.v1.sessions[":sessionId"].$get({param: {sessionId}})`. */
export type Api = ReturnType<typeof hc<ApiApp>>;

/** The body type of the 2xx answers among a route's typed responses. */
export type OkBody<R> =
  R extends ClientResponse<infer T, infer S, infer _F> ? (S extends SuccessStatusCode ? T : never) : never;

export class ApiClient {
  /** Typed requests; pass their promise to `json` or `response` to send them. */
  readonly api: Api;
  private readonly baseUrl: string;

  constructor(private readonly options: ApiClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.api = hc<ApiApp>(this.baseUrl, {
      fetch: (input: FetchInput, init?: RequestInit) => this.send(input, init),
    });
  }

  /** The 2xx JSON body of a typed request; a problem answer throws `ApiError`. */
  async json<R extends ClientResponse<unknown>>(request: Promise<R>): Promise<OkBody<R>> {
    const response = await request;
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as OkBody<R>;
  }

  /** The raw 2xx response of a typed request (exports, event streams). */
  async response(request: Promise<ClientResponse<unknown>>): Promise<Response> {
    return (await request) as unknown as Response;
  }

  /**
   * The session as pi JSONL (`GET /v1/sessions/{id}/export`). @hono/zod-openapi types an
   * `application/x-ndjson` response as no response at all (the media type matches its
   * `application/*json*` pattern but is not JSON), so this route is missing from `ApiApp` and is
   * called by URL.
   */
  async exportJsonl(sessionId: string): Promise<string> {
    const url = `${this.baseUrl}/v1/sessions/${encodeURIComponent(sessionId)}/export`;
    const response = await this.send(url, { headers: { accept: "application/x-ndjson" } });
    return response.text();
  }

  /** The session archive: a `.tar.gz` of the session file and its workspace at the leaf (by URL, as above). */
  async exportArchive(sessionId: string): Promise<Buffer> {
    const url = `${this.baseUrl}/v1/sessions/${encodeURIComponent(sessionId)}/export?workspace=true`;
    const response = await this.send(url, { headers: { accept: "application/gzip" } });
    return Buffer.from(await response.arrayBuffer());
  }

  /** The session viewer as one offline HTML file (by URL, as above). */
  async exportHtml(sessionId: string): Promise<string> {
    const url = `${this.baseUrl}/v1/sessions/${encodeURIComponent(sessionId)}/export?format=html`;
    const response = await this.send(url, { headers: { accept: "text/html" } });
    return response.text();
  }

  /** Events of the session's latest run after `after`, as a stream that ends with the run. */
  /**
   * The latest run's event stream after the SSE id `lastEventId` (a seq, or `seq:offset` for a
   * live event); `deltas: false` asks for numbered events only.
   */
  async *events(
    sessionId: string,
    lastEventId: string,
    options: { deltas?: boolean; signal?: AbortSignal } = {},
  ): AsyncGenerator<StreamedEvent> {
    const response = await this.response(
      this.api.v1.sessions[":sessionId"].events.$get(
        { param: { sessionId }, query: options.deltas === false ? { deltas: "false" } : {} },
        {
          headers: { accept: "text/event-stream", "last-event-id": lastEventId },
          init: { signal: options.signal },
        },
      ),
    );
    if (!response.body) return;
    yield* readEventStream(response.body as unknown as AsyncIterable<Uint8Array>);
  }

  /**
   * Creates or rotates the tenant's secret `name` (`PUT /v1/secrets/{name}`): its metadata and
   * whether it was created. The value goes in the request body only, never in the URL.
   */
  async setSecret(
    name: string,
    body: { value: string; hosts: string[]; in?: SecretPlacement[] },
  ): Promise<{ secret: SecretMetadata; created: boolean }> {
    const response = await this.api.v1.secrets[":name"].$put({ param: { name }, json: body });
    return { secret: (await response.json()) as SecretMetadata, created: response.status === 201 };
  }

  /** The tenant's secrets: bindings and times, never values. */
  async listSecrets(): Promise<SecretMetadata[]> {
    return (await this.json(this.api.v1.secrets.$get())).secrets as SecretMetadata[];
  }

  /** One secret's metadata (ApiError `secret-not-found` when the tenant has none by that name). */
  async getSecret(name: string): Promise<SecretMetadata> {
    return (await this.json(this.api.v1.secrets[":name"].$get({ param: { name } }))) as SecretMetadata;
  }

  /** Deletes the secret (ApiError `secret-not-found` when the tenant has none by that name). */
  async deleteSecret(name: string): Promise<void> {
    await this.api.v1.secrets[":name"].$delete({ param: { name } });
  }

  /** Subscribes `url` to event types (`POST /v1/webhooks`): the endpoint and its secret, answered only now. */
  async addWebhook(body: {
    url: string;
    events: string[];
    description?: string;
  }): Promise<WebhookEndpoint & { secret: string }> {
    return (await this.json(this.api.v1.webhooks.$post({ json: body }))) as WebhookEndpoint & {
      secret: string;
    };
  }

  /** The tenant's webhook endpoints (never their secrets). */
  async listWebhooks(): Promise<WebhookEndpoint[]> {
    return (await this.json(this.api.v1.webhooks.$get())).webhooks as WebhookEndpoint[];
  }

  /** Deletes the endpoint (ApiError `webhook-not-found` when the tenant has none by that id). */
  async deleteWebhook(id: string): Promise<void> {
    await this.api.v1.webhooks[":id"].$delete({ param: { id } });
  }

  /** Sends a `webhook.test` event to the endpoint: the event sent. */
  async testWebhook(id: string): Promise<WebhookEvent> {
    return (
      (await this.json(this.api.v1.webhooks[":id"].test.$post({ param: { id } }))) as { event: WebhookEvent }
    ).event;
  }

  /** A new signing secret (answered only now); the old one signs too for `overlapSeconds`. */
  async rotateWebhook(
    id: string,
    overlapSeconds?: number,
  ): Promise<{ secret: string; endpoint: WebhookEndpoint }> {
    const json = overlapSeconds === undefined ? {} : { overlapSeconds };
    return (await this.json(this.api.v1.webhooks[":id"].rotate.$post({ param: { id }, json }))) as {
      secret: string;
      endpoint: WebhookEndpoint;
    };
  }

  /** The endpoint's latest deliveries, newest first. */
  async webhookDeliveries(id: string): Promise<WebhookDelivery[]> {
    return (await this.json(this.api.v1.webhooks[":id"].deliveries.$get({ param: { id } })))
      .deliveries as WebhookDelivery[];
  }

  /** A request to `path` (below the base URL) outside the typed routes (binary bodies): 2xx, else ApiError. */
  request(path: string, init: RequestInit = {}): Promise<Response> {
    return this.send(`${this.baseUrl}${path}`, init);
  }

  /**
   * `fetch` for `hc`: adds the bearer key and (on POSTs) one Idempotency-Key kept across
   * retries, so a retried request never acts twice; retries `503` after `Retry-After`; turns
   * non-2xx answers into `ApiError` and transport failures into `ApiError("network")`.
   */
  private async send(input: FetchInput, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.options.apiKey) headers.set("authorization", `Bearer ${this.options.apiKey}`);
    if ((init.method ?? "GET").toUpperCase() === "POST" && !headers.has("idempotency-key"))
      headers.set("idempotency-key", randomUUID());
    if (!headers.has("accept")) headers.set("accept", "application/json");
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await fetch(input, { ...init, headers });
      } catch (error) {
        if (init.signal?.aborted) throw error;
        const cause = (error as { cause?: { message?: string } }).cause?.message;
        throw new ApiError(
          0,
          "network",
          `cannot reach the API at ${this.baseUrl}: ${cause ?? String(error)}`,
        );
      }
      if (response.ok) return response;
      if (response.status === 503 && attempt < MAX_ATTEMPTS) {
        const problem = await problemOf(response, new URL(response.url || this.baseUrl).pathname);
        // A run whose worker does not answer is explained at once, not retried in silence; so is
        // a deployment without tenant secrets (no retry changes its settings).
        if (problem.slug === "run-not-answering" || problem.slug === "vault-not-configured") throw problem;
        const retryAfter = Number(response.headers.get("retry-after")) || DEFAULT_RETRY_AFTER_SECONDS;
        await sleep(retryAfter * 1000);
        continue;
      }
      throw await problemOf(response, new URL(response.url || this.baseUrl).pathname);
    }
  }
}

async function problemOf(response: Response, path: string): Promise<ApiError> {
  const text = await response.text();
  let problem: { type?: string; title?: string; detail?: string } | undefined;
  try {
    problem = JSON.parse(text);
  } catch {
    problem = undefined;
  }
  const slug = problem?.type?.split("/").pop() ?? `http-${response.status}`;
  const message = [problem?.title ?? `HTTP ${response.status}`, problem?.detail].filter(Boolean).join(": ");
  return new ApiError(response.status, slug, message, problem ?? text, path);
}

/**
 * The run events in a Server-Sent Events body, as the stream delivers them. Framing follows the
 * SSE specification (`eventsource-parser`): LF, CR and CRLF line ends, multi-line data, comments
 * and `retry:` fields. An `error` event (the server's stream failed) throws `ApiError`; events
 * whose data is neither a numbered run event nor a live event are skipped.
 */
export async function* readEventStream(body: AsyncIterable<Uint8Array>): AsyncGenerator<StreamedEvent> {
  const ready: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => ready.push(message) });
  const decoder = new TextDecoder();
  let endsWithCr = false;
  const feed = (text: string | undefined): EventSourceMessage[] => {
    if (text === undefined) {
      // A lone CR ends a line, but the parser holds a trailing CR back in case an LF follows:
      // at the end of the stream none will, so the frame it ends is complete now.
      if (endsWithCr) parser.feed("\n");
    } else if (text) {
      parser.feed(text);
      endsWithCr = text.endsWith("\r");
    }
    return ready.splice(0);
  };
  const eventsOf = function* (messages: EventSourceMessage[]) {
    for (const message of messages) {
      const event = runEventOf(message);
      if (event) yield event;
    }
  };
  for await (const chunk of body) yield* eventsOf(feed(decoder.decode(chunk, { stream: true })));
  yield* eventsOf(feed(decoder.decode()));
  yield* eventsOf(feed(undefined));
}

/** An event as the stream sent it, with its SSE id (what `Last-Event-ID` resumes after). */
export interface StreamedEvent {
  id?: string;
  event: AgentEvent | LiveEvent | RunWait;
}

/** Unnumbered events: the run's live events, and the API's `waiting` (contracts/waits.ts). */
const LIVE_EVENT_TYPES = new Set<string>(["message_update", "tool_execution_update", "retry", "waiting"]);

function runEventOf(message: EventSourceMessage): StreamedEvent | undefined {
  let data: unknown;
  try {
    data = JSON.parse(message.data);
  } catch {
    data = undefined;
  }
  if (message.event === "error") {
    // The server's message says what failed; only a message-less error needs saying that the stream did.
    const detail = (data as { message?: unknown } | undefined)?.message;
    throw new ApiError(
      0,
      "stream-error",
      typeof detail === "string" ? detail : `event stream failed: ${message.data}`,
    );
  }
  const fields = data as { seq?: unknown; type?: unknown } | undefined;
  const numbered = typeof fields?.seq === "number";
  if (!numbered && !(typeof fields?.type === "string" && LIVE_EVENT_TYPES.has(fields.type))) return undefined;
  const event = data as AgentEvent | LiveEvent | RunWait;
  return message.id !== undefined ? { id: message.id, event } : { event };
}
