/**
 * Errors as RFC 9457 problem details (`application/problem+json`). Every error the API answers
 * has a stable `type` URI `https://keel.dev/problems/<slug>`; clients branch on the slug, never on
 * `title` or `detail`.
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";

const PROBLEM_TYPE_BASE = "https://keel.dev/problems/";
export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** Every problem the API can answer: slug → HTTP status and a fixed title. */
const PROBLEMS = {
  "invalid-request": { status: 400, title: "The request is invalid" },
  "malformed-body": { status: 400, title: "The request body cannot be read" },
  "invalid-message": { status: 400, title: "The run refused the message as invalid" },
  "invalid-session-file": { status: 400, title: "The session file cannot be imported" },
  unauthorized: { status: 401, title: "Missing or invalid credentials" },
  "invalid-signature": { status: 401, title: "The request signature is missing, stale or wrong" },
  "tenant-not-served": { status: 403, title: "This deployment serves another tenant only" },
  "environment-required": { status: 400, title: "A runner or launched environment is required" },
  "network-not-allowed": { status: 403, title: "This tenant may not use the network it asked for" },
  "model-not-allowed": { status: 403, title: "This tenant's settings do not allow the model it asked for" },
  "tenant-not-found": { status: 404, title: "No such tenant" },
  "key-not-found": { status: 404, title: "No such API key" },
  "not-found": { status: 404, title: "Not found" },
  "session-not-found": { status: 404, title: "No such session" },
  "entry-not-found": { status: 404, title: "No such entry in the session" },
  "schedule-not-found": { status: 404, title: "No such schedule" },
  "eval-not-found": { status: 404, title: "No such eval" },
  "environment-not-found": { status: 404, title: "No such environment" },
  "call-not-found": { status: 404, title: "No such call held by this runner" },
  "secret-not-found": { status: 404, title: "No such secret" },
  "webhook-not-found": { status: 404, title: "No such webhook endpoint" },
  "method-not-allowed": { status: 405, title: "Method not allowed" },
  "run-busy": { status: 409, title: "The session's run is busy" },
  "run-ended": { status: 409, title: "The session's run ended while the message was delivered" },
  "no-active-run": { status: 409, title: "The session has no active run" },
  "eval-ended": { status: 409, title: "The eval has ended" },
  "no-pending-approval": { status: 409, title: "No approval is pending for this tool call" },
  "session-exists": { status: 409, title: "The session already exists" },
  "schedule-exists": { status: 409, title: "The schedule already exists" },
  "environment-exists": { status: 409, title: "The environment already exists" },
  "tenant-exists": { status: 409, title: "The tenant already exists" },
  "slack-team-taken": { status: 409, title: "The Slack team is mapped to another tenant" },
  "idempotency-key-in-use": {
    status: 409,
    title: "A request with this Idempotency-Key is still being processed",
  },
  "workspace-changed": {
    status: 412,
    title: "The session's workspace was stored by another runner since this one restored it",
  },
  "payload-too-large": { status: 413, title: "The request body is too large" },
  "request-too-large": { status: 431, title: "The request line and headers are too large" },
  "malformed-request": { status: 400, title: "The HTTP request cannot be parsed" },
  "unsupported-media-type": { status: 415, title: "Unsupported content type" },
  "invalid-schedule": { status: 422, title: "The schedule cannot be made as asked" },
  "invalid-range": { status: 422, title: "The range asked for is not one that can be read" },
  "invalid-eval": { status: 422, title: "The eval cannot be run as asked" },
  "no-replay-message": { status: 422, title: "The replay has no message to send" },
  "unusable-secrets": { status: 422, title: "The run names tenant secrets it cannot use" },
  "webhook-url-refused": { status: 422, title: "The webhook endpoint's URL is refused" },
  "idempotency-key-reused": {
    status: 422,
    title: "The Idempotency-Key was used with a different request",
  },
  "queue-full": { status: 429, title: "The session's message queue is full" },
  "quota-exceeded": { status: 429, title: "A quota of the tenant is reached" },
  "too-many-claims": { status: 429, title: "The runner token has too many claims waiting" },
  "internal-error": { status: 500, title: "Internal error" },
  "not-implemented": { status: 501, title: "Not implemented" },
  "temporal-unavailable": { status: 503, title: "The workflow service is unavailable" },
  "storage-unavailable": { status: 503, title: "The session store is unavailable" },
  "run-not-answering": { status: 503, title: "The session's run does not answer" },
  "vault-not-configured": { status: 503, title: "Tenant secrets are not configured on this deployment" },
} as const satisfies Record<string, { status: ContentfulStatusCode; title: string }>;

export type ProblemSlug = keyof typeof PROBLEMS;

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail?: string;
  [extension: string]: unknown;
}

/** A failure a handler raises; the app's error handler turns it into its problem response. */
export class ProblemError extends Error {
  constructor(
    readonly slug: ProblemSlug,
    readonly detail?: string,
    /** Extension members added to the document (e.g. `errors`, `retryAfterSeconds`). */
    readonly extensions: Record<string, unknown> = {},
    /** Extra response headers (e.g. `WWW-Authenticate`, `Retry-After`). */
    readonly headers: Record<string, string> = {},
  ) {
    super(detail ?? PROBLEMS[slug].title);
    this.name = "ProblemError";
  }
}

export function problemDocument(
  slug: ProblemSlug,
  detail?: string,
  extensions: Record<string, unknown> = {},
): ProblemDocument {
  const { status, title } = PROBLEMS[slug];
  const document: ProblemDocument = { ...extensions, type: `${PROBLEM_TYPE_BASE}${slug}`, title, status };
  if (detail !== undefined) document.detail = detail;
  return document;
}

/** The problem response itself. */
export function problemResponse(
  slug: ProblemSlug,
  detail?: string,
  extensions: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Response {
  const document = problemDocument(slug, detail, extensions);
  return new Response(JSON.stringify(document), {
    status: document.status,
    headers: { ...headers, "content-type": PROBLEM_CONTENT_TYPE },
  });
}
