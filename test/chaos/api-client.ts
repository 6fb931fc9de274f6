import { setTimeout as sleep } from "node:timers/promises";
/**
 * The chaos suite's HTTP client of the Keel API, behaving like a careful user: every POST carries
 * an Idempotency-Key and is retried with the same key while the answer is a network error, a 5xx
 * or `409 idempotency-key-in-use`, until a bound; reads are retried the same way.
 */

/** A response the suite acts on (problem bodies included). */
export interface ApiAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies of several routes, read field by field
  body: any;
  text: string;
  /** The body as received (an export archive is binary). */
  bytes: Buffer;
  /** Requests sent for this answer (1 = no retry). */
  attempts: number;
}

/** The request never got a final answer within its bound. */
export class ApiGaveUpError extends Error {
  override name = "ApiGaveUpError";
}

const RETRY_DELAY_MS = 1_000;
/** One request hanging this long counts as a network error. */
const REQUEST_TIMEOUT_MS = 30_000;

function retryable(status: number, body: unknown): boolean {
  if (status >= 500) return true;
  const type = (body as { type?: unknown } | undefined)?.type;
  return status === 409 && type === "https://keel.dev/problems/idempotency-key-in-use";
}

export class ChaosApiClient {
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string,
    /** How long one call keeps retrying before it gives up. */
    private readonly boundMs: number,
  ) {}

  get(path: string): Promise<ApiAnswer> {
    return this.send("GET", path);
  }

  post(path: string, json: unknown, idempotencyKey: string): Promise<ApiAnswer> {
    return this.send("POST", path, JSON.stringify(json), idempotencyKey);
  }

  put(path: string, json: unknown): Promise<ApiAnswer> {
    return this.send("PUT", path, JSON.stringify(json));
  }

  delete(path: string): Promise<ApiAnswer> {
    return this.send("DELETE", path);
  }

  /** POSTs `body` as is, with its own content type (an archive to import). */
  postBytes(path: string, body: Uint8Array, contentType: string, idempotencyKey: string): Promise<ApiAnswer> {
    return this.send("POST", path, body, idempotencyKey, contentType);
  }

  private async send(
    method: string,
    path: string,
    body?: string | Uint8Array,
    idempotencyKey?: string,
    contentType = "application/json",
  ): Promise<ApiAnswer> {
    const deadline = Date.now() + this.boundMs;
    let lastProblem = "";
    for (let attempts = 1; ; attempts++) {
      try {
        const response = await fetch(`${this.baseUrl}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${this.apiKey}`,
            ...(body !== undefined ? { "content-type": contentType } : {}),
            ...(idempotencyKey ? { "idempotency-key": idempotencyKey } : {}),
          },
          body,
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const bytes = Buffer.from(await response.arrayBuffer());
        const text = bytes.toString("utf8");
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        if (!retryable(response.status, parsed))
          return { status: response.status, body: parsed, text, bytes, attempts };
        lastProblem = `${response.status} ${text.slice(0, 300)}`;
      } catch (error) {
        lastProblem = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      }
      if (Date.now() + RETRY_DELAY_MS > deadline) {
        throw new ApiGaveUpError(
          `${method} ${path}: no answer within ${this.boundMs} ms (last: ${lastProblem})`,
        );
      }
      await sleep(RETRY_DELAY_MS);
    }
  }
}
