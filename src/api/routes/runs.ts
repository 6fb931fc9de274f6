/** Run routes: messages, abort, approvals and the event stream. */
import { createRoute } from "@hono/zod-openapi";
import { streamSSE } from "hono/streaming";
import { DEFAULT_RUN_SETTINGS, type RunSettings } from "../../contracts/runs";
import { ModelUrlPolicy } from "../../providers/model-urls";
import { deliveryOf, isRefusal, startOrDeliver } from "../../run-client/start-or-deliver";
import type { TenantSettings } from "../../tenants/types";
import { FULL_NETWORK_REFUSAL, fullNetworkAllowed } from "../../tools/network-access";
import { whileAuthorized } from "../auth";
import { resumePointOf, streamRunEvents } from "../event-stream";
import { deliveryId, IDEMPOTENCY_HEADER } from "../idempotency";
import { ProblemError } from "../problems";
import type { RouteContext } from "../route-context";
import { createRouter } from "../router";
import { runSettingsFrom } from "../run-settings";
import {
  AbortBodySchema,
  AbortedSchema,
  AcceptedSchema,
  ApprovalBodySchema,
  ApprovalParamsSchema,
  DeliveredSchema,
  EventsPageSchema,
  EventsQuerySchema,
  type MessageBodyOptions,
  messageBodySchema,
  SessionParamsSchema,
} from "../schemas";
import {
  type RunFields,
  refusalProblem,
  refuseUnusableSecrets,
  startServices,
  withTenantSettings,
} from "../tenant-runs";
import { streamFailureMessage } from "../unavailable";
import {
  idempotencyHeaderParam,
  liveState,
  problemResponses,
  refOf,
  refuseEndedRun,
  requireSession,
  runEnd,
} from "./common";

/** The message route for a deployment: its body schema names the catalog's models. */
const postMessageRoute = (options: MessageBodyOptions) =>
  createRoute({
    method: "post",
    path: "/v1/sessions/{sessionId}/messages",
    summary: "Deliver a message: starts a run when idle, or reaches the live run per `delivery`",
    request: {
      params: SessionParamsSchema,
      body: { required: true, content: { "application/json": { schema: messageBodySchema(options) } } },
    },
    responses: {
      202: { description: "Delivered", content: { "application/json": { schema: DeliveredSchema } } },
      ...problemResponses(403, 409, 413, 415, 422, 429),
    },
    parameters: [idempotencyHeaderParam],
  });

const abortRun = createRoute({
  method: "post",
  path: "/v1/sessions/{sessionId}/abort",
  summary:
    "Abort the session's live run; the answer names the queued messages the run will not read (when the run answers within 2 s)",
  request: {
    params: SessionParamsSchema,
    body: { required: false, content: { "application/json": { schema: AbortBodySchema } } },
  },
  responses: {
    202: { description: "Abort accepted", content: { "application/json": { schema: AbortedSchema } } },
    ...problemResponses(409, 413, 415, 422),
  },
  parameters: [idempotencyHeaderParam],
});

const approve = createRoute({
  method: "post",
  path: "/v1/sessions/{sessionId}/approvals/{toolCallId}",
  summary: "Approve or reject a tool call waiting for approval",
  request: {
    params: ApprovalParamsSchema,
    body: { required: true, content: { "application/json": { schema: ApprovalBodySchema } } },
  },
  responses: {
    202: { description: "Decision delivered", content: { "application/json": { schema: AcceptedSchema } } },
    ...problemResponses(409, 413, 415, 422),
  },
  parameters: [idempotencyHeaderParam],
});

const getEvents = createRoute({
  method: "get",
  path: "/v1/sessions/{sessionId}/events",
  summary:
    "Events of the latest run after a sequence number: a JSON page, or Server-Sent Events with Accept: text/event-stream (numbered events have id = seq, live deltas id = seq:offset; Last-Event-ID resumes; `deltas=false` leaves out the deltas; the stream ends with the run)",
  request: { params: SessionParamsSchema, query: EventsQuerySchema },
  responses: {
    200: {
      description: "Events",
      content: {
        "application/json": { schema: EventsPageSchema },
        "text/event-stream": { schema: { type: "string" } },
      },
    },
    ...problemResponses(),
  },
});

/** What a body with run settings may ask for on this deployment (messages, schedules). */
export function messageBodyOptions(deps: RouteContext): MessageBodyOptions {
  const outbound = deps.config.outbound;
  return {
    modelIds: deps.catalog.list().map((model) => model.id),
    allowDirectoryWorkspaces: deps.config.allowDirectoryWorkspaces,
    modelUrls: new ModelUrlPolicy({
      allowlist: outbound?.modelUrls ?? [],
      configured: outbound?.providerBaseUrls ?? {},
      catalog: () => deps.catalog.list(),
    }),
    ...(outbound ? { gitHosts: outbound.gitHosts } : {}),
    ...(outbound?.mcp ? { mcp: outbound.mcp } : {}),
    fullNetworkOffered: (deps.config.fullNetwork ?? "off") !== "off",
  };
}

