/**
 * `POST /v1/sessions/{sessionId}/replay`: forks of a session at an entry (as the fork route makes
 * them), each started with a message (as `POST …/messages` starts a run), to compare how runs go
 * from the same point (docs/api.md, docs/evals.md).
 */
import { createRoute, type z } from "@hono/zod-openapi";
import type { SessionRef } from "../../contracts/runs";
import type { SessionEntry, SessionHeader } from "../../core/session-types";
import { isRefusal, startOrDeliver } from "../../run-client/start-or-deliver";
import { sha256Hex } from "../../store/digest";
import { SessionExistsError } from "../../store/session-errors";
import { deliveryId, IDEMPOTENCY_HEADER } from "../idempotency";
import { ProblemError } from "../problems";
import { planReplay } from "../replay-plan";
import type { RouteContext } from "../route-context";
import { createRouter } from "../router";
import { ReplayResultSchema, replayBodySchema, SessionParamsSchema } from "../schemas";
import { startServices } from "../tenant-runs";
import { idempotencyHeaderParam, problemResponses, refOf, requireSession } from "./common";
import { forkAt, pathOrRefuse, sessionIndexOf } from "./new-session";
import { messageBodyOptions, tenantRunRequest } from "./runs";

type ReplayRun = z.infer<typeof ReplayResultSchema>["runs"][number];

/**
 * The id of the `index`-th fork of a replay sent with `idempotencyKey`: the same for a retry, so a
 * retry that runs again (its record lost) finds the forks the first request made instead of
 * making new ones, and its starts land on their first deliveries.
 */
function replaySessionId(ref: SessionRef, idempotencyKey: string, index: number): string {
  return `replay-${sha256Hex(`${ref.tenantId}\n${ref.sessionId}\n${idempotencyKey}\n${index}`).slice(0, 40)}`;
}

export function replayRoutes(deps: RouteContext) {
  const bodyOptions = messageBodyOptions(deps);
  const replay = createRoute({
    method: "post",
    path: "/v1/sessions/{sessionId}/replay",
    summary:
      "Fork the session at an entry `times` times and start a run on each fork with the same message (a user message entry: forks at its parent, sent its text again)",
    request: {
      params: SessionParamsSchema,
      body: { required: true, content: { "application/json": { schema: replayBodySchema(bodyOptions) } } },
    },
    responses: {
      201: {
        description: "The forks and how their runs started",
        content: { "application/json": { schema: ReplayResultSchema } },
      },
      ...problemResponses(403, 409, 413, 415, 422),
    },
    parameters: [idempotencyHeaderParam],
  });

  return createRouter().openapi(replay, async (c) => {
    const { sessionId } = c.req.valid("param");
    const { fromEntryId, times, message, settings: asked } = c.req.valid("json");
    const tenantId = c.get("tenantId");
    const ref = refOf(c, sessionId);
    const { header } = await requireSession(deps, ref);
    const index = await sessionIndexOf(deps, ref);
    const plan = planReplay(index, fromEntryId, message);
    const path = plan.forkAt === null ? [] : pathOrRefuse(index, plan.forkAt);
    // The settings as a message's: the tenant's defaults under them, models and secrets checked.
    const { settings, tenantSettings } = await tenantRunRequest(
      deps,
      tenantId,
      asked ?? {},
      bodyOptions,
      "replay",
    );
    const idempotencyKey = c.req.header(IDEMPOTENCY_HEADER);
    const services = startServices(deps, await deps.runs());
    const runs: ReplayRun[] = [];
    for (let i = 0; i < times; i++) {
      const forkId =
        idempotencyKey === undefined
          ? (await forkAt(deps, ref, header, path)).sessionId
          : await keyedFork(deps, ref, header, path, replaySessionId(ref, idempotencyKey, i));
      const outcome = await startOrDeliver(services, {
        ref: { tenantId, sessionId: forkId },
        request: { text: plan.question, mode: "auto" },
        settings,
        quotas: tenantSettings.quotas,
        ...(idempotencyKey !== undefined
          ? { deliveryId: deliveryId(tenantId, `${idempotencyKey}\n${i}`) }
          : {}),
      });
      if (isRefusal(outcome)) {
        // Later starts would meet the same quota or refusal: no more forks are made.
        runs.push({
          sessionId: forkId,
          outcome: outcome.type === "quota-exceeded" ? "quota-exceeded" : "refused",
          detail: outcome.message,
        });
        break;
      }
      runs.push({
        sessionId: forkId,
        outcome: outcome.type === "delivered" ? outcome.delivery : outcome.type,
        runId: outcome.runId,
        workflowId: outcome.workflowId,
      });
    }
    return c.json({ origin: { sessionId, entryId: fromEntryId }, question: plan.question, runs }, 201);
  });
}

/**
 * The fork named `forkId`, made now or finished after an earlier request with the same key (a
 * session of that id that is not a fork of `ref` is refused: `session-exists`).
 */
async function keyedFork(
  deps: RouteContext,
  ref: SessionRef,
  header: SessionHeader | undefined,
  path: SessionEntry[],
  forkId: string,
): Promise<string> {
  try {
    await forkAt(deps, ref, header, path, forkId);
  } catch (error) {
    if (!(error instanceof SessionExistsError)) throw error;
    throw new ProblemError(
      "session-exists",
      `Session ${forkId} exists and is not a fork of ${ref.sessionId}.`,
    );
  }
  return forkId;
}
