/** Helpers shared by the route modules: session refs, existence checks, OpenAPI fragments. */
import type { Context } from "hono";
import { RUN_END_STATUSES, type RunState, type SessionRef } from "../../contracts/runs";
import type { SessionHeader } from "../../core/session-types";
import type { LatestRun, MaintenanceTask } from "../../run-client/session-runs";
import { SessionNotFoundError } from "../../store/session-errors";
import type { TenantVariables } from "../auth";
import { IDEMPOTENCY_KEY_PATTERN, MAX_IDEMPOTENCY_KEY_LENGTH } from "../idempotency";
import { ProblemError } from "../problems";
import type { RouteContext } from "../route-context";
import { ProblemSchema } from "../schemas";
import { readTombstone } from "../session-tombstones";

export function refOf(c: Context<{ Variables: TenantVariables }>, sessionId: string): SessionRef {
  return { tenantId: c.get("tenantId"), sessionId };
}

export interface SessionPresence {
  header?: SessionHeader;
  /** The session's newest agent run. */
  run?: LatestRun;
  /** The maintenance task (branch, compact, label) that ran after it, when one did. */
  maintenance?: MaintenanceTask;
}

/**
 * What is known of a session: its stored header and its latest run. Throws session-not-found
 * when neither exists — also for another tenant's session, since every lookup is made under the
 * caller's own tenant — and for a deleted session whose runs Temporal still holds (see
 * session-tombstones.ts): only a run started after the deletion and still live makes it exist.
 */
export async function requireSession(deps: RouteContext, ref: SessionRef): Promise<SessionPresence> {
  const runs = await deps.runs();
  const [header, { run, maintenance }] = await Promise.all([
    deps.store.getHeader(ref).catch((error: unknown) => {
      if (error instanceof SessionNotFoundError) return undefined;
      throw error;
    }),
    runs.executions(ref),
  ]);
  if (!header && !run && !maintenance) throw new ProblemError("session-not-found");
  if (!header && liveState(run) === undefined && (await readTombstone(deps.objects, ref))) {
    throw new ProblemError("session-not-found");
  }
  return { header, run, maintenance };
}

/**
 * The session's stored header; session-not-found when it has none. For routes that already know
 * the session has no workflow, so the header alone decides whether it exists.
 */
async function requireStoredSession(deps: RouteContext, ref: SessionRef): Promise<SessionHeader> {
  try {
    return await deps.store.getHeader(ref);
  } catch (error) {
    if (error instanceof SessionNotFoundError) throw new ProblemError("session-not-found");
    throw error;
  }
}

/**
 * The problem of a signal (an abort, a budget change) that found no live run to take it: 404
 * `session-not-found` when the session does not exist (`no-run`: no stored header; `not-live`: as
 * `requireSession` decides, so a deleted session's closed run is no session's to signal), else 409
 * `no-active-run`. Always throws.
 */
export async function refuseEndedRun(
  deps: RouteContext,
  ref: SessionRef,
  outcome: { kind: "no-run" | "not-live" },
): Promise<never> {
  if (outcome.kind === "no-run") await requireStoredSession(deps, ref);
  else await requireSession(deps, ref);
  throw new ProblemError("no-active-run", "The session's latest run has already ended.");
}

const TERMINAL_RUN_STATUSES: ReadonlySet<RunState["status"]> = new Set(RUN_END_STATUSES);

/** How the run ended (its own status, or how its workflow closed); undefined while it is live. */
export function runEnd(
  run: LatestRun | undefined,
): { status: string; error?: { type: string; message: string } } | undefined {
  if (run?.failure) return { status: run.failure.status, error: run.failure.error };
  if (run?.result && !run.state) return { status: run.result.status };
  const status = run?.state?.status;
  if (status === undefined || !TERMINAL_RUN_STATUSES.has(status)) return undefined;
  return run?.state?.error ? { status, error: run.state.error } : { status };
}

/** The state of a run that is still going: neither ended by itself nor closed by failure. */
export function liveState(run: LatestRun | undefined): RunState | undefined {
  const state = run?.state;
  if (run?.failure || !state || TERMINAL_RUN_STATUSES.has(state.status)) return undefined;
  return state;
}

const problemContent = { "application/problem+json": { schema: ProblemSchema } };

/** OpenAPI `responses` entries for the problems a route can answer. */
export function problemResponses(...statuses: number[]) {
  const descriptions: Record<number, string> = {
    400: "Invalid request",
    401: "Missing or invalid API key",
    403: 'Not for this tenant: the deployment serves another tenant only (KEEL_SINGLE_TENANT), or the message asks for network "full", which the deployment offers to other tenants only',
    404: "No such session (or not the caller's)",
    409: "Conflict with the run's state",
    413: "Body too large",
    415: "Unsupported content type",
    422: "Idempotency-Key reused with a different request",
    429: "Queue full",
    431: "Request line and headers too large (the local server reads 256 KiB; API Gateway less)",
    501: "Not implemented",
    503: "Temporal or the session store unavailable (Retry-After)",
  };
  return Object.fromEntries(
    [...new Set([400, 401, 403, 404, 431, 503, ...statuses])].map((status) => [
      status,
      { description: descriptions[status] ?? "Problem", content: problemContent },
    ]),
  );
}

export const idempotencyHeaderParam = {
  name: "Idempotency-Key",
  in: "header" as const,
  required: false,
  schema: {
    type: "string" as const,
    minLength: 1,
    maxLength: MAX_IDEMPOTENCY_KEY_LENGTH,
    pattern: IDEMPOTENCY_KEY_PATTERN,
  },
  description: "A retried POST with the same key returns the first response and does nothing again",
};