/**
 * 403 `network-not-allowed` when a body asks for network "full" for a tenant the deployment does
 * not enable it for: per tenant, so not in the body's schema (the worker refuses such a call too).
 */
export function refuseFullNetwork(
  deps: RouteContext,
  tenantId: string,
  network: unknown,
  what: string,
): void {
  if (network === "full" && !fullNetworkAllowed(deps.config.fullNetwork ?? "off", tenantId))
    throw new ProblemError("network-not-allowed", `This ${what} asks for ${FULL_NETWORK_REFUSAL}`);
}

/**
 * 404 `environment-not-found` unless the body's `environment` is absent, "worker", or one of the
 * tenant's own environments; 400 `environment-required` for a run on the
 * workers when the deployment runs no tools there (KEEL_WORKER_TOOLS=off); 400 `invalid-request`
 * for a workspace source other than `empty` with a runner or launched environment (workers
 * prepare sources; a runner's session starts from what its runners stored). For messages, schedules and Slack starts.
 */
export async function requireEnvironment(
  deps: RouteContext,
  tenantId: string,
  { environment, workspace }: { environment?: string; workspace?: { type: string } },
): Promise<void> {
  if (environment === undefined || environment === "worker") {
    if (deps.config.workerTools === false)
      throw new ProblemError(
        "environment-required",
        "This deployment runs no tools on its workers: name a runner or launched environment (`environment`, keel run --env), or set the tenant's `defaults.environment`.",
        { errors: [{ path: "environment", message: "a runner or launched environment is required" }] },
      );
    return;
  }
  if (!deps.environments || !(await deps.environments.store.get(tenantId, environment)))
    throw new ProblemError(
      "environment-not-found",
      `No environment ${JSON.stringify(environment)}: keel env list shows yours.`,
    );
  if (workspace !== undefined && workspace.type !== "empty")
    throw new ProblemError(
      "invalid-request",
      `A workspace source is prepared on the workers, and the tools of environment ${JSON.stringify(environment)} run on its runners: start the runner in the folder (keel runner --workspace DIR), or run on the workers.`,
      { errors: [{ path: "workspace", message: "not with a runner or launched environment" }] },
    );
}

/**
 * A body that starts runs (a message, a schedule) under its tenant's settings: the tenant's
 * defaults under the body's own fields and every model checked (`withTenantSettings`), network
 * "full" refused where the tenant does not have it (`refuseFullNetwork`, naming the body as
 * `what`), its environment checked (`requireEnvironment`), and the run settings it asks for over
 * the deployment's defaults. The tenant's settings come back too: their quotas admit a start.
 * A caller checking many bodies of one request passes the tenant's settings it read once.
 */
export async function tenantRunRequest<B extends RunFields>(
  deps: RouteContext,
  tenantId: string,
  request: B,
  options: MessageBodyOptions,
  what: string,
  readSettings?: TenantSettings,
): Promise<{ body: B; settings: RunSettings; tenantSettings: TenantSettings }> {
  const tenantSettings = readSettings ?? (await deps.tenants?.store.getSettings(tenantId)) ?? {};
  const body = withTenantSettings(tenantSettings, request, options, deps.config.defaultModel);
  refuseFullNetwork(deps, tenantId, body.network, what);
  await refuseUnusableSecrets(deps, tenantId, body, what);
  await requireEnvironment(deps, tenantId, body);
  const settings = runSettingsFrom(body, { ...DEFAULT_RUN_SETTINGS, model: deps.config.defaultModel });
  return { body, settings, tenantSettings };
}

