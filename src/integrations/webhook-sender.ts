/**
 * One webhook request (docs/integrations.md, "Webhooks"): the event as JSON, signed by the
 * Standard Webhooks library (`standardwebhooks`: headers `webhook-id`, `webhook-timestamp`,
 * `webhook-signature`; during a rotation's overlap one `v1,<sig>` per live secret, space
 * separated), POSTed through the egress policy every URL a caller names goes through
 * (net/guarded-fetch.ts: the addresses connected to are the ones checked, so DNS rebinding gets
 * nowhere). https only unless the operator allowed the host (KEEL_WEBHOOK_HOSTS, which also lets
 * it resolve to loopback, private or link-local addresses). Redirects are not followed; the answer
 * is read up to RESPONSE_EXCERPT_BYTES; the request times out.
 */
import { Webhook } from "standardwebhooks";
import { z } from "zod";
import type { WebhookEvent, WebhookRetry } from "../contracts/webhooks";
import type { SettingsShape } from "../core/env-settings";
import { EGRESS_REFUSED, type HostAllowance, normalizeHost, resolveAllowed } from "../net/egress-policy";
import { guardedFetch } from "../net/guarded-fetch";

export const WEBHOOK_HOSTS_SETTING = "KEEL_WEBHOOK_HOSTS";

/** The webhook variables (the API reads the hosts and the overlap; workers all of them). */
export const WEBHOOK_ENV = {
  [WEBHOOK_HOSTS_SETTING]: z
    .string()
    .optional()
    .describe(
      "Comma-separated hosts webhook endpoints may name although they resolve to loopback, private or link-local addresses, or use http:// (default none).",
    ),
  KEEL_WEBHOOK_RETRY_INITIAL_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(5_000)
    .describe(
      "Webhooks: the first retry interval of a delivery, doubled at each attempt (tests set a few hundred ms).",
    ),
  KEEL_WEBHOOK_RETRY_MAX_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(3_600_000)
    .describe("Webhooks: the longest interval between two attempts of a delivery."),
  KEEL_WEBHOOK_GIVE_UP_HOURS: z.coerce
    .number()
    .positive()
    .default(72)
    .describe(
      "Webhooks: how long a delivery is retried before it is marked failed (at least 24 in production).",
    ),
  KEEL_WEBHOOK_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(15_000)
    .describe("Webhooks: how long one request may take, answer included."),
  KEEL_WEBHOOK_ROTATION_OVERLAP_SECONDS: z.coerce
    .number()
    .int()
    .nonnegative()
    .default(86_400)
    .describe(
      "Webhooks: how long a rotated signing secret keeps signing beside the new one, unless the rotation names its own overlap.",
    ),
} satisfies SettingsShape;

/** The parsed WEBHOOK_ENV values a process runs with. */
export interface WebhookSettings {
  /** Hosts (normalized) that may resolve to internal addresses and use http://. */
  hosts: string[];
  retryInitialMs: number;
  retryMaxMs: number;
  giveUpAfterMs: number;
  timeoutMs: number;
  rotationOverlapMs: number;
}

export function webhookSettingsOf(values: {
  KEEL_WEBHOOK_HOSTS?: string | undefined;
  KEEL_WEBHOOK_RETRY_INITIAL_MS: number;
  KEEL_WEBHOOK_RETRY_MAX_MS: number;
  KEEL_WEBHOOK_GIVE_UP_HOURS: number;
  KEEL_WEBHOOK_TIMEOUT_MS: number;
  KEEL_WEBHOOK_ROTATION_OVERLAP_SECONDS: number;
}): WebhookSettings {
  return {
    hosts: (values.KEEL_WEBHOOK_HOSTS ?? "")
      .split(",")
      .map((host) => normalizeHost(host.trim()))
      .filter(Boolean),
    retryInitialMs: values.KEEL_WEBHOOK_RETRY_INITIAL_MS,
    retryMaxMs: values.KEEL_WEBHOOK_RETRY_MAX_MS,
    giveUpAfterMs: values.KEEL_WEBHOOK_GIVE_UP_HOURS * 3_600_000,
    timeoutMs: values.KEEL_WEBHOOK_TIMEOUT_MS,
    rotationOverlapMs: values.KEEL_WEBHOOK_ROTATION_OVERLAP_SECONDS * 1000,
  };
}

/** The retry settings a delivery workflow started by this process gets. */
export function webhookRetryOf(settings: WebhookSettings): WebhookRetry {
  return {
    initialIntervalMs: settings.retryInitialMs,
    maximumIntervalMs: settings.retryMaxMs,
    giveUpAfterMs: settings.giveUpAfterMs,
    attemptTimeoutMs: settings.timeoutMs + ATTEMPT_OVERHEAD_MS,
  };
}

/**
 * The request timeout of an attempt: this worker's own, but never more than the attempt's
 * start-to-close timeout (set by the process that started the delivery workflow) less the
 * overhead, so Temporal never retries an attempt whose request may still be in flight.
 */
export function attemptRequestTimeoutMs(ownTimeoutMs: number, retry: WebhookRetry): number {
  const attemptTimeoutMs = retry.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
  return Math.max(1_000, Math.min(ownTimeoutMs, attemptTimeoutMs - ATTEMPT_OVERHEAD_MS));
}

/** Settings of a process whose environment sets none of WEBHOOK_ENV. */
export const DEFAULT_WEBHOOK_SETTINGS: WebhookSettings = webhookSettingsOf({
  KEEL_WEBHOOK_RETRY_INITIAL_MS: 5_000,
  KEEL_WEBHOOK_RETRY_MAX_MS: 3_600_000,
  KEEL_WEBHOOK_GIVE_UP_HOURS: 72,
  KEEL_WEBHOOK_TIMEOUT_MS: 15_000,
  KEEL_WEBHOOK_ROTATION_OVERLAP_SECONDS: 86_400,
});

