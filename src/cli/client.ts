/**
 * The HTTP API as seen by the `keel` command: JSON requests with the bearer key, problem+json
 * answers turned into `ApiError`, and Server-Sent Events read as an async iterator.
 */
import { randomUUID } from "node:crypto";
import type { AgentEvent } from "../core/events";

/** Where the CLI's exit code comes from: see `exitCodeOf`. */
export const EXIT = { ok: 0, failed: 1, usage: 2, refused: 3 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Attempts of a request answered `503 temporal-unavailable` (it carries `Retry-After`). */
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
  ) {
    super(message);
    this.name = "ApiError";
  }
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

export interface ApiClientOptions {
  baseUrl: string;
  apiKey?: string;
}

type Body = { json: unknown } | { text: string; contentType: string } | undefined;

export class ApiClient {
  private readonly baseUrl: string;

  constructor(private readonly options: ApiClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
  }

  /** Sends one request; POSTs carry an Idempotency-Key, so retries never act twice. */
  async request<T>(method: "GET" | "POST", path: string, body?: Body): Promise<T> {
    const response = await this.send(method, path, body, { accept: "application/json" });
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** The raw response text of a GET (exports). */
  async text(path: string): Promise<string> {
    const response = await this.send("GET", path, undefined, { accept: "*/*" });
    return response.text();
  }

  /** Events of the session's latest run after `after`, as a stream that ends with the run. */
  async *events(sessionId: string, after: number, signal?: AbortSignal): AsyncGenerator<AgentEvent> {
    const response = await this.send(
      "GET",
      `/v1/sessions/${encodeURIComponent(sessionId)}/events`,
      undefined,
      {
        accept: "text/event-stream",
        "last-event-id": String(after),
      },
      signal,
    );
    if (!response.body) return;
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      let boundary = buffered.indexOf("\n\n");
      while (boundary >= 0) {
        const frame = buffered.slice(0, boundary);
        buffered = buffered.slice(boundary + 2);
        const event = parseFrame(frame);
        if (event) yield event;
        boundary = buffered.indexOf("\n\n");
      }
    }
  }

  private async send(
    method: string,
    path: string,
    body: Body,
    headers: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<Response> {
    const requestHeaders: Record<string, string> = { ...headers };
    if (this.options.apiKey) requestHeaders.authorization = `Bearer ${this.options.apiKey}`;
    if (method === "POST") requestHeaders["idempotency-key"] = randomUUID();
    let payload: string | undefined;
    if (body && "json" in body) {
      payload = JSON.stringify(body.json);
      requestHeaders["content-type"] = "application/json";
    } else if (body) {
      payload = body.text;
      requestHeaders["content-type"] = body.contentType;
    }
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await fetch(`${this.baseUrl}${path}`, {
          method,
          headers: requestHeaders,
          body: payload,
          signal,
        });
      } catch (error) {
        if (signal?.aborted) throw error;
        const cause = (error as { cause?: { message?: string } }).cause?.message;
        throw new ApiError(
          0,
          "network",
          `cannot reach the API at ${this.baseUrl}: ${cause ?? String(error)}`,
        );
      }
      if (response.ok) return response;
      if (response.status === 503 && attempt < MAX_ATTEMPTS) {
        await response.body?.cancel();
        const retryAfter = Number(response.headers.get("retry-after")) || DEFAULT_RETRY_AFTER_SECONDS;
        await sleep(retryAfter * 1000);
        continue;
      }
      throw await problemOf(response);
    }
  }
}

async function problemOf(response: Response): Promise<ApiError> {
  const text = await response.text();
  let problem: { type?: string; title?: string; detail?: string } | undefined;
  try {
    problem = JSON.parse(text);
  } catch {
    problem = undefined;
  }
  const slug = problem?.type?.split("/").pop() ?? `http-${response.status}`;
  const message = [problem?.title ?? `HTTP ${response.status}`, problem?.detail].filter(Boolean).join(": ");
  return new ApiError(response.status, slug, message, problem ?? text);
}

/** One SSE frame → its event; comments (keep-alives) and non-JSON frames are skipped. */
function parseFrame(frame: string): AgentEvent | undefined {
  const data = frame
    .split("\n")
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice(5).replace(/^ /, ""))
    .join("\n");
  if (!data) return undefined;
  try {
    const parsed = JSON.parse(data) as AgentEvent | { message?: string };
    if ("seq" in parsed && typeof parsed.seq === "number") return parsed;
    throw new ApiError(
      0,
      "stream-error",
      `event stream failed: ${(parsed as { message?: string }).message ?? data}`,
    );
  } catch (error) {
    if (error instanceof ApiError) throw error;
    return undefined;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