export function runRoutes(deps: RouteContext) {
  const bodyOptions = messageBodyOptions(deps);
  const postMessage = postMessageRoute(bodyOptions);
  return createRouter()
    .openapi(postMessage, async (c) => {
      const { sessionId } = c.req.valid("param");
      const { body, settings, tenantSettings } = await tenantRunRequest(
        deps,
        c.get("tenantId"),
        c.req.valid("json"),
        bodyOptions,
        "message",
      );
      const ref = refOf(c, sessionId);
      const idempotencyKey = c.req.header(IDEMPOTENCY_HEADER);
      const outcome = await startOrDeliver(startServices(deps, await deps.runs()), {
        ref,
        request: { text: body.text, mode: body.delivery },
        settings,
        quotas: tenantSettings.quotas,
        ...(idempotencyKey !== undefined
          ? { deliveryId: deliveryId(c.get("tenantId"), idempotencyKey) }
          : {}),
      });
      if (isRefusal(outcome)) throw refusalProblem(outcome);
      return c.json(
        {
          sessionId,
          runId: outcome.runId,
          workflowId: outcome.workflowId,
          delivery: deliveryOf(outcome),
          ...("queueLength" in outcome ? { queueLength: outcome.queueLength } : {}),
          ...("handedOver" in outcome && outcome.handedOver ? { handedOver: true as const } : {}),
        },
        202,
      );
    })
    .openapi(abortRun, async (c) => {
      const { sessionId } = c.req.valid("param");
      const { reason } = c.req.valid("json");
      const ref = refOf(c, sessionId);
      const runs = await deps.runs();
      // Temporal's description, the abort signal, then the run's answer. A run whose workers are
      // all down does not answer in time: the abort is recorded all the same (it stops when a
      // worker picks it up) and the answer says it was not answered. The abort needs no id: a run
      // takes the first abort's reason, and a repeated abort gets the same answer.
      const outcome = await runs.abort(ref, { reason: reason ?? "aborted through the API" });
      switch (outcome.kind) {
        case "answered":
          return c.json(
            {
              accepted: true as const,
              runId: outcome.runId,
              answered: true,
              reason: outcome.reason,
              unprocessed: outcome.unprocessed,
            },
            202,
          );
        case "signalled":
          return c.json({ accepted: true as const, runId: outcome.runId, answered: false }, 202);
      }
      return refuseEndedRun(deps, ref, outcome);
    })
    .openapi(approve, async (c) => {
      const { sessionId, toolCallId } = c.req.valid("param");
      const body = c.req.valid("json");
      const ref = refOf(c, sessionId);
      const { run } = await requireSession(deps, ref);
      const waiting = liveState(run)?.pendingToolCalls.find(
        (call) => call.toolCallId === toolCallId && call.state === "awaiting_approval",
      );
      if (!waiting)
        throw new ProblemError("no-pending-approval", `Tool call ${toolCallId} is not waiting for approval.`);
      const runs = await deps.runs();
      const delivered = await runs.approve(ref, {
        toolCallId,
        decision: body.decision,
        ...(body.args !== undefined ? { arguments: body.args } : {}),
        ...(body.reason !== undefined ? { reason: body.reason } : {}),
      });
      if (delivered !== "sent")
        throw new ProblemError("no-active-run", "The session's run ended before the decision arrived.");
      return c.json({ accepted: true as const }, 202);
    })
    .openapi(getEvents, async (c) => {
      const { sessionId } = c.req.valid("param");
      const query = c.req.valid("query");
      const ref = refOf(c, sessionId);
      const { run } = await requireSession(deps, ref);
      const runs = await deps.runs();
      const wantsStream = (c.req.header("accept") ?? "").includes("text/event-stream");
      if (wantsStream) {
        const resume = resumePointOf(c.req.header("last-event-id")) ?? { seq: query.after ?? 0 };
        // A run started after the one the client followed numbers its events from 1 again.
        const live = liveState(run);
        const from = live && live.lastEventSeq < resume.seq ? { seq: 0 } : resume;
        const authorized = whileAuthorized(c.get("stillAuthorized"));
        return streamSSE(
          c,
          (stream) =>
            streamRunEvents(stream, runs, ref, from, {
              deltas: query.deltas !== "false",
              children: query.children === "true",
              maxSeconds: deps.config.sseMaxSeconds,
              runOpen: live !== undefined,
              stop: authorized.signal,
              onFallback: (error) =>
                deps.log({
                  level: "warn",
                  msg: "run stream unreadable; polling the run's events instead",
                  path: c.req.path,
                  error: String(error),
                }),
            }).finally(authorized.dispose),
          async (error, stream) => {
            deps.onFailure?.(error);
            deps.log({ level: "warn", msg: "event stream failed", path: c.req.path, error: String(error) });
            await stream.writeSSE({
              event: "error",
              data: JSON.stringify({
                // What failed, as a client may be told it: it shows it as it is (and reconnects).
                message: streamFailureMessage(error),
              }),
            });
          },
        ) as unknown as Response;
      }
      const after = query.after ?? 0;
      const events = await runs.events(ref, after);
      const ended = runEnd(run);
      return c.json(
        {
          events,
          lastSeq: events.at(-1)?.seq ?? after,
          runEnded: !liveState(run),
          ...(ended ? { run: ended } : {}),
        },
        200,
      );
    });
}