/** What an attempt may take besides its request: reading the endpoint, writing the record. */
const ATTEMPT_OVERHEAD_MS = 5_000;
/** An attempt's start-to-close timeout when its input has none (older inputs; workflows/webhook-delivery.ts). */
const DEFAULT_ATTEMPT_TIMEOUT_MS = 120_000;
/** Bytes of an answer's body kept as its excerpt (the rest is not read). */
const RESPONSE_EXCERPT_BYTES = 1024;
/** Longest URL an endpoint may have. */
export const MAX_WEBHOOK_URL_CHARS = 2048;

const allowanceOf =
  (hosts: readonly string[]): HostAllowance =>
  (host) =>
    hosts.includes(normalizeHost(host));

/** Why `text` cannot be an endpoint's URL before any lookup, or undefined. */
function urlRefusal(text: string, hosts: readonly string[]): string | undefined {
  if (text.length > MAX_WEBHOOK_URL_CHARS) return `at most ${MAX_WEBHOOK_URL_CHARS} characters`;
  if (!URL.canParse(text)) return "not a URL";
  const url = new URL(text);
  if (url.username || url.password) return "no user info in the URL";
  if (url.protocol === "https:") return undefined;
  if (url.protocol === "http:" && allowanceOf(hosts)(url.hostname)) return undefined;
  return `only https:// URLs (http:// only for hosts the operator lists in ${WEBHOOK_HOSTS_SETTING})`;
}

/**
 * Why an endpoint's URL is refused, or undefined: its form, then its host's addresses under the
 * egress policy (loopback, private, link-local and metadata addresses refused unless the operator
 * listed the host). A name that does not resolve is refused too.
 */
export async function webhookUrlRefusal(
  text: string,
  hosts: readonly string[],
  logDetail: (detail: string) => void = () => {},
): Promise<string | undefined> {
  const refusal = urlRefusal(text, hosts);
  if (refusal) return refusal;
  // A host the operator listed is vouched for (it may be reachable from the workers only).
  if (allowanceOf(hosts)(new URL(text).hostname)) return undefined;
  try {
    await resolveAllowed(new URL(text).hostname, allowanceOf(hosts));
    return undefined;
  } catch (error) {
    // One answer for every host not reachable in public: the address a name resolves to (or that
    // it does not resolve) would let a tenant map internal DNS. The operator's log has the detail.
    const code = (error as { code?: unknown }).code;
    logDetail(
      code === EGRESS_REFUSED
        ? (error as Error).message
        : `the host does not resolve (${String(code ?? error)})`,
    );
    return HOST_NOT_PUBLIC;
  }
}

/** The one refusal answered for an endpoint whose host does not resolve to public addresses. */
export const HOST_NOT_PUBLIC = "the host does not resolve to an address that is public";

/** The `webhook-signature` header: one `v1,<sig>` per secret, newest first, space separated. */
export function signatureHeader(secrets: readonly string[], id: string, at: Date, body: string): string {
  return secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(" ");
}

/**
 * What an attempt got: an HTTP answer, or no answer (`error`); `refused`: the egress policy said
 * no (then `error` names no address, like the API's refusal; `detail`, for the worker's log, does).
 */
export type WebhookAttempt =
  | { kind: "answered"; status: number; excerpt: string }
  | { kind: "no-answer"; error: string; refused: boolean; detail?: string };

function refusedByPolicy(error: unknown): boolean {
  for (let cause = error; cause; cause = (cause as { cause?: unknown }).cause) {
    if ((cause as { code?: unknown }).code === EGRESS_REFUSED) return true;
  }
  return false;
}

function describe(error: unknown): string {
  const messages: string[] = [];
  for (let cause = error; cause && messages.length < 3; cause = (cause as { cause?: unknown }).cause) {
    messages.push(cause instanceof Error ? cause.message : String(cause));
  }
  return messages.join(": ").slice(0, 500);
}

async function excerptOf(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < RESPONSE_EXCERPT_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString("utf8");
}

/** Sends `event` to `url` signed by each of `secrets`; never throws. */
export async function sendWebhook(options: {
  url: string;
  secrets: readonly string[];
  event: WebhookEvent;
  settings: Pick<WebhookSettings, "hosts" | "timeoutMs">;
  now?: () => number;
}): Promise<WebhookAttempt> {
  const { url, secrets, event, settings } = options;
  const refusal = urlRefusal(url, settings.hosts);
  if (refusal) return { kind: "no-answer", error: `the URL is refused: ${refusal}`, refused: true };
  const body = JSON.stringify(event);
  const at = new Date((options.now ?? Date.now)());
  try {
    const response = await guardedFetch(allowanceOf(settings.hosts))(url, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(settings.timeoutMs),
      headers: {
        "content-type": "application/json",
        "user-agent": "keel-webhooks",
        "webhook-id": event.id,
        "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
        "webhook-signature": signatureHeader(secrets, event.id, at, body),
      },
      body,
    });
    return { kind: "answered", status: response.status, excerpt: await excerptOf(response) };
  } catch (error) {
    if (refusedByPolicy(error))
      return {
        kind: "no-answer",
        error: `the URL is refused: ${HOST_NOT_PUBLIC}`,
        refused: true,
        detail: describe(error),
      };
    return { kind: "no-answer", error: describe(error), refused: false };
  }
}
